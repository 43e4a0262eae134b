"""capa_addons on the workload-cluster simulator: Calico and the AWS cloud controller manager make the nodes Ready and
set their providerIDs; a second run reads one object and writes nothing; check mode plans every apply; Reconcile
applies changed manifests again; without an API server the run warns and applies nothing (auto) or fails (required).

The cluster is booted by the simulator from kubeadm documents carrying the CAs of the PKI secret that
capa_kubeadm stored (given to it as bring-your-own PKI), so the module's real credentials (minted from that CA)
and its real client are what the API server sees.
"""

from __future__ import annotations

import kubesim_helpers as h
from kubernetes import client
from kubesim_fixtures import wait_for

CLUSTER = "addons"
ENDPOINT = "addons-apiserver-1234.us-east-1.elb.amazonaws.com"
MODULE = "clusterapi.aws.capa_addons"
CONTROLLER = "clusterapi.aws:controller"  # the user of the certificate the collection mints


def cluster(aws, kubesim, run_module, tmp_path):
    sim = kubesim.register(CLUSTER, endpoint=f"{ENDPOINT}:6443")
    pki = h.new_pki()
    stored = run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": CLUSTER,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": ENDPOINT, "port": 6443},
            "output_dir": str(tmp_path),
            "pki": {
                "cluster_ca_cert": pki.ca_cert,
                "cluster_ca_key": pki.ca_key,
                "etcd_ca_cert": pki.etcd_cert,
                "etcd_ca_key": pki.etcd_key,
            },
        },
    )
    assert not stored.get("failed"), stored
    subnet = h.subnet(aws)
    h.launch(aws, CLUSTER, f"{CLUSTER}-cp-0", h.cloud_config("init", pki, CLUSTER, f"{ENDPOINT}:6443"), subnet)
    worker = h.cloud_config("join-worker", pki, CLUSTER, f"{ENDPOINT}:6443")
    h.launch(aws, CLUSTER, f"{CLUSTER}-md-0", worker, subnet, role="node")
    sim.wait_initialized()
    sim.wait_nodes(2)
    return sim


def our_writes(kubesim, since: float = 0.0) -> list[dict]:
    """The collection's writes to the API server (kubelets and controllers write too)."""
    journal = kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)
    return [
        e
        for e in journal
        if e["time"] > since and e.get("user") == CONTROLLER and e.get("method") in ("PATCH", "POST", "PUT", "DELETE")
    ]


def ready_nodes(sim) -> int:
    nodes = client.CoreV1Api(sim.api_client()).list_node().items
    return sum(any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or []) for n in nodes)


def args(sim, **extra):
    base = {
        "cluster_name": CLUSTER,
        "kubernetes_version": h.VERSION,
        "endpoint": {"host": ENDPOINT, "port": 6443},
        "kubernetes_api": {"server": f"https://127.0.0.1:{sim.port}"},
    }
    base.update(extra)
    return base


def test_addons_make_nodes_ready_once_and_a_second_run_writes_nothing(aws, kubesim, run_module, tmp_path):
    sim = cluster(aws, kubesim, run_module, tmp_path)
    assert ready_nodes(sim) == 0  # no CNI yet: "container runtime network not ready"

    planned = run_module(MODULE, args(sim), check=True)
    assert planned["changed"] and not planned.get("failed"), planned
    applies = [p for p in planned["plan"] if p["call"] == "k8s:Apply"]
    assert any(p["resource"] == "DaemonSet kube-system/calico-node" for p in applies)
    assert any(p["resource"] == "DaemonSet kube-system/aws-cloud-controller-manager" for p in applies)
    assert our_writes(kubesim) == [], "check mode wrote"

    applied = run_module(MODULE, args(sim))
    assert applied["changed"] and not applied.get("failed"), applied
    assert applied["plan"] == planned["plan"]  # check mode listed exactly what the apply did
    assert applied["plan"][-1]["resource"] == "ConfigMap kube-system/clusterapi-aws-addons"
    assert {a["applied"] for a in applied["addons"].values()} == {True}
    sim.wait_nodes(2, ready=True)
    # Ready comes from the CNI, the providerID from the cloud controller once it has started: wait for both
    core = client.CoreV1Api(sim.api_client())
    wait_for(lambda: all(n.spec.provider_id for n in core.list_node().items), 60, "the cloud controller's providerIDs")
    for node in core.list_node().items:
        assert node.spec.provider_id and node.spec.provider_id.startswith("aws:///us-east-1a/i-")
        assert not any(t.key == "node.cloudprovider.kubernetes.io/uninitialized" for t in node.spec.taints or [])

    since = kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)[-1]["time"]
    again = run_module(MODULE, args(sim))
    assert again["changed"] is False and again["plan"] == [], again
    assert {k: v for k, v in again["api_calls"].items() if k.startswith("k8s:")} == {"k8s:GetConfigMap": 1}
    assert our_writes(kubesim, since) == []


def test_reconcile_reapplies_changed_manifests_and_apply_once_does_not(aws, kubesim, run_module, tmp_path):
    sim = cluster(aws, kubesim, run_module, tmp_path)
    extra = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "team", "namespace": "default"},
            "data": {"a": "1"},
        }
    ]
    first = run_module(MODULE, args(sim, cni="none", additional_manifests=extra))
    assert first["changed"] and first["addons"]["additional-manifests"]["applied"]
    changed = [{**extra[0], "data": {"a": "2"}}]
    once = run_module(MODULE, args(sim, cni="none", additional_manifests=changed))
    assert once["changed"] is False  # ApplyOnce: never again
    reconciled = run_module(MODULE, args(sim, cni="none", additional_manifests=changed, strategy="Reconcile"))
    assert [p["resource"] for p in reconciled["plan"]] == [
        "ConfigMap default/team",
        "ConfigMap kube-system/clusterapi-aws-addons",
    ]
    data = client.CoreV1Api(sim.api_client()).read_namespaced_config_map("team", "default").data
    assert data == {"a": "2"}


def test_without_an_api_server_auto_warns_and_required_fails(aws, kubesim, run_module, tmp_path):
    sim = kubesim.register(CLUSTER, endpoint=f"{ENDPOINT}:6443")  # registered, never initialised: nothing listens
    run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": CLUSTER,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": ENDPOINT},
            "output_dir": str(tmp_path),
        },
    )
    auto = run_module(MODULE, args(sim))
    assert auto["changed"] is False and not auto.get("failed")
    assert any("addons not applied" in w for w in auto.get("warnings", []))
    assert auto["kubernetes_api"]["reachable"] is False
    required = run_module(
        MODULE, args(sim, kubernetes_api={"server": f"https://127.0.0.1:{sim.port}", "mode": "required"})
    )
    assert required["failed"] and "kubernetes_api.mode is required" in required["msg"]
    planned = run_module(MODULE, args(sim), check=True)  # check mode of a cluster not built: the applies it would make
    assert planned["changed"] and {p["call"] for p in planned["plan"]} == {"k8s:Apply"}
