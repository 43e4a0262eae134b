"""Kubernetes-aware machine groups (capa_instance) on the workload-cluster simulator with real etcd 3.4.

The control plane goes 1 -> 3 -> 5 -> 3 replicas and is then replaced machine by machine (an instance type change)
without etcd ever losing quorum (the simulator's quorum monitor writes through etcd every 200 ms), each removal in
Cluster API's order; workers roll under a PodDisruptionBudget; the refusals (an unhealthy member, no API) change
nothing. Every request goes the way it goes against a real cluster: the API server with a certificate minted from
the cluster CA, etcd through ``pods/portforward`` with one minted from the etcd CA.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import kubesim_helpers as h
from kubernetes import client

MODULE = "clusterapi.aws.capa_instance"
CONTROLLER = "clusterapi.aws:controller"
K8S_WRITES = ("k8s:", "etcd:")


def control_plane(aws, kubesim, run_module, tmp_path, name: str) -> tuple[Any, dict[str, Any]]:
    sim = kubesim.register(name)
    subnet_id = h.subnet(aws)
    stored = run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": name,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": "127.0.0.1", "port": sim.port},
            "output_dir": str(tmp_path / "out"),
        },
    )
    assert not stored.get("failed"), stored
    group = {
        "cluster_name": name,
        "name": "control-plane",
        "role": "control-plane",
        "replicas": 1,
        "kubernetes_version": h.VERSION,
        "instance_type": "t3.large",
        "subnets": [{"id": subnet_id, "availability_zone": "us-east-1a", "is_public": False}],
        "bootstrap": {"type": "kubeadm", "endpoint_host": "127.0.0.1", "endpoint_port": sim.port},
        # The controller reaches this API: wait for it (a new cluster's API starts with kubeadm init).
        "kubernetes_api": {"mode": "required"},
        "wait_timeout": 240,
    }
    return sim, group


def apply_addons(run_module, sim, name: str) -> None:
    """The CNI and cloud controller manager (capa_addons): worker Nodes become Ready only with a CNI."""
    addons = run_module(
        "clusterapi.aws.capa_addons",
        {
            "cluster_name": name,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": "127.0.0.1", "port": sim.port},
            "kubernetes_api": {"mode": "required"},
        },
    )
    assert not addons.get("failed"), addons.get("msg")


def voters(sim) -> list[str]:
    return sorted(m["name"] for m in sim.etcd().get("members", []) if m["started"] and not m["is_learner"])


def run(run_module, group: dict[str, Any], **changes: Any) -> dict[str, Any]:
    result = run_module(MODULE, {**group, **changes})
    assert not result.get("failed"), result.get("msg")
    return result


def calls(result: dict[str, Any]) -> list[str]:
    return [p["call"] for p in result["plan"]]


def removals_in_order(result: dict[str, Any]) -> list[list[str]]:
    """The plan cut into one list per removed machine, from its first Kubernetes call to its DeleteNode."""
    out: list[list[str]] = []
    current: list[str] = []
    for entry in result["plan"]:
        call = entry["call"]
        if not call.startswith(K8S_WRITES) and call != "ec2:TerminateInstances" or call == "k8s:Apply":
            continue  # launches, bootstrap entries, load balancers, kubeadm-config
        if call.endswith("Secret"):
            continue  # the join tokens of the machines launched (and deleted once they joined)
        current.append(call)
        if call == "k8s:DeleteNode":
            out.append(current)
            current = []
    return out


class ReadyWorkers:
    """Counts the Ready worker Nodes every 0.1 s in the background while the block runs; ``fewest`` seen."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.fewest = 10**6
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            nodes = self.core.list_node().items
            workers = [n for n in nodes if "node-role.kubernetes.io/control-plane" not in (n.metadata.labels or {})]
            ready = [
                n for n in workers if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
            ]
            self.fewest = min(self.fewest, len(ready))
            self.samples += 1
            self._stop.wait(0.1)

    def __enter__(self) -> ReadyWorkers:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def assert_kcp_order(sequence: list[str]) -> None:
    """Leadership (if it led) -> cordon -> evictions -> member removal -> terminate -> node deletion."""
    significant = [c for c in sequence if c != "etcd:MoveLeader"]
    assert significant[0] == "k8s:PatchNode", sequence
    assert significant.index("etcd:MemberRemove") < significant.index("ec2:TerminateInstances"), sequence
    assert significant[-1] == "k8s:DeleteNode", sequence
    if "etcd:MoveLeader" in sequence:
        assert sequence.index("etcd:MoveLeader") < sequence.index("etcd:MemberRemove"), sequence


def test_control_plane_1_3_5_3_and_a_replacement_keep_quorum(aws, kubesim, run_module, tmp_path):
    sim, group = control_plane(aws, kubesim, run_module, tmp_path, "lcp")

    first = run(run_module, group)
    (machine,) = first["machines"]
    assert machine["kubernetes"]["available"] and machine["kubernetes"]["etcd_member"] == "voter", machine
    assert first["kubernetes_api"] == {"asked": True, "reachable": True, "reason": None, "signal": "NodeReady"}
    assert len(voters(sim)) == 1

    grown = run(run_module, group, replicas=3)
    assert len(voters(sim)) == 3
    assert all(m["kubernetes"]["available"] for m in grown["machines"]), grown["machines"]
    # One machine per step: each joined (a promoted voter) before the next was launched.
    launches = [e for e in kubesim.journal(cluster="lcp") if e.get("operation") == "RunInstances"]
    assert len(launches) == 3

    again = run(run_module, group, replicas=3)
    assert not again["changed"] and again["plan"] == []
    assert again["api_calls"].get("k8s:ListNodes") == 1, again["api_calls"]

    run(run_module, group, replicas=5)
    assert len(voters(sim)) == 5

    shrunk = run(run_module, group, replicas=3)
    assert len(voters(sim)) == 3
    removals = removals_in_order(shrunk)
    assert len(removals) == 2, shrunk["plan"]
    for sequence in removals:
        assert_kcp_order(sequence)
    nodes = {n.metadata.name for n in client.CoreV1Api(sim.api_client()).list_node().items}
    assert sorted(nodes) == voters(sim)

    # The replacement behind a classic load balancer: every machine registered once it is available, and out of
    # it before its etcd member and instance go.
    elb = aws.client("elb")
    elb.create_load_balancer(
        LoadBalancerName="lcp-apiserver",
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 6443, "InstanceProtocol": "TCP", "InstancePort": 6443}],
        Subnets=[group["subnets"][0]["id"]],
    )
    group = {**group, "load_balancers": [{"type": "classic", "name": "lcp-apiserver"}]}
    registered = run(run_module, group, replicas=3)
    assert calls(registered) == ["elb:RegisterInstancesWithLoadBalancer"] * 3

    started = time.time()
    replaced = run(run_module, group, replicas=3, instance_type="t3.xlarge")
    plan = calls(replaced)
    for index, call in enumerate(plan):
        if call == "etcd:MemberRemove":  # deregistered before its member goes (and so before its termination)
            assert "elb:DeregisterInstancesFromLoadBalancer" in plan[:index], plan
    lb = elb.describe_load_balancers(LoadBalancerNames=["lcp-apiserver"])["LoadBalancerDescriptions"][0]
    assert {i["InstanceId"] for i in lb["Instances"]} == {m["id"] for m in replaced["machines"]}
    assert len(removals_in_order(replaced)) == 3
    for sequence in removals_in_order(replaced):
        assert_kcp_order(sequence)
    assert {m["instance_type"] for m in replaced["machines"]} == {"t3.xlarge"}
    assert len(voters(sim)) == 3
    assert sim.etcd()["quorum"]["failed_windows"] == [], sim.etcd()["quorum"]

    # The simulator journals etcd's membership from its own watch of the members, a moment after the change.
    def journal_with_three_removals():
        timeline = kubesim.journal(cluster="lcp", since=started)
        return timeline if len([e for e in timeline if e["event"] == "member-removed"]) >= 3 else None

    timeline = kubesim.wait(journal_with_three_removals, 30, "the simulator to journal the three member removals")
    removed = [e for e in timeline if e["event"] == "member-removed"]
    assert len(removed) == 3
    # The collection's writes to the API server came with the identity it minted from the cluster CA.
    deletes = [e for e in timeline if e.get("source") == "apiserver" and e.get("method") == "DELETE"]
    assert any(e.get("user") == CONTROLLER for e in deletes), deletes

    # A Kubernetes upgrade, v1.31.2 -> v1.32.0 (the images of moto_amis.json carry their kubelet). Check mode lists
    # every write the apply then makes, in the same order, and makes none; kubeadm-config names v1.32.0 before the
    # first new machine joins - kubeadm join --control-plane runs the components of the version it names there, so
    # without it the "upgraded" machines would run v1.31.2 API servers.
    upgrade = {**group, "replicas": 3, "instance_type": "t3.xlarge", "kubernetes_version": "v1.32.0"}
    aws.reset_requests()
    since = time.time()
    planned = run_module(MODULE, upgrade, check=True)
    assert planned["changed"] and not planned.get("failed"), planned.get("msg")
    assert aws.mutating_requests() == []
    ours = [e for e in kubesim.journal(cluster="lcp", since=since) if e.get("user") == CONTROLLER]
    assert ours and [e for e in ours if e.get("method") != "GET"] == []
    upgraded = run(run_module, upgrade)
    assert calls(upgraded) == calls(planned)
    assert calls(upgraded).index("k8s:Apply") < calls(upgraded).index("ec2:RunInstances")
    assert len(removals_in_order(upgraded)) == 3
    for sequence in removals_in_order(upgraded):
        assert_kcp_order(sequence)
    core = client.CoreV1Api(sim.api_client())
    assert {n.status.node_info.kubelet_version for n in core.list_node().items} == {"v1.32.0"}
    # The last removed machine's mirror pods go with pod GC, a moment after its Node (kube-controller-manager's).
    kubesim.wait(
        lambda: len(core.list_namespaced_pod("kube-system", label_selector="component=kube-apiserver").items) == 3,
        30,
        "pod GC of the removed machines' API servers",
    )
    servers = core.list_namespaced_pod("kube-system", label_selector="component=kube-apiserver").items
    assert len(servers) == 3 and {p.spec.containers[0].image for p in servers} == {
        "registry.k8s.io/kube-apiserver:v1.32.0"
    }
    assert len(voters(sim)) == 3
    assert sim.etcd()["quorum"]["failed_windows"] == [], sim.etcd()["quorum"]


def test_an_unhealthy_member_refuses_the_step_and_no_api_refuses_a_removal(aws, kubesim, run_module, tmp_path):
    sim, group = control_plane(aws, kubesim, run_module, tmp_path, "lref")
    run(run_module, group, replicas=3)
    members = voters(sim)
    assert len(members) == 3

    # etcd frozen on one member (SIGSTOP: alive, but its status never comes): the preflight of a scale-up sees an
    # unhealthy machine and refuses the step - a join now would add a voter while one of three is down.
    assert sim.etcd_member(members[0], frozen=True)["etcd"]["frozen"]
    try:
        refused = run_module(MODULE, {**group, "replicas": 5})
        assert refused.get("failed"), calls(refused)
        assert "does not answer" in refused["msg"], refused["msg"]
        assert refused["msg"].startswith("refused:"), refused["msg"]
        assert "Nothing of this step was changed" in refused["msg"]
        assert not [p for p in refused["plan"] if p["call"] in ("ec2:RunInstances", "ec2:TerminateInstances")]
    finally:
        sim.etcd_member(members[0], frozen=False)

    # No Kubernetes API (mode none): removing a control-plane machine is refused before any change.
    no_api = run_module(MODULE, {**group, "replicas": 1, "kubernetes_api": {"mode": "none"}})
    assert no_api.get("failed") and "refused:" in no_api["msg"] and "kubernetes_api" in no_api["msg"], no_api
    assert no_api["plan"] == []
    assert len(voters(sim)) == 3

    # The API does not answer (a server address nothing listens on): with mode required every run fails before
    # any change, a no-op included; with auto the control-plane removal is refused before any change.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"https://127.0.0.1:{probe.getsockname()[1]}"
    for mode, replicas in (("required", 3), ("required", 1), ("auto", 1)):
        unreachable = run_module(
            MODULE, {**group, "replicas": replicas, "kubernetes_api": {"mode": mode, "server": closed, "timeout": 2}}
        )
        assert unreachable.get("failed") and unreachable["plan"] == [], (mode, replicas, unreachable)
        assert "kubernetes_api" in unreachable["msg"], unreachable["msg"]
    assert len(voters(sim)) == 3

    # Check mode plans the whole removal in order, and changes nothing.
    planned = run_module(MODULE, {**group, "replicas": 1}, check=True)
    assert planned["changed"] and not planned.get("failed"), planned.get("msg")
    first_removal = removals_in_order(planned)[0] if removals_in_order(planned) else calls(planned)
    assert "etcd:MemberRemove" in calls(planned) and "k8s:PatchNode" in calls(planned), calls(planned)
    assert calls(planned).index("etcd:MemberRemove") < calls(planned).index("ec2:TerminateInstances")
    assert first_removal
    assert len(voters(sim)) == 3

    # The run makes what check mode planned, call for call, in the same order.
    applied = run(run_module, group, replicas=1)
    assert calls(applied) == calls(planned)
    assert len(voters(sim)) == 1

    # A learner that never catches up (knob: the join's learner is never promoted, kubeadm gives up): the run that
    # launched it fails waiting for it, and the next scale-up is refused before any change, naming the learner.
    kubesim.knob(name_prefix="lref-control-plane", etcd_never_promoted=True)
    stuck = run_module(MODULE, {**group, "replicas": 3, "wait_timeout": 60})
    assert stuck.get("failed") and "join" in stuck["msg"], stuck.get("msg")
    learners = [m for m in sim.etcd()["members"] if m["is_learner"]]
    assert len(learners) == 1 and learners[0]["started"], sim.etcd()["members"]
    refused = run_module(MODULE, {**group, "replicas": 3})
    assert refused.get("failed") and refused["msg"].startswith("refused:") and "learner" in refused["msg"], refused
    assert not [p for p in refused["plan"] if p["call"] in ("ec2:RunInstances", "ec2:TerminateInstances")]
    assert len(voters(sim)) == 1


def test_workers_roll_and_scale_in_under_disruption_budgets_and_a_no_op_reads_once(aws, kubesim, run_module, tmp_path):
    """A machine deployment of two kubeadm workers (Nodes Ready once capa_addons applied the CNI) carrying a
    Deployment whose PodDisruptionBudget allows one disruption: a rolling replacement drains each old worker
    through the Eviction API (the budget decides; a refused eviction, HTTP 429, is asked again) and terminates it
    only after its pods left; the new workers count only once their Nodes are Ready, and at no moment are fewer
    than replicas - max_unavailable worker Nodes Ready; a no-op run reads the Nodes once and nothing else of the
    cluster. Then a scale-in under a budget that refuses every eviction: the leaving machine is held for
    node_drain_timeout, goes after it, and the run warns saying so."""
    sim, cp = control_plane(aws, kubesim, run_module, tmp_path, "lwk")
    # The cloud controller manager deletes a terminated instance's Node too, racing the collection's DeleteNode on a
    # loaded machine: off here, so the Node deletions asserted below are the collection's.
    kubesim.config(ccm_deletes_terminated_nodes=False)
    run(run_module, cp)
    apply_addons(run_module, sim, "lwk")
    workers = {
        **cp,
        "name": "md-0",
        "role": "node",
        "replicas": 2,
        "min_ready_seconds": 1,
        "rollout": {"max_surge": 1, "max_unavailable": 0},
    }
    made = run(run_module, workers)
    assert [m["kubernetes"]["node_ready"] for m in made["machines"]] == ["True", "True"], made["machines"]

    apps, core, policy = (
        client.AppsV1Api(sim.api_client()),
        client.CoreV1Api(sim.api_client()),
        client.PolicyV1Api(sim.api_client()),
    )
    labels = {"app": "web"}
    apps.create_namespaced_deployment(
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                },
            },
        },
    )
    policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
        },
    )
    worker_nodes = {m["kubernetes"]["node"] for m in made["machines"]}

    def web_running() -> list[Any]:
        pods = core.list_namespaced_pod("default", label_selector="app=web").items
        return [p for p in pods if p.status.phase == "Running" and p.spec.node_name]

    kubesim.wait(lambda: len(web_running()) == 2, 60, "two web pods running")
    assert {p.spec.node_name for p in web_running()} <= worker_nodes

    noop = run(run_module, workers)
    assert not noop["changed"] and noop["plan"] == []
    assert noop["api_calls"]["k8s:ListNodes"] == 1 and "k8s:ListPods" not in noop["api_calls"], noop["api_calls"]

    started = time.time()
    with ReadyWorkers(core) as ready:
        rolled = run(run_module, workers, instance_type="t3.xlarge")
    # replicas - max_unavailable = 2: never fewer Ready workers, at any moment of the roll (sampled every 0.1 s)
    assert ready.samples > 20 and ready.fewest >= 2, (ready.samples, ready.fewest)
    plan = calls(rolled)
    assert plan.count("ec2:TerminateInstances") == 2 and plan.count("k8s:DeleteNode") == 2
    entries = [(p["call"], p["resource"]) for p in rolled["plan"]]
    for machine in made["machines"]:
        node = machine["kubernetes"]["node"]
        cordon = entries.index(("k8s:PatchNode", f"node {node}"))
        terminations = [i for i, (call, what) in enumerate(entries) if call == "ec2:TerminateInstances"]
        terminate = next(i for i in terminations if machine["name"] in entries[i][1])
        delete = entries.index(("k8s:DeleteNode", f"node {node}"))
        assert cordon < terminate < delete, entries  # cordoned and drained first, its Node deleted once it is gone
    evictions = [
        e
        for e in kubesim.journal(cluster="lwk", source="apiserver", moto=False, since=started)
        if e.get("path", "").endswith("/eviction") and e.get("user") == CONTROLLER
    ]
    assert evictions and all(e.get("status") in (200, 201, 429) for e in evictions), evictions
    assert all(m["kubernetes"]["node_ready"] == "True" for m in rolled["machines"])
    kubesim.wait(lambda: len(web_running()) == 2, 60, "two web pods running again")
    assert not ({p.spec.node_name for p in web_running()} & worker_nodes)  # all moved to the new workers

    # Scale-in under a budget that refuses every eviction: a pod on each worker that its PodDisruptionBudget
    # (minAvailable 2 of 2) protects. The leaving machine is held for node_drain_timeout, then goes, and the run
    # says so; before that, every eviction of the held pod was refused (429) and asked again.
    new_nodes = sorted(m["kubernetes"]["node"] for m in rolled["machines"])
    for node in new_nodes:
        core.create_namespaced_pod(
            "default",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"held-{node.split('.')[0]}", "labels": {"app": "held"}},
                "spec": {"nodeName": node, "containers": [{"name": "held", "image": "busybox"}]},
            },
        )
    policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "held"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "held"}}},
        },
    )
    kubesim.wait(
        lambda: (policy.read_namespaced_pod_disruption_budget("held", "default").status.current_healthy or 0) == 2,
        60,
        "both held pods healthy for their budget",
    )
    started = time.time()
    shrunk = run(run_module, workers, instance_type="t3.xlarge", replicas=1, node_drain_timeout=6)
    took = time.time() - started
    (gone,) = [m for m in rolled["machines"] if m["id"] not in {k["id"] for k in shrunk["machines"]}]
    held_pod = f"default/held-{gone['kubernetes']['node'].split('.')[0]}"
    assert any(
        "node_drain_timeout 6s passed with" in w and held_pod in w and "the machine goes anyway" in w
        for w in shrunk.get("warnings", [])
    ), shrunk.get("warnings")
    assert took >= 6, took
    timeline = kubesim.journal(cluster="lwk", since=started)
    refused = [
        e
        for e in timeline
        if e.get("source") == "apiserver" and e.get("path", "").endswith(f"/pods/{held_pod.split('/')[1]}/eviction")
    ]
    terminate = next(
        e["time"] for e in timeline if e.get("operation") == "TerminateInstances" and e.get("source") == "moto"
    )
    assert len(refused) >= 2 and {e["status"] for e in refused} == {429}, refused  # asked again, always refused
    assert max(e["time"] for e in refused) < terminate  # the machine was held until the drain gave up
    assert terminate - min(e["time"] for e in refused) >= 5.5


def test_machines_whose_certificates_expire_within_the_window_are_rolled_and_the_rest_kept(
    aws, kubesim, run_module, tmp_path
):
    """KCP's rolloutBefore.certificatesExpiryDays: each control-plane machine's kube-apiserver serving certificate is
    read once (a port-forward to kube-apiserver-<node>:6443, the cluster CA checked) and kept as its instance tag;
    with the window set, the machine whose certificate expires inside it is replaced through the etcd-safe rollout,
    the two whose certificates have a year left are kept."""
    sim, group = control_plane(aws, kubesim, run_module, tmp_path, "lcert")
    built = run(run_module, group, replicas=3)
    assert len(voters(sim)) == 3
    expiries = {m["name"]: m["certificates_expire"] for m in built["machines"]}
    assert all(expiries.values()), expiries  # read in the run that built them, once they were available
    year = time.time() + 300 * 86400
    assert all(time.mktime(time.strptime(v, "%Y-%m-%dT%H:%M:%SZ")) > year for v in expiries.values()), expiries
    again = run(run_module, group, replicas=3)
    assert again["plan"] == []  # read once: no CreateTags again (the port-forwards of this run are etcd's)

    # One node's certificate now expires in 20 days; a fresh read is what KCP does once per machine, so the tag
    # that kept the old expiry is removed for that machine, as a machine rebuilt in place would have it.
    victim = sorted(built["machines"], key=lambda m: m["name"])[0]
    node = victim["kubernetes"]["node"]
    sim.certificates(node, expires_in_days=20)
    aws.client("ec2").delete_tags(Resources=[victim["id"]], Tags=[{"Key": "clusterapi.aws/certificates-expiry"}])
    noticed = run(run_module, group, replicas=3)  # the window is not set: read and kept, nothing rolled
    assert calls(noticed) == ["ec2:CreateTags"]
    soon = {m["name"]: m["certificates_expire"] for m in noticed["machines"]}[victim["name"]]
    assert time.mktime(time.strptime(soon, "%Y-%m-%dT%H:%M:%SZ")) < time.time() + 21 * 86400

    rolled = run(run_module, group, replicas=3, rollout_before_certificates_expiry_days=30)
    names = {m["name"] for m in rolled["machines"]}
    assert victim["name"] not in names and len(names) == 3
    assert {m["name"] for m in built["machines"]} - names == {victim["name"]}  # the two others kept
    terminate = [p for p in rolled["plan"] if p["call"] == "ec2:TerminateInstances"]
    assert len(terminate) == 1 and "certificates expire" in terminate[0]["reason"], terminate
    for sequence in removals_in_order(rolled):
        assert_kcp_order(sequence)
    assert len(voters(sim)) == 3 and sim.etcd()["quorum"]["failed_windows"] == []
    new = [m for m in rolled["machines"] if m["name"] not in expiries]
    assert len(new) == 1 and new[0]["certificates_expire"]
    steady = run(run_module, group, replicas=3, rollout_before_certificates_expiry_days=30)
    assert steady["plan"] == []
