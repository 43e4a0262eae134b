"""Self-tests of the workload-cluster simulator (tools/kubesim): it must be faithful enough that the collection's
Kubernetes-aware code can be tested against it, and strict enough to catch the collection's bugs.

Nodes boot from real EC2 user data in moto (the collection's own documents where the test says so), run real etcd
3.4 members, and are talked to with the official ``kubernetes`` client.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from typing import Any

import kubesim_helpers as h
import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError
from kubernetes.stream import portforward

CLUSTER = "ksim"


def boot_one(aws: Any, kubesim: Any, cluster: str = CLUSTER, **options: Any) -> tuple[Any, h.Pki, str, str]:
    """A cluster with its kubeadm init node (plain cloud-config user data: the fastest boot)."""
    sim = kubesim.register(cluster, **options)
    pki = h.new_pki()
    subnet = h.subnet(aws)
    endpoint = f"127.0.0.1:{sim.port}"
    instance = h.launch(aws, cluster, f"{cluster}-cp-0", h.cloud_config("init", pki, cluster, endpoint), subnet)
    sim.wait_initialized()
    return sim, pki, subnet, instance


def status_of(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


# --------------------------------------------------------------------------------------------------------------
def test_api_server_tls_authentication_and_rbac(aws, kubesim, tmp_path):
    sim = kubesim.register(CLUSTER)
    with pytest.raises(ConnectionRefusedError):  # no kubeadm init yet: nothing listens
        socket.create_connection(("127.0.0.1", sim.port), timeout=2).close()
    pki = h.new_pki()
    h.launch(aws, CLUSTER, "ksim-cp-0", h.cloud_config("init", pki, CLUSTER, f"127.0.0.1:{sim.port}"), h.subnet(aws))
    sim.wait_initialized()

    # The serving certificate chains to the cluster's own CA (the one the init node's documents carried).
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(pki.ca_cert)
    ctx = ssl.create_default_context(cafile=str(ca_file))
    with socket.create_connection(("127.0.0.1", sim.port)) as raw, ctx.wrap_socket(raw, server_hostname="localhost"):
        pass
    admin = client.CoreV1Api(sim.api_client())
    assert [n.metadata.name for n in admin.list_node().items] == [sim.instances()[0]["node"]]
    assert client.VersionApi(sim.api_client()).get_code().git_version == h.VERSION

    # A client trusting another CA refuses the server.
    other_ca = tmp_path / "other.crt"
    other_ca.write_text(h.new_ca("not-the-cluster")[0])
    config = client.Configuration()
    config.host, config.ssl_ca_cert = sim.url, str(other_ca)
    config.retries = False
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        client.CoreV1Api(client.ApiClient(config)).list_node()

    # No credentials: anonymous (kubeadm's default --anonymous-auth=true) may read /version, nothing else.
    config = client.Configuration()
    config.host, config.ssl_ca_cert = sim.url, str(ca_file)
    anonymous = client.ApiClient(config)
    assert client.VersionApi(anonymous).get_code().git_version == h.VERSION
    with pytest.raises(ApiException) as denied:
        client.CoreV1Api(anonymous).list_node()
    assert denied.value.status == 403
    assert status_of(denied.value)["message"] == (
        'nodes is forbidden: User "system:anonymous" cannot list resource "nodes" in API group "" at the cluster scope'
    )
    # A bearer token that is not a bootstrap token of the cluster: 401.
    config.api_key = {"authorization": "Bearer abcdef.0123456789abcdef"}
    with pytest.raises(ApiException) as unauthorized:
        client.CoreV1Api(client.ApiClient(config)).list_node()
    assert unauthorized.value.status == 401 and status_of(unauthorized.value)["reason"] == "Unauthorized"
    # The cluster's bootstrap token: system:bootstrap:<id>, allowed what kubeadm grants (get nodes), not more.
    config.api_key = {"authorization": f"Bearer {pki.token}"}
    bootstrap = client.CoreV1Api(client.ApiClient(config))
    node_name = sim.instances()[0]["node"]
    assert bootstrap.read_node(node_name).metadata.name == node_name
    with pytest.raises(ApiException) as limited:
        bootstrap.list_namespaced_secret("kube-system")
    assert (
        limited.value.status == 403
        and f'User "system:bootstrap:{pki.token[:6]}"' in status_of(limited.value)["message"]
    )

    # A client certificate: CN is the user, O the groups; RBAC decides for anyone but system:masters.
    alice = client.CoreV1Api(sim.api_client("alice", ("team-a",)))
    with pytest.raises(ApiException) as forbidden:
        alice.list_node()
    assert forbidden.value.status == 403 and 'User "alice"' in status_of(forbidden.value)["message"]
    rbac = client.RbacAuthorizationV1Api(sim.api_client())
    rbac.create_cluster_role(
        {
            "metadata": {"name": "node-reader"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        }
    )
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": "team-a-nodes"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader"},
            "subjects": [{"kind": "Group", "name": "team-a"}],
        }
    )
    assert len(alice.list_node().items) == 1
    with pytest.raises(ApiException):
        alice.patch_node(node_name, {"spec": {"unschedulable": True}})

    # Every request is in the journal, with its user.
    requests = kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)
    assert {"alice", "system:anonymous", "kubesim-admin", f"system:bootstrap:{pki.token[:6]}"} <= {
        e.get("user") for e in requests
    }
    assert any(e.get("status") == 401 for e in requests)


def test_selectors_pagination_patches_apply_watch_and_discovery(aws, kubesim):
    sim = boot_one(aws, kubesim)[0]
    node = sim.instances()[0]["node"]
    api = sim.api_client()
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "shop"}})
    for i, (tier, env) in enumerate(
        [
            ("web", "prod"),
            ("web", "dev"),
            ("db", "prod"),
            ("cache", None),
            ("web", "prod"),
            ("db", "dev"),
            ("batch", None),
        ]
    ):
        labels = {"tier": tier, **({"env": env} if env else {})}
        core.create_namespaced_pod(
            "shop",
            {
                "metadata": {"name": f"p{i}", "labels": labels},
                "spec": {"nodeName": node if i == 6 else None, "containers": [{"name": "c", "image": "nginx"}]},
            },
        )

    def names(**kw: Any) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod("shop", **kw).items]

    assert names(label_selector="tier=web") == ["p0", "p1", "p4"]
    assert names(label_selector="tier!=web") == ["p2", "p3", "p5", "p6"]
    assert names(label_selector="tier in (db,cache)") == ["p2", "p3", "p5"]
    assert names(label_selector="tier notin (web,db),env") == []
    assert names(label_selector="!env") == ["p3", "p6"]
    assert names(label_selector="env,tier=db") == ["p2", "p5"]
    assert names(field_selector="metadata.name=p3") == ["p3"]
    # p6 is bound to the node; without a CNI the kubelet cannot start it, and the others stay unscheduled.
    assert names(field_selector=f"spec.nodeName={node}") == ["p6"]
    assert names(field_selector="status.phase=Pending,metadata.name!=p0") == ["p1", "p2", "p3", "p4", "p5", "p6"]
    with pytest.raises(ApiException) as bad:
        core.list_namespaced_pod("shop", field_selector="spec.image=x")
    assert bad.value.status == 400 and "field label not supported" in status_of(bad.value)["message"]

    first = core.list_namespaced_pod("shop", limit=3)
    assert [p.metadata.name for p in first.items] == ["p0", "p1", "p2"] and first.metadata.remaining_item_count == 4
    second = core.list_namespaced_pod("shop", limit=3, _continue=first.metadata._continue)
    third = core.list_namespaced_pod("shop", limit=3, _continue=second.metadata._continue)
    assert [p.metadata.name for p in second.items + third.items] == ["p3", "p4", "p5", "p6"]
    assert third.metadata._continue is None
    everything = core.list_pod_for_all_namespaces()
    assert {p.metadata.namespace for p in everything.items} >= {"shop", "kube-system"}
    # The raw answer (the client's public _preload_content switch: its low-level call_api changed in kubernetes 34).
    raw = json.loads(core.read_namespaced_pod("p0", "shop", _preload_content=False).data)
    assert raw["apiVersion"] == "v1" and raw["kind"] == "Pod" and raw["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("gone", "shop")
    assert status_of(missing.value) | {"metadata": {}} == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "gone" not found',
        "reason": "NotFound",
        "details": {"name": "gone", "kind": "pods"},
        "code": 404,
    }

    # Patches: strategic merge (cordon, taints replaced as a whole, labels merged), JSON merge, optimistic locking.
    before = core.read_node(node)
    core.patch_node(node, {"spec": {"unschedulable": True}, "metadata": {"labels": {"extra": "1"}}})
    patched = core.read_node(node)
    assert patched.spec.unschedulable is True and patched.metadata.labels["extra"] == "1"
    assert patched.metadata.labels["kubernetes.io/hostname"] == node
    assert int(patched.metadata.resource_version) > int(before.metadata.resource_version)
    core.patch_node(node, {"spec": {"taints": [{"key": "only", "effect": "NoSchedule"}]}})
    # The list was replaced as a whole; the node lifecycle controller may put its not-ready taint back at once (the
    # node has no CNI), exactly as on a real cluster.
    taints = {t.key for t in core.read_node(node).spec.taints}
    assert "only" in taints and taints <= {"only", "node.kubernetes.io/not-ready"}
    core.patch_node(node, {"spec": {"unschedulable": None}})
    assert core.read_node(node).spec.unschedulable is None
    cordons = [
        e
        for e in kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)
        if e.get("method") == "PATCH" and e.get("resource") == "nodes"
    ]
    assert cordons[0]["name"] == node and cordons[0]["fields"]["spec.unschedulable"] is True
    assert cordons[0]["user"] == "kubesim-admin" and cordons[0]["status"] == 200
    stale = core.read_namespaced_pod("p0", "shop")
    core.patch_namespaced_pod("p0", "shop", {"metadata": {"annotations": {"a": "1"}}})
    stale.metadata.annotations = {"b": "2"}
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_pod("p0", "shop", stale)
    assert conflict.value.status == 409 and "the object has been modified" in status_of(conflict.value)["message"]

    # Server-side apply (the dynamic client's server_side_apply): field ownership, conflicts, force.
    dyn = dynamic.DynamicClient(api)
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "shop"},
        "data": {"mode": "a", "size": "1"},
    }
    configmaps.server_side_apply(body=cm, field_manager="team-a")
    core.patch_namespaced_config_map("settings", "shop", {"data": {"size": "2"}}, field_manager="kubectl-edit")
    cm["data"] = {"mode": "b", "size": "1"}
    with pytest.raises(DynamicApiError) as clash:
        configmaps.server_side_apply(body=cm, field_manager="team-a")
    assert clash.value.status == 409
    message = json.loads(clash.value.body)["message"]
    assert 'conflict with "kubectl-edit"' in message and ".data.size" in message
    configmaps.server_side_apply(body=cm, field_manager="team-a", force_conflicts=True)
    cm["data"] = {"mode": "c"}  # size is no longer applied by team-a, which owns it after the force: removed
    configmaps.server_side_apply(body=cm, field_manager="team-a")
    stored = core.read_namespaced_config_map("settings", "shop")
    assert stored.data == {"mode": "c"}
    assert {m.manager for m in stored.metadata.managed_fields} == {"team-a"}

    # Discovery through the dynamic client; a CRD makes its kind servable.
    assert dyn.resources.get(api_version="v1", kind="Node").get().items[0].metadata.name == node
    assert dyn.resources.get(api_version="policy/v1", kind="PodDisruptionBudget").namespaced
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }
    dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition").create(body=crd)
    dyn = dynamic.DynamicClient(api)
    dyn.resources.invalidate_cache()
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    widgets.create(
        namespace="shop",
        body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}},
    )
    assert widgets.get(namespace="shop", name="w1").spec.size == 3
    groups = client.ApisApi(api).get_api_versions().groups
    assert "example.com" in {g.name for g in groups}

    # Watch: the official client's stream sees existing objects and changes.
    seen = []
    for event in watch.Watch().stream(core.list_namespaced_pod, "shop", label_selector="tier=db", timeout_seconds=2):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            core.delete_namespaced_pod("p2", "shop", grace_period_seconds=0)
        if len(seen) == 3:
            break
    assert seen == [("ADDED", "p2"), ("ADDED", "p5"), ("DELETED", "p2")]


def test_eviction_honours_pod_disruption_budgets_and_replicasets_replace_evicted_pods(aws, kubesim):
    sim, pki, subnet, _instance = boot_one(aws, kubesim)
    endpoint = f"127.0.0.1:{sim.port}"
    h.launch(aws, CLUSTER, "ksim-md-0", h.cloud_config("join-worker", pki, CLUSTER, endpoint), subnet, role="node")
    sim.create(*h.calico_and_ccm())
    sim.wait_nodes(2, ready=True)
    api = sim.api_client()
    core, apps, policy = client.CoreV1Api(api), client.AppsV1Api(api), client.PolicyV1Api(api)
    tolerate = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "tolerations": tolerate,
                        "terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "web", "image": "nginx"}],
                    },
                },
            },
        },
    )
    policy.create_namespaced_pod_disruption_budget(
        "default",
        {"metadata": {"name": "web"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}},
    )

    def ready_pods() -> list[Any]:
        pods = core.list_namespaced_pod("default", label_selector="app=web").items
        return [
            p
            for p in pods
            if p.metadata.deletion_timestamp is None
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        ]

    kubesim.wait(lambda: len(ready_pods()) == 2, 30, "2 ready web pods")
    kubesim.wait(
        lambda: policy.read_namespaced_pod_disruption_budget("web", "default").status.current_healthy == 2,
        30,
        "the PDB controller to count 2 healthy pods",
    )
    budget = policy.read_namespaced_pod_disruption_budget("web", "default").status
    assert (budget.disruptions_allowed, budget.desired_healthy, budget.expected_pods) == (0, 2, 2)
    victim = ready_pods()[0].metadata.name
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": victim, "namespace": "default"}}
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction(victim, "default", eviction)
    assert refused.value.status == 429
    body = status_of(refused.value)
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert (
        body["details"]["causes"][0]["message"] == "The disruption budget web needs 2 healthy pods and has 2 currently"
    )

    # Room in the budget: a third replica; once it is Ready the eviction goes through.
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    kubesim.wait(
        lambda: policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed == 1,
        30,
        "disruptionsAllowed 1",
    )
    core.create_namespaced_pod_eviction(victim, "default", eviction)
    evicted = core.read_namespaced_pod(victim, "default")
    assert evicted.metadata.deletion_timestamp is not None  # graceful: terminating for 30 s x time scale
    kubesim.wait(
        lambda: victim not in [p.metadata.name for p in core.list_namespaced_pod("default").items],
        30,
        "the evicted pod to terminate",
    )
    kubesim.wait(lambda: len(ready_pods()) == 3, 30, "the ReplicaSet to replace the evicted pod")
    with pytest.raises(ApiException) as gone:
        core.create_namespaced_pod_eviction(victim, "default", eviction)
    assert gone.value.status == 404

    # A pod with an EBS-backed claim: its VolumeAttachment and the Node's volumesAttached come and go with it.
    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "volumeName": "pv-data",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "db"},
            "spec": {
                "tolerations": tolerate,
                "containers": [{"name": "db", "image": "postgres"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        },
    )
    storage = client.StorageV1Api(api)
    attachment = kubesim.wait(lambda: storage.list_volume_attachment().items, 30, "a VolumeAttachment")[0]
    db_node = core.read_namespaced_pod("db", "default").spec.node_name
    assert attachment.spec.node_name == db_node and attachment.spec.source.persistent_volume_name == "pv-data"
    kubesim.wait(lambda: core.read_node(db_node).status.volumes_attached, 30, "volumesAttached on the Node")
    core.delete_namespaced_pod("db", "default")
    kubesim.wait(lambda: not storage.list_volume_attachment().items, 30, "the volume to detach")
    # Two objects, written one after the other (as the attach/detach controller does): the Node follows its
    # VolumeAttachment, and a read in between sees the attachment gone and the Node not yet updated.
    kubesim.wait(lambda: not core.read_node(db_node).status.volumes_attached, 30, "volumesAttached cleared")

    # Mirror and DaemonSet pods are evictable by the API (skipping them is the drainer's job).
    node = sim.instances()[0]["node"]
    mirror = f"kube-scheduler-{node}"
    core.create_namespaced_pod_eviction(mirror, "kube-system", {"metadata": {"name": mirror}})
    proxy = core.list_namespaced_pod("kube-system", label_selector="k8s-app=kube-proxy").items[0].metadata.name
    core.create_namespaced_pod_eviction(proxy, "kube-system", {"metadata": {"name": proxy}})
    evictions = [
        e
        for e in kubesim.journal(cluster=CLUSTER, source="apiserver", moto=False)
        if e.get("subresource") == "eviction"
    ]
    assert [(e["name"], e["status"]) for e in evictions] == [
        (victim, 429),
        (victim, 201),
        (victim, 404),
        (mirror, 201),
        (proxy, 201),
    ]


def test_portforward_to_etcd_through_the_api_server(aws, kubesim, tmp_path):
    sim, _pki, _subnet, instance = boot_one(aws, kubesim)
    node = sim.instances()[0]["node"]
    core = client.CoreV1Api(sim.api_client())
    kubesim.wait(
        lambda: core.read_namespaced_pod(f"etcd-{node}", "kube-system").status.phase == "Running",
        30,
        "the etcd static pod to run",
    )
    # KCP's way to etcd: a client certificate minted from the etcd CA, tunnelled through pods/portforward.
    cert, key, etcd_ca = sim.cert_files("cluster-api.x-k8s.io", (), ca="etcd")
    forward = portforward(core.connect_get_namespaced_pod_portforward, f"etcd-{node}", "kube-system", ports="2379")
    ctx = ssl.create_default_context(cafile=etcd_ca)
    ctx.check_hostname = False  # as KCP: the pod name is not in the etcd serving certificate
    ctx.load_cert_chain(cert, key)
    tunnel = ctx.wrap_socket(forward.socket(2379), server_hostname="etcd")
    conn = http.client.HTTPConnection("etcd")
    conn.sock = tunnel
    conn.request("POST", "/v3/cluster/member/list", body="{}", headers={"Content-Type": "application/json"})
    members = json.loads(conn.getresponse().read())["members"]
    assert [m["name"] for m in members] == [node]

    # The member powered off (control API): the open tunnel closes, a new one reports the refusal.
    sim.etcd_member(node, power="off")
    tunnel.settimeout(5)
    assert tunnel.recv(10) == b""
    tunnel.close()
    # Its ports stay the member's while it is off: no other socket (another test's etcd, an outgoing connection)
    # can take them, so powering it on again finds them free.
    etcd_urls = sim.instances()[0]["etcd"]
    assert etcd_urls["running"] is False
    for url in (etcd_urls["client_url"], etcd_urls["peer_url"]):
        with socket.socket() as other, pytest.raises(OSError, match="Address already in use"):
            other.bind(("127.0.0.1", int(url.rsplit(":", 1)[1])))
    forward = portforward(core.connect_get_namespaced_pod_portforward, f"etcd-{node}", "kube-system", ports="2379")
    sock = forward.socket(2379)
    sock.settimeout(5)
    assert sock.recv(10) == b""
    assert "connect: connection refused" in (forward.error(2379) or "")

    # A port nothing listens on: the error channel says so too.
    sim.etcd_member(node, power="on")
    forward = portforward(core.connect_get_namespaced_pod_portforward, f"etcd-{node}", "kube-system", ports="2380")
    sock = forward.socket(2380)
    sock.settimeout(5)
    assert sock.recv(10) == b""
    assert "failed to connect to localhost:2380" in (forward.error(2380) or "")

    # The instance powered off: its kubelet and API server are gone with it (one control plane: nothing serves).
    aws.client("ec2").stop_instances(InstanceIds=[instance])
    kubesim.wait(lambda: not sim.instances()[0]["kubelet_alive"], 30, "the node to power off")
    with pytest.raises(ApiException) as down:
        portforward(core.connect_get_namespaced_pod_portforward, f"etcd-{node}", "kube-system", ports="2379")
    assert down.value.status == 0  # no HTTP answer at all
    stopped = [e["event"] for e in kubesim.journal(cluster=CLUSTER, source="node", moto=False)]
    assert "powered-off" in stopped


def test_a_cluster_registered_again_under_its_name_starts_on_new_disks(aws, kubesim):
    """Tests reuse cluster names and moto hands out the same private IPs after a reset: the second cluster must
    not inherit the first one's etcd data (etcd ignores --initial-cluster on an existing data directory, so the
    old member and its dead peer URL would come back and no learner could ever catch up)."""
    sim, _pki, _subnet, _instance = boot_one(aws, kubesim)
    first = sim.etcd()["members"]
    kubesim.reset()
    aws.reset()
    sim, _pki, _subnet, _instance = boot_one(aws, kubesim)
    second = sim.etcd()["members"]
    runtime = sim.instances()[0]
    assert [m["name"] for m in first] == [m["name"] for m in second] == [runtime["node"]]
    assert second[0]["id"] != first[0]["id"]
    assert second[0]["peer_url"] == runtime["etcd"]["peer_url"]


def test_three_control_planes_from_the_collections_documents(aws, kubesim, run_module, tmp_path):
    """capa_kubeadm + capa_instance (3 control-plane replicas, secure secret backend, the collection's boot hook run
    with the real AWS CLI) -> 3 started etcd voters; a CNI and a CCM -> 3 Ready, initialised Nodes."""
    name = "ksim3"
    sim = kubesim.register(name)
    subnet_id = h.subnet(aws)
    pki = run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": name,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": "127.0.0.1", "port": sim.port},
            "output_dir": str(tmp_path / "out"),
        },
    )
    assert not pki.get("failed"), pki
    result = run_module(
        "clusterapi.aws.capa_instance",
        {
            "cluster_name": name,
            "name": "control-plane",
            "role": "control-plane",
            "replicas": 3,
            "kubernetes_version": h.VERSION,
            "instance_type": "t3.large",
            "subnets": [{"id": subnet_id, "availability_zone": "us-east-1a", "is_public": False}],
            "bootstrap": {"type": "kubeadm", "endpoint_host": "127.0.0.1", "endpoint_port": sim.port},
            # Once the API answers, the module waits for each machine to join before the next (one per step).
            "wait_timeout": 240,
        },
    )
    assert not result.get("failed"), result
    kubesim.wait(lambda: len(sim.instances()) == 3, 30, "3 instances seen")

    def voters() -> Any:
        view = sim.etcd()
        members = view.get("members", [])
        failed = [i for i in sim.instances() if i["state"] in ("failed", "rejected")]
        assert not failed, failed
        return len(members) == 3 and all(m["started"] and not m["is_learner"] for m in members)

    kubesim.wait(voters, 90, "3 started etcd voters")
    assert aws.client("secretsmanager").list_secrets()["SecretList"] == [
        s for s in aws.client("secretsmanager").list_secrets()["SecretList"] if s["Name"].startswith("clusterapi.aws/")
    ], "the boot hooks must have deleted their bootstrap chunks"
    core = client.CoreV1Api(sim.api_client())
    nodes = core.list_node().items
    assert len(nodes) == 3
    for node in nodes:
        assert node.spec.provider_id is None
        assert "node.cloudprovider.kubernetes.io/uninitialized" in [t.key for t in node.spec.taints]
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("False", "KubeletNotReady") and "NetworkPluginNotReady" in ready.message
    sim.create(*h.calico_and_ccm())
    ready_nodes = sim.wait_nodes(3, ready=True, timeout=30)
    by_instance = {i["node"]: i for i in sim.instances()}
    kubesim.wait(lambda: all(n.spec.provider_id for n in core.list_node().items), 30, "providerIDs")
    for node in core.list_node().items:
        info = by_instance[node.metadata.name]
        assert node.spec.provider_id == f"aws:///us-east-1a/{info['instance_id']}"
        assert [t.key for t in node.spec.taints] == ["node-role.kubernetes.io/control-plane"]
    assert len(ready_nodes) == 3

    # Terminate one: power-off, its member stays listed (removal is the collection's job), Node Ready=Unknown.
    victim = sorted(by_instance.values(), key=lambda i: i["machine"])[0]
    pid = victim["etcd"]["pid"]
    kubesim.config(ccm_deletes_terminated_nodes=False)
    aws.client("ec2").terminate_instances(InstanceIds=[victim["instance_id"]])
    kubesim.wait(lambda: not sim.instance(victim["instance_id"])["etcd"]["running"], 30, "the member to be killed")
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)
    members = sim.etcd()["members"]
    assert victim["node"] in [m["name"] for m in members] and len(members) == 3

    def unknown() -> bool:
        node = core.read_node(victim["node"])
        return next(c for c in node.status.conditions if c.type == "Ready").status == "Unknown"

    kubesim.wait(unknown, 30, "Ready=Unknown")

    # A second member down (control API power switch): 1 of 3 voters, writes fail - the API server answers 500 as
    # kube-apiserver does when etcd cannot commit; back on, the failed window closes.
    second = sorted(by_instance.values(), key=lambda i: i["machine"])[1]
    sim.etcd_member(second["node"], power="off")
    kubesim.wait(lambda: sim.etcd()["quorum"]["has_quorum"] is False, 30, "the quorum monitor to see the loss")
    with pytest.raises(ApiException) as timed_out:
        core.create_namespace({"metadata": {"name": "after-the-loss"}})
    assert timed_out.value.status == 500 and status_of(timed_out.value)["message"] == "etcdserver: request timed out"
    assert core.list_namespace().items  # reads are served from the API server's cache
    sim.etcd_member(second["node"], power="on")
    kubesim.wait(lambda: sim.etcd()["quorum"]["has_quorum"], 30, "writes to work again")
    window = sim.etcd()["quorum"]["failed_windows"][0]
    assert window["end"] > window["start"] and window["failures"] >= 1
    core.create_namespace({"metadata": {"name": "after-the-recovery"}})
    events = [
        e["event"]
        for e in kubesim.journal(cluster=name, source="node", moto=False)
        if e.get("instance") == victim["instance_id"]
    ]
    assert events.index("etcd-killed") < events.index("powered-off")


def test_joins_with_a_wrong_token_or_ca_hash_are_rejected(aws, kubesim):
    sim, pki, subnet, _instance = boot_one(aws, kubesim)
    endpoint = f"127.0.0.1:{sim.port}"
    kubesim.config(delays={"discovery_timeout": 0})  # the floor (60 s real) would be the wait: see below
    wrong_token = h.launch(
        aws,
        CLUSTER,
        "ksim-md-token",
        h.cloud_config("join-worker", pki, CLUSTER, endpoint, token="abcdef.0123456789abcdef"),
        subnet,
        role="node",
    )
    wrong_secret = h.launch(
        aws,
        CLUSTER,
        "ksim-md-secret",
        h.cloud_config("join-worker", pki, CLUSTER, endpoint, token=pki.token[:7] + "x" * 16),
        subnet,
        role="node",
    )
    other_ca = h.new_pki()
    wrong_hash = h.launch(
        aws,
        CLUSTER,
        "ksim-md-hash",
        h.cloud_config("join-control-plane", pki, CLUSTER, endpoint, ca_hash=other_ca.ca_hash),
        subnet,
    )
    good = h.launch(
        aws, CLUSTER, "ksim-md-good", h.cloud_config("join-worker", pki, CLUSTER, endpoint), subnet, role="node"
    )

    def settled() -> bool:
        states = {i["instance_id"]: i["state"] for i in sim.instances()}
        return all(states.get(i) in ("rejected", "joined", "failed") for i in (wrong_hash, wrong_secret, good))

    kubesim.wait(settled, 60, "the joins to settle")
    by_id = {i["instance_id"]: i for i in sim.instances()}
    assert by_id[good]["state"] == "joined"
    assert by_id[wrong_hash]["state"] == "rejected"
    assert f'none of the public keys "{pki.ca_hash}" are pinned' in by_id[wrong_hash]["reason"]
    assert by_id[wrong_secret]["state"] == "rejected"
    assert "failed to verify JWS signature" in by_id[wrong_secret]["reason"]
    # The unknown token id: kubeadm keeps retrying discovery until its timeout (floored at 60 s real) - only check
    # that it did not register meanwhile and says why it waits.
    assert by_id[wrong_token]["state"] == "bootstrapping"
    names = {n.metadata.name for n in client.CoreV1Api(sim.api_client()).list_node().items}
    assert names == {by_id[i]["node"] for i in by_id if by_id[i]["state"] == "joined"}
    assert len(names) == 2
    rejected = [e for e in kubesim.journal(cluster=CLUSTER, source="node", moto=False) if e["event"] == "rejected"]
    assert {e["instance"] for e in rejected} == {wrong_hash, wrong_secret}
    assert sim.etcd()["members"] and len(sim.etcd()["members"]) == 1  # the rejected control plane added no member


def test_an_expired_token_neither_authenticates_nor_discovers_nor_joins_and_is_cleaned_up(aws, kubesim, tmp_path):
    """The bootstrap token gates as kube-apiserver and kube-controller-manager keep them: an expired token is
    refused by the authenticator (401), is not signed into cluster-info (so discovery cannot trust the CA with
    it), a node booting with it never registers, and the token cleaner deletes its Secret."""
    sim, pki, subnet, _instance = boot_one(aws, kubesim)
    core = client.CoreV1Api(sim.api_client())

    def token_secret(token_id: str, seconds: int) -> dict[str, Any]:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))
        data = {
            "token-id": token_id,
            "token-secret": "0123456789abcdef",
            "expiration": when,
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
            "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
        }
        return {
            "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
            "type": "bootstrap.kubernetes.io/token",
            "string_data": data,
        }

    core.create_namespaced_secret("kube-system", token_secret("livetk", 600))
    core.create_namespaced_secret("kube-system", token_secret("expird", -60))
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text(pki.ca_cert)
    tls = ssl.create_default_context(cafile=str(ca_file))
    tls.check_hostname = False

    def status(token: str) -> int:
        connection = http.client.HTTPSConnection("127.0.0.1", sim.port, context=tls, timeout=10)
        connection.request(
            "GET",
            "/api/v1/namespaces/kube-public/configmaps/cluster-info",
            headers={"Authorization": f"Bearer {token}"},
        )
        return connection.getresponse().status

    # The live token authenticates (its group may not read cluster-info - only anonymous may: 403); the expired
    # one does not authenticate at all (401).
    assert status("livetk.0123456789abcdef") == 403
    assert status("expird.0123456789abcdef") == 401

    def signed() -> set[str]:
        data = core.read_namespaced_config_map("cluster-info", "kube-public").data or {}
        return {k.removeprefix("jws-kubeconfig-") for k in data if k.startswith("jws-kubeconfig-")}

    kubesim.wait(lambda: "livetk" in signed(), 10, "the live token to be signed")
    assert "expird" not in signed()

    endpoint = f"127.0.0.1:{sim.port}"
    expired = h.launch(
        aws,
        CLUSTER,
        "ksim-md-expired",
        h.cloud_config("join-worker", pki, CLUSTER, endpoint, token="expird.0123456789abcdef"),
        subnet,
        role="node",
    )
    live = h.launch(
        aws,
        CLUSTER,
        "ksim-md-live",
        h.cloud_config("join-worker", pki, CLUSTER, endpoint, token="livetk.0123456789abcdef"),
        subnet,
        role="node",
    )
    kubesim.wait(lambda: sim.instance(live).get("state") == "joined", 60, "the node with a live token to join")
    kubesim.wait(lambda: sim.instance(expired).get("state"), 30, "the other node to boot")
    assert sim.instance(expired)["state"] == "bootstrapping"  # kubeadm keeps retrying discovery, in vain
    names = {n.metadata.name for n in core.list_node().items}
    assert sim.instance(expired)["node"] not in names and sim.instance(live)["node"] in names

    def cleaned() -> bool:
        names = {s.metadata.name for s in core.list_namespaced_secret("kube-system").items}
        return "bootstrap-token-expird" not in names and "bootstrap-token-livetk" in names

    kubesim.wait(cleaned, 10, "the token cleaner to delete the expired token")


def test_knobs_never_boot_register_late_and_an_added_member_that_never_starts(aws, kubesim):
    """Knobs by machine name prefix. A voting member that is added but never started (reference scenarios A1/D:
    kubeadm before learner mode) takes a 1-member cluster to 2 voters with 1 started: writes fail at once."""
    sim, pki, subnet, _instance = boot_one(aws, kubesim)
    endpoint = f"127.0.0.1:{sim.port}"
    kubesim.knob(name_prefix="ksim-dead", never_boot=True)
    kubesim.knob(name_prefix="ksim-late", register_delay=250)  # 5 s at the default time scale
    kubesim.knob(name_prefix="ksim-cp-1", etcd_never_starts=True, etcd_learner=False)
    dead = h.launch(aws, CLUSTER, "ksim-dead-0", h.cloud_config("join-worker", pki, CLUSTER, endpoint), subnet, "node")
    late = h.launch(aws, CLUSTER, "ksim-late-0", h.cloud_config("join-worker", pki, CLUSTER, endpoint), subnet, "node")
    kubesim.wait(lambda: sim.instance(late).get("state") == "joined", 30, "the late node to register")
    node_events = kubesim.journal(cluster=CLUSTER, source="node", moto=False)
    registered = next(e for e in node_events if e["event"] == "registered" and e["instance"] == late)
    bootstrapped = next(e for e in node_events if e["event"] == "tls-bootstrap" and e["instance"] == late)
    assert registered["time"] - bootstrapped["time"] >= 250 * 0.02

    started = time.time()
    joiner = h.launch(aws, CLUSTER, "ksim-cp-1", h.cloud_config("join-control-plane", pki, CLUSTER, endpoint), subnet)
    kubesim.wait(lambda: sim.etcd()["quorum"]["failed_windows"], 30, "writes to fail")
    members = {m["peer_url"]: m for m in sim.etcd()["members"]}
    assert len(members) == 2
    unstarted = [m for m in members.values() if not m["started"]]
    assert len(unstarted) == 1 and unstarted[0]["is_learner"] is False and unstarted[0]["name"] == ""
    assert sim.instance(joiner)["etcd"]["running"] is False
    assert sim.etcd()["quorum"]["failed_windows"][0]["start"] >= started
    assert sim.instance(dead)["state"] == "never-booted"
    node_names = {i["node"] for i in sim.instances() if i["instance_id"] == dead}
    assert not node_names & {n.metadata.name for n in client.CoreV1Api(sim.api_client()).list_node().items}


def without_kubernetes_side(tmp_path) -> dict[str, str]:
    """A copy of the collection whose machine groups never ask the cluster (as the collection was before it had a
    Kubernetes side): the one line that decides it, patched in the copy - the collection itself has no switch for it.
    Returns the environment that makes ansible load the copy."""
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    copy = tmp_path / "unaware" / "ansible_collections" / "clusterapi" / "aws"
    shutil.copytree(repo / "plugins", copy / "plugins")
    shutil.copytree(repo / "meta", copy / "meta")
    shutil.copy(repo / "galaxy.yml", copy / "galaxy.yml")
    instance = copy / "plugins" / "module_utils" / "machines" / "instance.py"
    source = instance.read_text()
    decision = "asks_cluster=asks and bootstrap.type == KUBEADM and spec.role != BASTION"
    assert decision in source
    instance.write_text(source.replace(decision, "asks_cluster=False"))
    return {"ANSIBLE_COLLECTIONS_PATH": f"{tmp_path / 'unaware'}:{repo / '.build' / 'collections'}"}


def test_rolling_replacement_without_member_removal_loses_quorum(aws, kubesim, run_module, tmp_path):
    """Reference scenario E with machine groups that never ask the cluster (a patched copy of the collection, see
    ``without_kubernetes_side``): the control plane is replaced machine by machine and old instances are terminated
    without removing their etcd members -> the quorum monitor sees writes fail once the second old instance is
    gone. The collection itself keeps quorum through the same rollout (test_machine_lifecycle.py)."""
    name = "ksime"
    sim = kubesim.register(name)
    subnet_id = h.subnet(aws)
    unaware = without_kubernetes_side(tmp_path)
    assert not run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": name,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": "127.0.0.1", "port": sim.port},
            "output_dir": str(tmp_path / "out"),
        },
    ).get("failed")
    group = {
        "cluster_name": name,
        "name": "control-plane",
        "role": "control-plane",
        "replicas": 3,
        "kubernetes_version": h.VERSION,
        "instance_type": "t3.large",
        "subnets": [{"id": subnet_id, "availability_zone": "us-east-1a", "is_public": False}],
        "bootstrap": {"type": "kubeadm", "endpoint_host": "127.0.0.1", "endpoint_port": sim.port},
        "wait_timeout": 60,
    }
    assert not run_module("clusterapi.aws.capa_instance", group, env=unaware).get("failed")
    kubesim.wait(
        lambda: len([m for m in sim.etcd().get("members", []) if m["started"] and not m["is_learner"]]) == 3,
        90,
        "3 started voters",
    )
    assert sim.etcd()["quorum"]["failed_windows"] == []
    started = time.time()
    rollout = run_module("clusterapi.aws.capa_instance", {**group, "instance_type": "t3.xlarge"}, env=unaware)
    # The copy never asked etcd or the Nodes (its machines still join with tokens minted in the cluster).
    asked = [p for p in rollout["plan"] if p["call"].startswith(("k8s:", "etcd:")) and not p["call"].endswith("Secret")]
    assert not asked
    assert not rollout.get("failed"), rollout
    kubesim.wait(lambda: sim.etcd()["quorum"]["failed_windows"], 30, "a failed quorum window")
    quorum = sim.etcd()["quorum"]
    assert quorum["has_quorum"] is False
    window = quorum["failed_windows"][0]
    assert window["start"] >= started and window["end"] is None  # still failing: nothing can fix it by itself
    timeline = kubesim.journal(cluster=name, since=started)
    terminations = [e for e in timeline if e.get("operation") == "TerminateInstances"]
    assert len(terminations) >= 2
    assert terminations[1]["time"] <= window["start"]
    removed = [e for e in timeline if e["event"] == "member-removed"]
    assert removed == []  # nobody removed a member: the bug this simulator must expose
    # Every old control plane is gone and no new one could join (check-etcd/member add fail): nothing serves.
    states = {i["machine"]: i["state"] for i in sim.instances()}
    assert "joined" not in [states[m["name"]] for m in rollout["machines"]], states
    with pytest.raises(Exception, match="Connection aborted|Remote end closed|Max retries"):
        client.CoreV1Api(sim.api_client()).list_namespace(_request_timeout=5)


# EKS -----------------------------------------------------------------------------------------------------------
def test_eks_api_server_iam_tokens_aws_auth_and_nodes(aws, kubesim, tmp_path):
    import base64

    import yaml
    from botocore.credentials import Credentials

    iam, eks, ec2 = aws.client("iam"), aws.client("eks"), aws.client("ec2")
    trust = json.dumps(
        {"Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    )
    cluster_role = iam.create_role(RoleName="eks-cluster", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    subnet_id = h.subnet(aws)
    sim = kubesim.register("ekssim", kind="eks")
    described = eks.create_cluster(
        name="ekssim", roleArn=cluster_role, version="1.31", resourcesVpcConfig={"subnetIds": [subnet_id]}
    )["cluster"]
    sim.wait_initialized()
    # moto fix 8: the cluster's CA is a real certificate, and the API server's certificate chains to it.
    host = described["endpoint"].removeprefix("https://")
    ca_file = tmp_path / "eks-ca.crt"
    ca_file.write_bytes(base64.b64decode(described["certificateAuthority"]["data"]))
    ctx = ssl.create_default_context(cafile=str(ca_file))
    with socket.create_connection(("127.0.0.1", sim.port)) as raw, ctx.wrap_socket(raw, server_hostname=host):
        pass

    def api(token: str) -> client.CoreV1Api:
        config = client.Configuration()
        config.host, config.ssl_ca_cert = sim.url, str(ca_file)
        config.tls_server_name = host
        config.api_key = {"authorization": f"Bearer {token}"}
        return client.CoreV1Api(client.ApiClient(config))

    # The cluster creator (moto's default identity here) is admin; an unmapped IAM user is 401 until aws-auth maps it.
    creator = api(h.eks_token(Credentials("testing", "testing"), "us-east-1", "ekssim"))
    assert {n.metadata.name for n in creator.list_namespace().items} >= {"default", "kube-system"}
    iam.create_user(UserName="dev")
    key = iam.create_access_key(UserName="dev")["AccessKey"]
    dev_token = h.eks_token(Credentials(key["AccessKeyId"], key["SecretAccessKey"]), "us-east-1", "ekssim")
    with pytest.raises(ApiException) as unmapped:
        api(dev_token).list_node()
    assert unmapped.value.status == 401
    not_a_token = "k8s-aws-v1." + base64.urlsafe_b64encode(b"https://example.com/?Action=GetCallerIdentity").decode()
    with pytest.raises(ApiException) as refused:
        api(not_a_token).list_node()
    assert refused.value.status == 401

    # Self-managed nodes: the instance profile's role must be mapped in aws-auth.
    node_role = iam.create_role(RoleName="eks-nodes", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    iam.create_instance_profile(InstanceProfileName="eks-nodes")
    iam.add_role_to_instance_profile(InstanceProfileName="eks-nodes", RoleName="eks-nodes")
    user_data = h.nodeadm_cloud_config(described, labels={"pool": "a"})
    answer = ec2.run_instances(
        ImageId="ami-12c6146b",
        MinCount=1,
        MaxCount=1,
        InstanceType="t3.large",
        SubnetId=subnet_id,
        UserData=user_data,
        IamInstanceProfile={"Name": "eks-nodes"},
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "kubernetes.io/cluster/ekssim", "Value": "owned"},
                    {"Key": "Name", "Value": "ekssim-pool-0"},
                ],
            }
        ],
    )
    instance = answer["Instances"][0]["InstanceId"]
    kubesim.wait(lambda: sim.instance(instance).get("state") == "rejected", 30, "the unmapped node to be refused")
    assert node_role in sim.instance(instance)["reason"] and "aws-auth" in sim.instance(instance)["reason"]
    assert creator.list_node().items == []
    mapping = [
        {
            "rolearn": node_role,
            "username": "system:node:{{EC2PrivateDNSName}}",
            "groups": ["system:bootstrappers", "system:nodes"],
        }
    ]
    users = [{"userarn": "arn:aws:iam::123456789012:user/dev", "username": "dev", "groups": ["devs"]}]
    creator.create_namespaced_config_map(
        "kube-system",
        {
            "metadata": {"name": "aws-auth"},
            "data": {"mapRoles": yaml.safe_dump(mapping), "mapUsers": yaml.safe_dump(users)},
        },
    )
    kubesim.wait(lambda: sim.instance(instance).get("state") == "joined", 30, "the mapped node to join")
    node = creator.read_node(sim.instance(instance)["node"])
    assert node.metadata.labels["pool"] == "a"
    kubesim.wait(lambda: creator.read_node(node.metadata.name).spec.provider_id, 30, "EKS's CCM")
    assert creator.read_node(node.metadata.name).spec.provider_id.endswith(f"/{instance}")
    with pytest.raises(ApiException) as forbidden:  # mapped now: authenticated as "dev", but RBAC grants nothing
        api(dev_token).list_node()
    assert forbidden.value.status == 403 and 'User "dev"' in status_of(forbidden.value)["message"]

    # A managed node group: EKS registers its desired size.
    eks.create_nodegroup(
        clusterName="ekssim",
        nodegroupName="ng-0",
        nodeRole=node_role,
        subnets=[subnet_id],
        scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 2},
    )
    selector = "eks.amazonaws.com/nodegroup=ng-0"

    def group_nodes() -> list[Any] | None:
        nodes = creator.list_node(label_selector=selector).items
        return nodes if len(nodes) == 2 and all(n.spec.provider_id for n in nodes) else None

    group = kubesim.wait(group_nodes, 30, "2 initialised node group nodes")
    assert all(n.metadata.labels["eks.amazonaws.com/capacityType"] == "ON_DEMAND" for n in group)
    assert len(group) == 2
