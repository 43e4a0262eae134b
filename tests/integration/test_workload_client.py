"""The workload-cluster client (plugins/module_utils/workload) against the simulator's API server and real etcd.

The path is the one a real cluster gets: a client certificate minted per run from the cluster CA (only in the TLS
context), the API server checked against the cluster CA for the endpoint's name while reached at another address
(the documented endpoint override), and etcd reached through ``pods/portforward`` with a certificate minted from
the etcd CA - no shortcut to the etcd process.
"""

from __future__ import annotations

import kubesim_helpers as h
import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import RemoteError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations
from ansible_collections.clusterapi.aws.plugins.module_utils.workload import credentials
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.etcd import Etcd
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.kube import ApiTarget, KubeApi

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
        kubesim.wait(lambda n=index + 1: voters(sim) == n, 90, "a voter")
    return sim, pki


def voters(sim) -> int:
    return len([m for m in sim.etcd()["members"] if not m["is_learner"]])


def api_for(sim, pki, calls=None, ca=None, tls_server_name=ENDPOINT) -> KubeApi:
    identity = credentials.mint_client_certificate(
        pki.ca_cert, pki.ca_key, credentials.API_CLIENT_NAME, credentials.API_CLIENT_GROUPS
    )
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
