"""Machine health from the Node (Cluster API's MachineHealthCheck) for a kubeadm machine deployment on the
workload-cluster simulator, through capa_instance as the roles run it.

EC2 says every machine here is fine (running, status checks ok); only the cluster knows better:

* a worker whose kubelet stops (the simulator's control API) goes ``Ready=Unknown`` after the node monitor grace
  period; once that has held for the group's ``unhealthy_node_conditions`` timeout, the next run replaces it -
  removed without a drain (an unreachable Node cannot finish evictions: Cluster API skips it), its Node deleted,
  a new worker joined and Ready;
* with two of three workers unhealthy and ``max_unhealthy: 1``, nothing is replaced and the run warns why;
* a machine whose node never registers (knob ``never_boot``) is replaced once ``node_startup_timeout`` has passed
  since its launch, by a machine that joins.

The decisions themselves (timeouts, the short-circuit's count, ``unhealthy_range``, a control plane's quorum rule)
are unit-tested in tests/unit/plugins/module_utils/machines/test_node_health.py and test_self_healing.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from test_machine_lifecycle import apply_addons, calls, control_plane, run

UNKNOWN_FOR_2S = [{"type": "Ready", "status": "Unknown", "timeout": 2}]


def ready_status(sim: Any, node: str) -> str:
    found = client.CoreV1Api(sim.api_client()).read_node(node)
    return next(c.status for c in found.status.conditions if c.type == "Ready")


def test_unhealthy_nodes_are_replaced_within_max_unhealthy_and_a_node_that_never_registers_too(
    aws, kubesim, run_module, tmp_path
):
    sim, cp = control_plane(aws, kubesim, run_module, tmp_path, "mhc")
    run(run_module, cp)
    apply_addons(run_module, sim, "mhc")
    workers = {**cp, "name": "md-0", "role": "node", "replicas": 3, "unhealthy_node_conditions": UNKNOWN_FOR_2S}
    made = run(run_module, workers)
    nodes = {m["id"]: m["kubernetes"]["node"] for m in made["machines"]}
    assert [m["kubernetes"]["node_ready"] for m in made["machines"]] == ["True"] * 3, made["machines"]

    # Two kubelets stop; max_unhealthy 1: both are unhealthy, neither is replaced, and the run says why.
    sick = sorted(nodes)[:2]
    for machine in sick:
        sim.kubelet(nodes[machine], running=False)
    kubesim.wait(lambda: all(ready_status(sim, nodes[m]) == "Unknown" for m in sick), 30, "Ready=Unknown")
    time.sleep(2.5)  # the condition's timeout
    held = run(run_module, workers, max_unhealthy=1)
    assert held["changed"] is False and held["plan"] == []
    assert held["health"]["allowed"] is False and sorted(u["id"] for u in held["health"]["unhealthy"]) == sick
    assert all("Ready=Unknown for" in u["reason"] for u in held["health"]["unhealthy"]), held["health"]
    assert "more than max_unhealthy 1 (1): remediation is held back" in held["health"]["skipped_reason"]
    assert any("more than max_unhealthy 1" in w for w in held.get("warnings", [])), held.get("warnings")

    # One kubelet comes back; the other machine is now the only unhealthy one, within max_unhealthy 1: replaced.
    sim.kubelet(nodes[sick[0]], running=True)
    kubesim.wait(lambda: ready_status(sim, nodes[sick[0]]) == "True", 30, "Ready again")
    healed = run(run_module, workers, max_unhealthy=1)
    name = next(m["name"] for m in made["machines"] if m["id"] == sick[1])
    assert healed["health"]["remediated"] == [name]
    gone = [p for p in healed["plan"] if p["resource"] in (name, f"node {nodes[sick[1]]}")]
    # The Node goes after its instance: deleted by the run, or - when the cloud controller's node lifecycle got there
    # first, as on AWS - found gone (a NotFound answer, which is no change and leaves the plan).
    assert [p["call"] for p in gone if p["call"] in ("ec2:TerminateInstances", "k8s:DeleteNode")] in (
        ["ec2:TerminateInstances", "k8s:DeleteNode"],
        ["ec2:TerminateInstances"],
    ), healed["plan"]
    with pytest.raises(ApiException) as missing:
        client.CoreV1Api(sim.api_client()).read_node(nodes[sick[1]])
    assert missing.value.status == 404
    assert "k8s:Cordon" not in calls(healed) and "k8s:Evict" not in calls(healed)  # unreachable: no drain
    assert any("is unreachable: not drained" in w for w in healed.get("warnings", [])), healed.get("warnings")
    live = {m["id"]: m for m in healed["machines"] if m["state"] == "running"}
    assert sick[1] not in live and len(live) == 3
    assert all(m["kubernetes"]["node_ready"] == "True" for m in live.values()), healed["machines"]

    # A fourth machine whose node never registers is replaced once node_startup_timeout has passed.
    kubesim.knob(name_prefix="mhc-md-0", never_boot=True)
    launched = run(run_module, workers, replicas=4, wait=False)
    stuck = sorted(set(m["id"] for m in launched["machines"] if m["state"] in ("pending", "running")) - set(live))
    assert len(stuck) == 1, launched["machines"]

    def never_booted() -> bool:
        events = kubesim.journal(cluster="mhc", source="node", moto=False)
        return any(e.get("event") == "never-boots" and e.get("instance") == stuck[0] for e in events)

    kubesim.wait(never_booted, 30, "the simulator to leave the new machine unbooted")  # before the knob goes
    kubesim.call("DELETE", "/knobs")
    time.sleep(3)
    replaced = run(run_module, workers, replicas=4, node_startup_timeout=3)
    reasons = {u["id"]: u["reason"] for u in replaced["health"]["unhealthy"]}
    assert list(reasons) == stuck and "after launch (node_startup_timeout 3s)" in reasons[stuck[0]], reasons
    running = [m for m in replaced["machines"] if m["state"] == "running"]
    assert stuck[0] not in {m["id"] for m in running} and len(running) == 4
    assert all(m["kubernetes"]["node_ready"] == "True" for m in running), replaced["machines"]
