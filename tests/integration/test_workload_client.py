"""The workload-cluster client (plugins/module_utils/workload) against the simulator's API server and real etcd.

The path is the one a real cluster gets: a client certificate minted per run from the cluster CA (only in the TLS
context), the API server checked against the cluster CA for the endpoint's name while reached at another address
(the documented endpoint override), and etcd reached through ``pods/portforward`` with a certificate minted from
the etcd CA - no shortcut to the etcd process.
"""

from __future__ import annotations

import json
import socket

import kubesim_helpers as h
import pytest
from kubernetes import client

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, RemoteError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.shared_reads import SharedReads
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.waiting import Backoff
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import node_lifecycle as nl
from ansible_collections.clusterapi.aws.plugins.module_utils.workload import access as access_mod
from ansible_collections.clusterapi.aws.plugins.module_utils.workload import credentials
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.etcd import Etcd
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.kube import ApiTarget, KubeApi
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.observe import NodeView

CLUSTER = "wlc"
ENDPOINT = "wlc-apiserver-1234567890.us-east-1.elb.amazonaws.com"


def boot(aws, kubesim, replicas: int = 1):
    sim = kubesim.register(CLUSTER, endpoint=f"{ENDPOINT}:6443")
    pki = h.new_pki()
    subnet = h.subnet(aws)
    h.launch(aws, CLUSTER, f"{CLUSTER}-cp-0", h.cloud_config("init", pki, CLUSTER, f"{ENDPOINT}:6443"), subnet)
    sim.wait_initialized()
    for index in range(1, replicas):  # one at a time, as a control plane grows
        document = h.cloud_config("join-control-plane", pki, CLUSTER, f"{ENDPOINT}:6443")
        h.launch(aws, CLUSTER, f"{CLUSTER}-cp-{index}", document, subnet)
        try:
            kubesim.wait(lambda n=index + 1: voters(sim) == n, 90, "a voter")
        except AssertionError as e:
            raise AssertionError(f"{e}; instances: {sim.instances()}; etcd: {sim.etcd()}") from None
    # The kubelet starts the static pods after kubeadm returns; the API server refuses a port-forward to a Pending pod.
    core = client.CoreV1Api(sim.api_client())
    kubesim.wait(lambda: etcd_pods_running(core) == replicas, 60, f"{replicas} running etcd pods")
    return sim, pki


def etcd_pods_running(core) -> int:
    pods = core.list_namespaced_pod("kube-system", label_selector="component=etcd").items
    return len([p for p in pods if p.status.phase == "Running"])


def voters(sim) -> int:
    return len([m for m in sim.etcd()["members"] if not m["is_learner"]])


def api_identity(pki) -> credentials.Identity:
    return credentials.mint_client_certificate(
        pki.ca_cert, pki.ca_key, credentials.API_CLIENT_NAME, credentials.API_CLIENT_GROUPS
    )


def api_for(sim, pki, calls=None, ca=None, tls_server_name=ENDPOINT) -> KubeApi:
    identity = api_identity(pki)
    target = ApiTarget(f"https://127.0.0.1:{sim.port}", ca or pki.ca_cert, tls_server_name=tls_server_name)
    return KubeApi(target, identity, count=(calls.append if calls is not None else lambda _n: None))


def test_reads_and_gated_writes_with_a_minted_identity(aws, kubesim):
    sim, pki = boot(aws, kubesim)
    calls: list[str] = []
    api = api_for(sim, pki, calls)
    assert api.probe() is None
    nodes = api.nodes()
    assert len(nodes) == 1
    node = nodes[0]["metadata"]["name"]
    pods = api.pods("kube-system", label_selector="tier=control-plane")
    assert {p["metadata"]["name"] for p in pods} >= {f"kube-apiserver-{node}", f"etcd-{node}"}
    assert api.pods(field_selector=f"spec.nodeName={node}")

    ops = Operations(check_mode=True)
    ops.call(api, "cordon", resource=node, reason="drain", node=node)
    assert not (api.get(f"/api/v1/nodes/{node}", "k8s:GetNode") or {})["spec"].get("unschedulable")
    ops = Operations(check_mode=False)
    ops.call(api, "cordon", resource=node, reason="drain", node=node)
    assert api.get(f"/api/v1/nodes/{node}", "k8s:GetNode")["spec"]["unschedulable"] is True
    assert [p.call for p in ops.plan] == ["k8s:PatchNode"]
    assert calls.count("k8s:ListNodes") == 1 and "k8s:PatchNode" in calls

    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": "default"}}
    ops.call(api, "apply", resource="ConfigMap default/probe", reason="addon", manifest={**applied, "data": {"a": "1"}})
    assert api.get("/api/v1/namespaces/default/configmaps/probe", "k8s:GetConfigMap")["data"] == {"a": "1"}
    timeline = kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)
    users = {e["user"] for e in timeline if e.get("method") == "PATCH"}
    assert users == {credentials.API_CLIENT_NAME}


def test_the_endpoint_name_is_checked_and_a_foreign_ca_is_refused(aws, kubesim):
    sim, pki = boot(aws, kubesim)
    assert api_for(sim, pki, tls_server_name="not-the-endpoint.example.com").probe() is not None
    other = h.new_pki()
    refused = api_for(sim, pki, ca=other.ca_cert).probe()
    assert refused is not None and "certificate verify failed" in refused
    assert api_for(sim, pki, tls_server_name=None).probe() is None  # 127.0.0.1 is in the certificate too


def test_etcd_through_the_port_forward(aws, kubesim):
    sim, pki = boot(aws, kubesim, replicas=3)
    calls: list[str] = []
    api = api_for(sim, pki, calls)
    identity = credentials.mint_client_certificate(pki.etcd_cert, pki.etcd_key, credentials.ETCD_CLIENT_NAME)
    etcd = Etcd(api, pki.etcd_cert, identity, count=calls.append)
    nodes = [n["metadata"]["name"] for n in api.nodes()]
    status = etcd.status(nodes)
    assert sorted(m.name for m in status.members) == sorted(nodes)
    assert status.leader is not None and not any(m.is_learner for m in status.members)
    assert "k8s:GetPortForward" in calls and "etcd:ListMembers" in calls

    leader = status.leader.name
    target = next(m for m in status.members if m.name != leader)
    ops = Operations(check_mode=False)
    ops.call(etcd, "move_leader", resource=leader, reason="test", via=leader, target_id=target.id)
    kubesim.wait(lambda: sim.etcd()["leader_name"] == target.name, 20, "leadership to move")

    victim = next(m for m in status.members if m.name not in (leader, target.name))
    # For ~5 s after any membership or leader change etcd refuses reconfiguration ("unhealthy cluster"): retried.
    ops.remaining = lambda: 30.0
    ops.call(
        etcd,
        "member_remove",
        resource=victim.name,
        reason="test",
        retry_if=lambda e: "unhealthy cluster" in str(e),
        retry_delay=1.0,
        via=target.name,
        member_id=victim.id,
    )
    after = etcd.status([target.name])
    assert sorted(m.name for m in after.members) == sorted(n for n in nodes if n != victim.name)
    assert [p.call for p in ops.plan] == ["etcd:MoveLeader", "etcd:MemberRemove"]

    with pytest.raises(RemoteError):
        etcd.status(["no-such-node"])
    etcd.close()


# --- the removal steps of a machine (plugins/module_utils/machines/node_lifecycle.py) ---------------------------


def context(aws, check_mode: bool = False, wait_timeout: int = 120) -> Context:
    session = AwsSession("us-east-1", aws.url, {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"})
    return Context(session=session, cluster=CLUSTER, check_mode=check_mode, wait_timeout=wait_timeout)


def access_for(ctx, sim, pki, mode: str = "auto", **reach: str) -> access_mod.KubernetesAccess:
    settings = access_mod.KubernetesApiSettings(mode=mode, **(reach or {"server": f"https://127.0.0.1:{sim.port}"}))
    return access_mod.KubernetesAccess.open(
        ctx,
        settings,
        endpoint_host=ENDPOINT,
        endpoint_port=6443,
        cluster_ca=lambda: (pki.ca_cert, pki.ca_key),
        etcd_ca_certificate=pki.etcd_cert,
        etcd_ca_key=pki.etcd_key,
    )


def web_with_budget(sim, node: str, replicas: int = 2, min_available: int = 2) -> None:
    """A Deployment scheduled onto ``node`` (its replacements cannot go back once the Node is cordoned) behind a
    PodDisruptionBudget that refuses any eviction of a ready pod."""
    sim.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "nodeSelector": {"kubernetes.io/hostname": node},
                        "terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "web", "image": "nginx"}],
                    },
                },
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": "web"}}},
        },
    )


def wait_ready_web(kubesim, api) -> None:
    """Both web pods Running and Ready: a Pending pod is evicted without asking its budget (as the API server does),
    so a drain that starts before they run would prove nothing about the budget."""

    def ready() -> int:
        return sum(
            1
            for p in api.pods("default", label_selector="app=web")
            if (p.get("status") or {}).get("phase") == "Running"
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
        )

    kubesim.wait(lambda: ready() == 2, 60, "2 ready web pods")


def worker_cluster(aws, kubesim):
    sim, pki = boot(aws, kubesim)
    subnet = h.subnet(aws, cidr="10.1.0.0/16")
    h.launch(
        aws,
        CLUSTER,
        f"{CLUSTER}-md-0",
        h.cloud_config("join-worker", pki, CLUSTER, f"{ENDPOINT}:6443"),
        subnet,
        role="node",
    )
    sim.create(*h.calico_and_ccm())
    sim.wait_nodes(2, ready=True)
    return sim, pki


def worker_node(api) -> NodeView:
    labels = "node-role.kubernetes.io/control-plane"
    return next(NodeView.from_api(n) for n in api.nodes() if labels not in n["metadata"].get("labels", {}))


def test_a_drain_retries_evictions_a_budget_refuses_until_node_drain_timeout(aws, kubesim, monkeypatch):
    monkeypatch.setattr(nl, "DRAIN_RETRY", Backoff(first=0.5, cap=0.5))
    sim, pki = worker_cluster(aws, kubesim)
    ctx = context(aws)
    access = access_for(ctx, sim, pki)
    worker = worker_node(access.api)
    web_with_budget(sim, worker.name)
    wait_ready_web(kubesim, access.api)

    # check mode: the whole sequence planned, nothing written
    planning = context(aws, check_mode=True)
    planned = nl.drain_node(planning, access.api, worker, "md-0-a", timeout=3)
    assert [p.call for p in planning.ops.plan] == ["k8s:PatchNode", "k8s:CreateEviction", "k8s:CreateEviction"]
    assert sorted(planned.evicted) == sorted(f"default/{p['metadata']['name']}" for p in access.api.pods("default"))
    assert not NodeView.from_api(access.api.get(f"/api/v1/nodes/{worker.name}", "k8s:GetNode")).unschedulable

    # the budget refuses both evictions: retried until node_drain_timeout, then the machine goes anyway
    outcome = nl.drain_node(ctx, access.api, worker, "md-0-a", timeout=3)
    assert outcome.evicted == [] and len(outcome.timed_out) == 2
    assert any("node_drain_timeout 3s passed" in w for w in ctx.warnings)
    assert [p.call for p in ctx.ops.plan] == ["k8s:PatchNode"]  # refused evictions changed nothing
    journal = kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)
    refused = [e for e in journal if e.get("subresource") == "eviction" and e["status"] == 429]
    assert len(refused) >= 4  # asked again every round

    # once the budget allows, the drain evicts and waits until the pods are gone
    relaxed = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "web"}}},
    }
    Operations(check_mode=False).call(access.api, "apply", resource="pdb web", reason="test", manifest=relaxed)
    again = context(aws)
    done = nl.drain_node(again, access.api, worker_node(access.api), "md-0-a")
    assert len(done.evicted) == 2 and done.timed_out == []
    left = access.api.pods(field_selector=f"spec.nodeName={worker.name}")
    assert all(any(o["kind"] == "DaemonSet" for o in p["metadata"].get("ownerReferences", [])) for p in left), (
        "only DaemonSet pods stay"
    )
    assert [p.call for p in again.ops.plan] == ["k8s:CreateEviction", "k8s:CreateEviction"]  # already cordoned


def test_a_drain_that_runs_out_of_the_run_budget_keeps_the_machine(aws, kubesim, monkeypatch):
    monkeypatch.setattr(nl, "DRAIN_RETRY", Backoff(first=0.5, cap=0.5))
    sim, pki = worker_cluster(aws, kubesim)
    ctx = context(aws, wait_timeout=60)
    access = access_for(ctx, sim, pki)
    worker = worker_node(access.api)
    web_with_budget(sim, worker.name)
    wait_ready_web(kubesim, access.api)
    short = context(aws, wait_timeout=3)
    with pytest.raises(ReconcileError, match="did not finish within wait_timeout"):
        nl.drain_node(short, access.api, worker, "md-0-a", timeout=0)


def test_control_plane_member_steps_keep_quorum(aws, kubesim):
    sim, pki = boot(aws, kubesim, replicas=3)
    ctx = context(aws)
    access = access_for(ctx, sim, pki)
    nodes = [n["metadata"]["name"] for n in access.api.nodes()]
    workload = access.observe(nodes)
    assert workload.etcd is not None and len(workload.etcd.members) == 3
    assert all(all(p.values()) for p in workload.static_pods.values())
    leader = workload.etcd.leader.name
    others = [n for n in nodes if n != leader]

    nl.move_leadership_off(ctx, access.etcd, workload.etcd, leader, others)
    kubesim.wait(lambda: sim.etcd()["leader_name"] in others, 20, "the leader to move")
    moved = access.observe(nodes).etcd
    follower = next(n for n in nodes if n != moved.leader.name)
    nl.move_leadership_off(ctx, access.etcd, moved, follower, [])  # not the leader: nothing to move

    status = access.observe(nodes).etcd
    assert nl.remove_member(ctx, access.etcd, status, leader, nodes) is True
    assert sorted(m.name for m in access.observe(others).etcd.members) == sorted(others)
    assert [p.call for p in ctx.ops.plan] == ["etcd:MoveLeader", "etcd:MemberRemove"]
    assert sim.etcd()["quorum"]["failed_windows"] == []
    calls = ctx.session.recorder.as_dict()
    assert calls["etcd:MoveLeader"] >= 1 and calls["k8s:ListNodes"] >= 1


def test_modes_without_an_api(aws, kubesim):
    sim = kubesim.register(CLUSTER, endpoint=f"{ENDPOINT}:6443")  # nothing listens until kubeadm init
    pki = h.new_pki()
    ctx = context(aws)
    auto = access_for(ctx, sim, pki, mode="auto")
    seen = auto.observe()
    assert seen.reachable is False and "Connection refused" in seen.reason
    assert not auto.available and auto.observe().reachable is False  # asked once, then known
    none = access_for(ctx, sim, pki, mode="none")
    assert not none.available and none.reason == "kubernetes_api.mode is none"
    assert none.observe().reachable is False
    required = access_for(ctx, sim, pki, mode="required")
    with pytest.raises(ReconcileError, match="kubernetes_api.mode is required but the Kubernetes API does not answer"):
        required.observe()
    assert ctx.session.recorder.as_dict() == {"k8s:ListNodes": 2}  # auto and required asked once each; none never


def test_the_api_and_etcd_through_a_connect_proxy_at_the_endpoints_name(aws, kubesim):
    """``kubernetes_api.proxy``: the API server and etcd's port-forward reached at the endpoint's own name (the load
    balancer's DNS name, which no resolver here knows) through an HTTP CONNECT proxy, the certificate checked for that
    name; a name the proxy cannot reach is an API that does not answer."""
    sim, pki = boot(aws, kubesim)
    ctx = context(aws)
    access = access_for(ctx, sim, pki, mode="required", proxy=kubesim.proxy)
    nodes = [n.metadata.name for n in client.CoreV1Api(sim.api_client()).list_node().items]
    seen = access.observe(nodes)
    assert seen.reachable and len(seen.nodes) == 1 and seen.etcd is not None and len(seen.etcd.members) == 1, seen
    access.close()
    tunnels = [e for e in kubesim.journal(cluster=CLUSTER, source="proxy", moto=False) if e["event"] == "connect"]
    assert tunnels and {(e["target"], e["status"]) for e in tunnels} == {(f"{ENDPOINT}:6443", 200)}, tunnels
    calls = ctx.session.recorder.as_dict()
    assert calls["k8s:ListNodes"] == 1 and calls["k8s:GetPortForward"] >= 1, calls

    elsewhere = access_mod.KubernetesAccess.open(
        ctx,
        access_mod.KubernetesApiSettings(mode="auto", proxy=kubesim.proxy),
        endpoint_host="no-such-cluster.example.com",
        endpoint_port=6443,
        cluster_ca=lambda: (pki.ca_cert, pki.ca_key),
    )
    unreachable = elsewhere.observe()
    assert not unreachable.reachable and "502" in unreachable.reason, unreachable.reason


def test_the_node_list_travels_to_the_next_run_until_a_write(aws, kubesim):
    """kernel/shared_reads.py on the Kubernetes side: a run's Node list answers the next run's identical list (no
    request reaches the API server), once; a write (here a cordon) ends it; Pods and Secrets never travel."""
    sim, pki = boot(aws, kubesim)
    first_calls: list[str] = []
    first = api_for(sim, pki, first_calls)
    first.shared = SharedReads({}, scope="us-east-1|")
    nodes = first.nodes()
    first.pods("kube-system")
    handed = json.loads(json.dumps(first.shared.handed_forward(planned_change=False)))
    assert [entry["call"] for entry in handed.values()] == ["k8s:ListNodes"]

    # The second run's client is given its trust lazily (as KubernetesAccess gives it, from the PKI secret): a list
    # that was handed on needs no PKI read and no minted certificate.
    calls: list[str] = []
    trusted: list[str] = []
    eager = api_for(sim, pki)

    def trust():
        trusted.append("trust")
        return eager.target.ca_certificate, api_identity(pki)

    second = KubeApi(eager.target, count=calls.append, trust=trust, shared=SharedReads(handed, scope="us-east-1|"))
    assert second.nodes() == nodes and calls == [] and trusted == []  # answered from the first run's list
    assert dict(second.shared.served) == {"k8s:ListNodes": 1}
    second.nodes()  # the same list again in one run is a poll: now the client trusts and presents
    assert calls == ["k8s:ListNodes"] and trusted == ["trust"]
    node = nodes[0]["metadata"]["name"]
    Operations(check_mode=False).call(second, "cordon", resource=node, reason="drain", node=node)
    assert second.shared.handed_forward(planned_change=False) == {}  # the write may have changed any Node

    third_calls: list[str] = []
    third = api_for(sim, pki, third_calls)
    third.shared = SharedReads(handed, scope="us-east-1|")
    Operations(check_mode=False).call(third, "cordon", resource=node, reason="drain", node=node)
    third.nodes()  # after its own write a run asks again
    assert third_calls == ["k8s:PatchNode", "k8s:ListNodes"]


def test_an_api_server_that_did_not_answer_is_not_asked_again_by_the_next_run_until_a_write():
    """kernel/shared_reads.py: a run that could not reach the API server says so to the runs after it, which then
    fail every request at once, in the same words - without reading the PKI, minting a certificate or waiting out a
    connect timeout - as long as nothing was written; a run that writes tries again."""
    pki = h.new_pki()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        target = ApiTarget(f"https://127.0.0.1:{closed.getsockname()[1]}", pki.ca_cert, tls_server_name=ENDPOINT)
    first = KubeApi(target, api_identity(pki), shared=SharedReads({}, scope="us-east-1|"))
    with pytest.raises(RemoteError) as tried:
        first.nodes()
    assert tried.value.code == "Unreachable" and "Connection refused" in tried.value.args[0]
    handed = json.loads(json.dumps(first.shared.handed_forward(planned_change=False)))
    assert [entry["call"] for entry in handed.values()] == ["k8s:Unreachable"]

    calls: list[str] = []

    def trust():
        raise AssertionError("the PKI is not read for a server known not to answer")

    second = KubeApi(target, count=calls.append, trust=trust, shared=SharedReads(handed, scope="us-east-1|"))
    for read in (second.nodes, lambda: second.secrets("kube-system"), second.nodes):  # every request, not once
        with pytest.raises(RemoteError) as told:
            read()
        assert (told.value.code, told.value.args[0]) == ("Unreachable", tried.value.args[0])
    assert calls == [] and dict(second.shared.served) == {"k8s:ListNodes": 2, "k8s:ListSecrets": 1}

    # After a write (here noted as a cordon would note it) the run asks again - and may find the server back.
    third = KubeApi(target, api_identity(pki), count=calls.append, shared=SharedReads(handed, scope="us-east-1|"))
    third.shared.note_write()
    with pytest.raises(RemoteError):
        third.nodes()
    assert calls == ["k8s:ListNodes"]


def test_a_node_watch_ends_at_the_change_it_waits_for_and_otherwise_at_its_pause(aws, kubesim):
    """KubeApi.watch_for, the pause of a join wait: from the last list's resourceVersion it follows the API server's
    watch of the Nodes, returns True as soon as a wanted Node changes (here a label added, as a Node turning Ready
    changes it), ignores other events, and returns False when its time is up - or at once, without a request, when
    the path was never listed (there is no version to start from)."""
    import threading
    import time

    sim, pki = boot(aws, kubesim)
    calls: list[str] = []
    api = api_for(sim, pki, calls)
    assert api.watch_for("/api/v1/nodes", "k8s:WatchNodes", lambda _kind, _node: True, 2.0) is False
    assert calls == []  # never listed: nothing to watch from
    (node,) = [n["metadata"]["name"] for n in api.nodes()]
    core = client.CoreV1Api(sim.api_client())

    def label_later() -> None:
        time.sleep(0.5)
        core.patch_node(node, {"metadata": {"labels": {"clusterapi.aws/test": "watched"}}})

    def named(name: str):
        return lambda _kind, obj: (obj.get("metadata") or {}).get("name") == name

    changer = threading.Thread(target=label_later)
    started = time.monotonic()
    changer.start()
    assert api.watch_for("/api/v1/nodes", "k8s:WatchNodes", named(node), 10.0) is True
    changer.join()
    assert time.monotonic() - started < 5.0  # the change ended the watch, not its 10 s
    assert calls == ["k8s:ListNodes", "k8s:WatchNodes"]

    api.nodes()  # a fresh version: the label change is behind it
    started = time.monotonic()
    assert api.watch_for("/api/v1/nodes", "k8s:WatchNodes", named("ip-10-9-9-9.ec2.internal"), 1.5) is False
    assert 1.0 <= time.monotonic() - started < 4.0  # its pause, then the poll goes on as before
