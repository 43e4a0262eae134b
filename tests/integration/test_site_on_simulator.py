"""A whole self-managed cluster through site.yml on the workload-cluster simulator, as `make demo` runs it.

The controller reaches the API server at the load balancer's own DNS name through the simulator's HTTP CONNECT proxy,
given once for the inventory (``capa_kubernetes_api``, the roles' controller-wide setting). The control plane is
initialized first (one machine), the addons follow, then the other control-plane machines join with the CNI already
there - so every Node is Ready when the run ends and the status says so; the second run changes nothing, sends no
mutating AWS request and writes nothing to the Kubernetes API.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from cluster_helpers import write_inventory

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
CONTROLLER = "clusterapi.aws:controller"
NAME = "simc"


def test_site_yml_on_the_simulator_joins_every_node_and_a_second_run_writes_nothing(
    aws, kubesim, run_playbook, tmp_path
):
    kubesim.register(NAME)
    spec = {
        "name": NAME,
        "region": "us-east-1",
        "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "single"},
        "control_plane": {"replicas": 3},
        "addons": {"enabled": True},
        "machine_deployments": [{"name": "md-0", "replicas": 1}],
    }
    inventory = write_inventory(
        tmp_path, spec, extra_vars={"capa_kubernetes_api": {"proxy": kubesim.proxy, "mode": "required"}}
    )
    first = run_playbook(SITE, inventory)
    assert first.rc == 0, first.describe()
    status = json.loads((tmp_path / "out" / NAME / "status.json").read_text())
    control_plane = [m["kubernetes"] for m in status["machines"]["control-plane"]]
    workers = [m["kubernetes"] for m in status["machines"]["md-0"]]
    assert [(k["node_ready"], k["etcd_member"]) for k in control_plane] == [("True", "voter")] * 3, control_plane
    assert [k["node_ready"] for k in workers] == ["True"], workers
    assert "control-plane: 3 machines, 3 Nodes Ready, 3 etcd voters" in first.stdout
    assert "md-0: 1 machines, 1 Nodes Ready" in first.stdout

    # KubeadmControlPlane's and a ClusterResourceSet's order: the first machine, the CNI, then the other machines.
    timeline = kubesim.journal(cluster=NAME)
    cni = next(
        e["time"]
        for e in timeline
        if e.get("user") == CONTROLLER and e.get("method") == "PATCH" and e.get("path", "").endswith("/calico-node")
    )
    launches = [e["time"] for e in timeline if e.get("source") == "moto" and e.get("operation") == "RunInstances"]
    assert len([t for t in launches if t < cni]) == 1 and len(launches) == 4, (launches, cni)
    tunnels = {e["target"] for e in timeline if e.get("source") == "proxy" and e.get("status") == 200}
    assert tunnels and all(t.endswith(".elb.amazonaws.com:6443") for t in tunnels), tunnels

    aws.reset_requests()
    since = time.time()
    second = run_playbook(SITE, inventory)
    assert second.rc == 0 and second.changed == 0, second.describe()
    assert aws.mutating_requests() == []
    asked = [
        e
        for e in kubesim.journal(cluster=NAME, source="apiserver", moto=False, since=since)
        if e.get("user") == CONTROLLER
    ]
    writes = [e for e in asked if e.get("method") != "GET"]
    assert asked and writes == [], writes
    assert len([e for e in asked if e.get("path") == "/api/v1/nodes"]) == 2  # one Node list per machine group
    assert kubesim.state()["clusters"][NAME]["quorum"]["failed_windows"] == []
