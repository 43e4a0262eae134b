"""The cluster-side actors a real workload cluster runs, as far as tests of the collection can see them:

* kube-scheduler (binds pending pods to Ready, schedulable nodes whose NoSchedule/NoExecute taints they tolerate),
* kubelets (run bound pods, report Ready, finish graceful deletions - only while the node is powered on),
* kube-controller-manager: node lifecycle (``not-ready``/``unreachable`` taints, ``Ready=Unknown`` after the node
  monitor grace period), DaemonSet, Deployment, ReplicaSet, disruption (PDB status), garbage collector (owner
  references), pod GC (pods of deleted nodes), namespace lifecycle (``default`` service accounts, deletion),
* the AWS cloud controller manager once one is deployed (providerID, uninitialized taint, zone labels, deletion of
  Nodes whose instance is terminated).

One thread per cluster runs ``tick()`` every 50 ms; every write goes through the same store as the API.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from typing import TYPE_CHECKING, Any

from . import objects as ob
from .store import ApiError, now_iso, random_suffix

if TYPE_CHECKING:
    from .cluster import Cluster

UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane"
NETWORK_NOT_READY = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin "
    "returns error: cni plugin not initialized"
)
# Tolerations the DaemonSet controller adds to every daemon pod (pkg/controller/daemon/util).
DAEMON_TOLERATIONS = [
    {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute"},
    {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"},
]
KCM = "kube-controller-manager"


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for t in tolerations or []:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator", "Equal")
        if not t.get("key") and op == "Exists":
            return True
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def set_condition(obj: dict[str, Any], kind: str, status: str, reason: str = "", message: str = "") -> None:
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    now = now_iso()
    for c in conditions:
        if c.get("type") == kind:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message)
            if "lastHeartbeatTime" in c:
                c["lastHeartbeatTime"] = now
            return
    entry = {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
    conditions.append(entry)


def pod_ready(pod: dict[str, Any]) -> bool:
    c = condition(pod, "Ready")
    return bool(c and c.get("status") == "True")


def owner(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def scaled_int_or_percent(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        fraction = int(value[:-1]) * total / 100
        return math.ceil(fraction) if round_up else math.floor(fraction)
    return int(value)


class ControllerManager:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.api = cluster.api
        self.store = cluster.api.store
        t = cluster.api.table
        self.pods = t.find("", "v1", "pods")
        self.nodes = t.find("", "v1", "nodes")
        self.namespaces = t.find("", "v1", "namespaces")
        self.sas = t.find("", "v1", "serviceaccounts")
        self.ds = t.find("apps", "v1", "daemonsets")
        self.deploys = t.find("apps", "v1", "deployments")
        self.rs = t.find("apps", "v1", "replicasets")
        self.pdbs = t.find("policy", "v1", "poddisruptionbudgets")
        self.pvcs = t.find("", "v1", "persistentvolumeclaims")
        self.attachments = t.find("storage.k8s.io", "v1", "volumeattachments")
        self._unused_since: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"kcm-{cluster.name}", daemon=True)
        self._started_at: dict[str, float] = {}  # pod uid -> when the kubelet started it
        self._notready_since: dict[str, float] = {}
        self._ccm_since: float | None = None
        self._gone_nodes: dict[str, float] = {}
        self.errors: list[str] = []
        self._ticks = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():  # a cluster that never ran kubeadm init never started its controllers
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - keep the cluster running; the error is kept for tests
                import traceback

                traceback.print_exc()
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def tick(self) -> None:
        if not self.cluster.api.listening:
            return
        self.namespace_lifecycle()
        self.cloud_controller()
        self.node_lifecycle()
        self.daemonsets()
        self.deployments()
        self.replicasets()
        self.scheduler()
        self.kubelets()
        self.garbage_collector()
        self.disruption()
        self.attach_detach()
        self._ticks += 1
        if self._ticks % 10 == 1:
            from .kubeadm import clean_tokens, sign_cluster_info

            clean_tokens(self.cluster)
            sign_cluster_info(self.cluster)

    # --------------------------------------------------------------------------------------------------------
    def namespace_lifecycle(self) -> None:
        for ns in self.store.items(self.namespaces):
            name = ns["metadata"]["name"]
            if ns["metadata"].get("deletionTimestamp"):
                left = 0
                for res in self.api.table.all():
                    if not res.namespaced:
                        continue
                    for obj in self.store.items(res, name):
                        left += 1
                        try:
                            if res.plural == "pods":
                                self.store.delete(res, name, obj["metadata"]["name"], scale=self.cluster.scale)
                            else:
                                self.store.remove(res, name, obj["metadata"]["name"])
                        except ApiError:
                            pass
                if not left:
                    try:
                        self.store.remove(self.namespaces, "", name)
                    except ApiError:
                        pass
                continue
            with self.store.lock:
                missing = self.store.peek(self.sas, name, "default") is None
            if missing:
                try:
                    self.store.create(self.sas, name, {"metadata": {"name": "default"}}, KCM)
                except ApiError:
                    pass

    # --------------------------------------------------------------------------------------------------------
    def node_lifecycle(self) -> None:
        now = time.monotonic()
        grace = self.cluster.delay("node_monitor_grace")
        for node in self.store.items(self.nodes):
            name = node["metadata"]["name"]
            runtime = self.cluster.node_runtime(name)
            alive = runtime is not None and runtime.kubelet_alive
            if alive:
                self._notready_since.pop(name, None)
            else:
                self._notready_since.setdefault(name, now)
            unknown = not alive and now - self._notready_since.get(name, now) >= grace

            def update(n: dict[str, Any], unknown: bool = unknown, runtime: Any = runtime) -> None:
                was = (condition(n, "Ready") or {}).get("status")  # set_condition changes the dict in place
                if unknown:
                    message = "Kubelet stopped posting node status."
                    for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
                        set_condition(n, kind, "Unknown", "NodeStatusUnknown", message)
                elif runtime is not None and runtime.kubelet_alive:
                    if runtime.network_ready():
                        set_condition(n, "Ready", "True", "KubeletReady", "kubelet is posting ready status")
                    else:
                        set_condition(n, "Ready", "False", "KubeletNotReady", NETWORK_NOT_READY)
                    for kind, reason in (
                        ("MemoryPressure", "KubeletHasSufficientMemory"),
                        ("DiskPressure", "KubeletHasNoDiskPressure"),
                        ("PIDPressure", "KubeletHasSufficientPID"),
                    ):
                        set_condition(n, kind, "False", reason, f"kubelet has sufficient {kind[:-8].lower()}")
                status = (condition(n, "Ready") or {}).get("status")
                if status == "True" and was != "True":
                    # When a machine became available to a reconciler: the benchmark's upgrade limit reads it.
                    self.cluster.journal.record(
                        "node", "node-ready", cluster=self.cluster.name, node=n["metadata"]["name"]
                    )
                taints = [t for t in n["spec"].get("taints") or [] if t.get("key") not in (NOT_READY, UNREACHABLE)]
                if status == "False":
                    taints.append({"key": NOT_READY, "effect": "NoSchedule"})
                elif status == "Unknown":
                    taints.append({"key": UNREACHABLE, "effect": "NoSchedule"})
                    taints.append({"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now_iso()})
                old = [t for t in n["spec"].get("taints") or [] if t.get("key") in (NOT_READY, UNREACHABLE)]
                new = [t for t in taints if t.get("key") in (NOT_READY, UNREACHABLE)]
                if [(t["key"], t["effect"]) for t in old] != [(t["key"], t["effect"]) for t in new]:
                    if taints:
                        n["spec"]["taints"] = taints
                    else:
                        n["spec"].pop("taints", None)

            self.store.mutate(self.nodes, "", name, update, KCM)
            if unknown:
                # The node lifecycle controller marks the pods of an unreachable node not Ready.
                for pod in self.store.list(self.pods, None, field_selector=f"spec.nodeName={name}")["items"]:
                    if pod_ready(pod):
                        self.store.mutate(
                            self.pods,
                            pod["metadata"]["namespace"],
                            pod["metadata"]["name"],
                            lambda p: set_condition(p, "Ready", "False", "NodeLost", "Node is unreachable"),
                            KCM,
                        )

    # --------------------------------------------------------------------------------------------------------
    def node_schedulable_for(self, node: dict[str, Any], pod_spec: dict[str, Any], daemon: bool = False) -> bool:
        if node["metadata"].get("deletionTimestamp"):
            return False
        tolerations = list(pod_spec.get("tolerations") or [])
        if daemon:
            tolerations += DAEMON_TOLERATIONS
            if pod_spec.get("hostNetwork"):
                tolerations.append(
                    {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}
                )
        elif node["spec"].get("unschedulable"):
            return False
        for taint in node["spec"].get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
                return False
        selector = pod_spec.get("nodeSelector") or {}
        labels = node["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return False
        affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        if affinity:
            terms = affinity.get("nodeSelectorTerms") or []
            ok = False
            for term in terms:
                reqs = ob.selector_from_dict({"matchExpressions": term.get("matchExpressions") or []})
                fields = term.get("matchFields") or []
                if ob.labels_match(reqs, labels) and all(
                    node["metadata"]["name"] in (f.get("values") or [])
                    for f in fields
                    if f.get("key") == "metadata.name"
                ):
                    ok = True
            if not ok:
                return False
        return True

    def scheduler(self) -> None:
        nodes = self.store.items(self.nodes)
        ready = [n for n in nodes if (condition(n, "Ready") or {}).get("status") == "True"]
        load: dict[str, int] = {}
        for pod in self.store.items(self.pods):
            if pod["spec"].get("nodeName"):
                load[pod["spec"]["nodeName"]] = load.get(pod["spec"]["nodeName"], 0) + 1
        for pod in self.store.items(self.pods):
            if pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            candidates = [n for n in ready if self.node_schedulable_for(n, pod["spec"])]
            if not candidates:
                continue
            target = min(candidates, key=lambda n: (load.get(n["metadata"]["name"], 0), n["metadata"]["name"]))
            name = target["metadata"]["name"]
            load[name] = load.get(name, 0) + 1

            def bind(p: dict[str, Any], name: str = name) -> None:
                p["spec"]["nodeName"] = name
                set_condition(p, "PodScheduled", "True")

            self.store.mutate(self.pods, pod["metadata"]["namespace"], pod["metadata"]["name"], bind, "kube-scheduler")

    # --------------------------------------------------------------------------------------------------------
    def kubelets(self) -> None:
        now = time.monotonic()
        start_delay = self.cluster.delay("pod_start")
        for pod in self.store.items(self.pods):
            meta = pod["metadata"]
            node = pod["spec"].get("nodeName")
            if not node:
                continue
            runtime = self.cluster.node_runtime(node)
            if runtime is None or not runtime.kubelet_alive:
                continue
            key = ("", "pods", meta["namespace"], meta["name"])
            if meta.get("deletionTimestamp"):
                deadline = self.store.deadlines.get(key)
                # The kubelet stops the containers (SIGTERM) and removes the pod once they exited; a process that
                # ignores SIGTERM is killed at the end of the grace period. Pods here exit at the deadline.
                if deadline is None or now >= deadline:
                    try:
                        self.store.remove(self.pods, meta["namespace"], meta["name"])
                    except ApiError:
                        pass
                continue
            host_network = bool(pod["spec"].get("hostNetwork"))
            can_run = host_network or runtime.network_ready()
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                continue
            started = self._started_at.setdefault(meta["uid"], now)
            if not can_run or now - started < start_delay:
                continue
            if phase == "Running" and pod_ready(pod):
                continue

            def run(p: dict[str, Any], runtime: Any = runtime) -> None:
                status = p.setdefault("status", {})
                status["phase"] = "Running"
                status["hostIP"] = runtime.private_ip
                status.setdefault("podIP", runtime.private_ip if p["spec"].get("hostNetwork") else runtime.pod_ip())
                status.setdefault("startTime", now_iso())
                for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
                    set_condition(p, kind, "True")
                status["containerStatuses"] = [
                    {
                        "name": c.get("name", "c"),
                        "ready": True,
                        "restartCount": 0,
                        "started": True,
                        "image": c.get("image", ""),
                        "imageID": "",
                        "state": {"running": {"startedAt": now_iso()}},
                    }
                    for c in p["spec"].get("containers") or []
                ]
                if not p["spec"].get("hostNetwork"):
                    pass

            self.store.mutate(self.pods, meta["namespace"], meta["name"], run, f"kubelet-{node}")

    # --------------------------------------------------------------------------------------------------------
    def daemonsets(self) -> None:
        nodes = self.store.items(self.nodes)
        pods = self.store.items(self.pods)
        for ds in self.store.items(self.ds):
            meta = ds["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            template = (ds.get("spec") or {}).get("template") or {}
            mine = [p for p in pods if (owner(p) or {}).get("uid") == meta["uid"]]
            by_node: dict[str, list[dict[str, Any]]] = {}
            for p in mine:
                by_node.setdefault(p["spec"].get("nodeName", ""), []).append(p)
            wanted = [n for n in nodes if self.node_schedulable_for(n, template.get("spec") or {}, daemon=True)]
            wanted_names = {n["metadata"]["name"] for n in wanted}
            for node in wanted:
                name = node["metadata"]["name"]
                if any(not p["metadata"].get("deletionTimestamp") for p in by_node.get(name, [])):
                    continue
                self._create_pod(ds, "DaemonSet", template, meta["name"] + "-", node=name)
            for name, found in by_node.items():
                if name not in wanted_names and not any(n["metadata"]["name"] == name for n in nodes):
                    for p in found:
                        try:
                            self.store.remove(self.pods, p["metadata"]["namespace"], p["metadata"]["name"])
                        except ApiError:
                            pass
            ready = sum(1 for p in mine if pod_ready(p) and p["spec"].get("nodeName") in wanted_names)
            scheduled = sum(1 for n in wanted_names if by_node.get(n))
            status = {
                "currentNumberScheduled": scheduled,
                "desiredNumberScheduled": len(wanted_names),
                "numberAvailable": ready,
                "numberReady": ready,
                "numberMisscheduled": 0,
                "updatedNumberScheduled": scheduled,
                "observedGeneration": meta.get("generation", 1),
            }
            if ds.get("status") != status:
                self.store.mutate(self.ds, meta["namespace"], meta["name"], lambda d, s=status: d.update(status=s), KCM)

    def _create_pod(
        self,
        parent: dict[str, Any],
        kind: str,
        template: dict[str, Any],
        prefix: str,
        node: str | None = None,
        extra_labels: dict[str, str] | None = None,
    ) -> None:
        meta = parent["metadata"]
        tmeta = template.get("metadata") or {}
        spec = dict(template.get("spec") or {})
        if kind == "DaemonSet":
            spec["tolerations"] = list(spec.get("tolerations") or []) + DAEMON_TOLERATIONS
            # The DaemonSet controller pins its pod with node affinity; the simulator binds it directly.
            spec["nodeName"] = node
        pod = {
            "metadata": {
                "name": prefix + random_suffix(),
                "namespace": meta["namespace"],
                "labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
                "annotations": dict(tmeta.get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": kind,
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }
        try:
            self.store.create(self.pods, meta["namespace"], pod, KCM)
        except ApiError:
            pass

    # --------------------------------------------------------------------------------------------------------
    def deployments(self) -> None:
        all_rs = self.store.items(self.rs)
        for dep in self.store.items(self.deploys):
            meta = dep["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = dep.get("spec") or {}
            template = spec.get("template") or {}
            digest = hashlib.sha256(repr(sorted(_flat(template))).encode()).hexdigest()[:10]
            name = f"{meta['name']}-{digest}"
            mine = [r for r in all_rs if (owner(r) or {}).get("uid") == meta["uid"]]
            current = next((r for r in mine if r["metadata"]["name"] == name), None)
            replicas = spec.get("replicas", 1)
            if current is None:
                tmpl = {
                    "metadata": {
                        **(template.get("metadata") or {}),
                        "labels": {
                            **((template.get("metadata") or {}).get("labels") or {}),
                            "pod-template-hash": digest,
                        },
                    },
                    "spec": template.get("spec") or {},
                }
                selector = dict(spec.get("selector") or {})
                selector["matchLabels"] = {**(selector.get("matchLabels") or {}), "pod-template-hash": digest}
                rs = {
                    "metadata": {
                        "name": name,
                        "namespace": meta["namespace"],
                        "labels": tmpl["metadata"]["labels"],
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": meta["name"],
                                "uid": meta["uid"],
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                    "spec": {"replicas": replicas, "selector": selector, "template": tmpl},
                }
                try:
                    self.store.create(self.rs, meta["namespace"], rs, KCM)
                except ApiError:
                    pass
                continue
            if current["spec"].get("replicas") != replicas:
                self.store.mutate(
                    self.rs, meta["namespace"], name, lambda r, n=replicas: r["spec"].update(replicas=n), KCM
                )
            for old in mine:
                if old["metadata"]["name"] != name and old["spec"].get("replicas", 0) != 0:
                    self.store.mutate(
                        self.rs, meta["namespace"], old["metadata"]["name"], lambda r: r["spec"].update(replicas=0), KCM
                    )
            rs_status = current.get("status") or {}
            status = {
                "observedGeneration": meta.get("generation", 1),
                "replicas": rs_status.get("replicas", 0),
                "updatedReplicas": rs_status.get("replicas", 0),
                "readyReplicas": rs_status.get("readyReplicas", 0),
                "availableReplicas": rs_status.get("availableReplicas", 0),
                "unavailableReplicas": max(0, replicas - rs_status.get("availableReplicas", 0)),
            }
            available = status["availableReplicas"] >= replicas
            old_conditions = (dep.get("status") or {}).get("conditions") or []
            cond = {
                "type": "Available",
                "status": "True" if available else "False",
                "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
                "message": "Deployment has minimum availability."
                if available
                else "Deployment does not have minimum availability.",
            }
            prior = next((c for c in old_conditions if c.get("type") == "Available"), None)
            cond["lastTransitionTime"] = (
                prior["lastTransitionTime"] if prior and prior.get("status") == cond["status"] else now_iso()
            )
            cond["lastUpdateTime"] = (
                prior.get("lastUpdateTime", now_iso()) if prior and prior.get("status") == cond["status"] else now_iso()
            )
            status["conditions"] = [cond]
            if dep.get("status") != status:
                self.store.mutate(
                    self.deploys, meta["namespace"], meta["name"], lambda d, s=status: d.update(status=s), KCM
                )

    def replicasets(self) -> None:
        pods = self.store.items(self.pods)
        for rs in self.store.items(self.rs):
            meta = rs["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            spec = rs.get("spec") or {}
            mine = [p for p in pods if (owner(p) or {}).get("uid") == meta["uid"]]
            # Terminating pods do not count: the ReplicaSet replaces an evicted pod at once.
            active = [p for p in mine if not p["metadata"].get("deletionTimestamp")]
            replicas = spec.get("replicas", 1)
            for _missing in range(replicas - len(active)):
                self._create_pod(rs, "ReplicaSet", spec.get("template") or {}, meta["name"] + "-")
            if len(active) > replicas:
                surplus = sorted(active, key=lambda p: (pod_ready(p), p["metadata"]["creationTimestamp"]))
                for p in surplus[: len(active) - replicas]:
                    try:
                        self.store.delete(
                            self.pods, p["metadata"]["namespace"], p["metadata"]["name"], scale=self.cluster.scale
                        )
                    except ApiError:
                        pass
            ready = sum(1 for p in active if pod_ready(p))
            status = {
                "replicas": len(active),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "fullyLabeledReplicas": len(active),
                "observedGeneration": meta.get("generation", 1),
            }
            if rs.get("status") != status:
                self.store.mutate(self.rs, meta["namespace"], meta["name"], lambda r, s=status: r.update(status=s), KCM)

    # --------------------------------------------------------------------------------------------------------
    def garbage_collector(self) -> None:
        everything = self.store.ownership(self.api.table.all())
        uids = {uid for _res, _ns, _name, uid, _owners, _deleting in everything}
        for res, ns, name, _uid, owners, deleting in everything:
            if owners and all(owner not in uids for owner in owners) and not deleting:
                try:
                    self.store.delete(res, ns, name, scale=self.cluster.scale)
                except ApiError:
                    pass
        # Pod GC: pods bound to a Node that no longer exists are deleted.
        nodes = {n["metadata"]["name"] for n in self.store.items(self.nodes)}
        now = time.monotonic()
        for pod in self.store.items(self.pods):
            node = pod["spec"].get("nodeName")
            if node and node not in nodes:
                since = self._gone_nodes.setdefault(node, now)
                if now - since >= self.cluster.delay("pod_gc"):
                    try:
                        self.store.remove(self.pods, pod["metadata"]["namespace"], pod["metadata"]["name"])
                    except ApiError:
                        pass
        for node in list(self._gone_nodes):
            if node in nodes:
                del self._gone_nodes[node]

    # --------------------------------------------------------------------------------------------------------
    def attach_detach(self) -> None:
        """The attach/detach controller with a CSI driver (EBS): a VolumeAttachment per (volume, node) that a
        scheduled pod uses through a PVC; detached ``volume_detach`` after the last such pod left the node; the
        Node's ``status.volumesAttached`` follows."""
        wanted: dict[str, tuple[str, str]] = {}
        for pod in self.store.items(self.pods):
            node = pod["spec"].get("nodeName")
            if not node or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for volume in pod["spec"].get("volumes") or []:
                claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if not claim:
                    continue
                with self.store.lock:
                    pvc = self.store.peek(self.pvcs, pod["metadata"]["namespace"], claim)
                pv = ((pvc or {}).get("spec") or {}).get(
                    "volumeName"
                ) or f"pvc-{(pvc or {}).get('metadata', {}).get('uid', claim)}"
                name = "csi-" + hashlib.sha256(f"{pv}ebs.csi.aws.com{node}".encode()).hexdigest()
                wanted[name] = (pv, node)
        now = time.monotonic()
        existing = {a["metadata"]["name"]: a for a in self.store.items(self.attachments)}
        for name, (pv, node) in wanted.items():
            self._unused_since.pop(name, None)
            if name not in existing:
                try:
                    self.store.create(
                        self.attachments,
                        "",
                        {
                            "metadata": {"name": name},
                            "spec": {
                                "attacher": "ebs.csi.aws.com",
                                "nodeName": node,
                                "source": {"persistentVolumeName": pv},
                            },
                        },
                        KCM,
                    )
                    self.store.mutate(
                        self.attachments, "", name, lambda a: a.update(status={"attached": True}), "csi-attacher"
                    )
                except ApiError:
                    pass
        for name, attachment in existing.items():
            if name in wanted or attachment["spec"].get("attacher") != "ebs.csi.aws.com":
                continue
            since = self._unused_since.setdefault(name, now)
            if now - since >= self.cluster.delay("volume_detach"):
                try:
                    self.store.remove(self.attachments, "", name)
                except ApiError:
                    pass
                self._unused_since.pop(name, None)
        attached: dict[str, list[dict[str, str]]] = {}
        for attachment in self.store.items(self.attachments):
            if (attachment.get("status") or {}).get("attached"):
                source = attachment["spec"].get("source", {}).get("persistentVolumeName", "")
                attached.setdefault(attachment["spec"].get("nodeName", ""), []).append(
                    {"name": f"kubernetes.io/csi/ebs.csi.aws.com^{source}", "devicePath": ""}
                )
        for node in self.store.items(self.nodes):
            volumes = attached.get(node["metadata"]["name"], [])
            if (node.get("status") or {}).get("volumesAttached", []) != volumes:

                def update(n: dict[str, Any], v: list[dict[str, str]] = volumes) -> None:
                    if v:
                        n.setdefault("status", {})["volumesAttached"] = v
                        n["status"]["volumesInUse"] = [x["name"] for x in v]
                    else:
                        n.get("status", {}).pop("volumesAttached", None)
                        n.get("status", {}).pop("volumesInUse", None)

                self.store.mutate(self.nodes, "", node["metadata"]["name"], update, KCM)

    # --------------------------------------------------------------------------------------------------------
    def cloud_controller(self) -> None:
        """The AWS cloud controller manager, from the moment a Deployment/DaemonSet of it exists in kube-system."""
        # EKS runs the cloud controller in its own control plane.
        present = self.cluster.kind == "eks" or any(
            "cloud-controller-manager" in o["metadata"]["name"]
            for res in (self.ds, self.deploys)
            for o in self.store.items(res, "kube-system")
        )
        if not present:
            self._ccm_since = None
            return
        now = time.monotonic()
        if self._ccm_since is None:
            self._ccm_since = now
            self.cluster.journal.record("cluster", "ccm-detected", cluster=self.cluster.name)
        if now - self._ccm_since < self.cluster.delay("ccm_start"):
            return
        for node in self.store.items(self.nodes):
            name = node["metadata"]["name"]
            runtime = self.cluster.node_runtime(name)
            if runtime is None:
                continue
            if runtime.instance_gone and self.cluster.config.get("ccm_deletes_terminated_nodes", True):
                try:
                    self.store.remove(self.nodes, "", name)
                    self.cluster.journal.record(
                        "node",
                        "node-deleted-by-ccm",
                        cluster=self.cluster.name,
                        node=name,
                        instance=runtime.instance_id,
                    )
                except ApiError:
                    pass
                continue
            if node["spec"].get("providerID") and not any(
                t.get("key") == UNINITIALIZED for t in node["spec"].get("taints") or []
            ):
                continue

            def initialize(n: dict[str, Any], r: Any = runtime) -> None:
                n["spec"]["providerID"] = f"aws:///{r.az}/{r.instance_id}"
                taints = [t for t in n["spec"].get("taints") or [] if t.get("key") != UNINITIALIZED]
                if taints:
                    n["spec"]["taints"] = taints
                else:
                    n["spec"].pop("taints", None)
                labels = n["metadata"].setdefault("labels", {})
                labels.update(
                    {
                        "node.kubernetes.io/instance-type": r.instance_type,
                        "beta.kubernetes.io/instance-type": r.instance_type,
                        "topology.kubernetes.io/zone": r.az,
                        "topology.kubernetes.io/region": r.region,
                        "failure-domain.beta.kubernetes.io/zone": r.az,
                        "failure-domain.beta.kubernetes.io/region": r.region,
                    }
                )
                n.setdefault("status", {})["addresses"] = [
                    {"type": "InternalIP", "address": r.private_ip},
                    {"type": "InternalDNS", "address": r.name},
                    {"type": "Hostname", "address": r.name},
                ]

            self.store.mutate(self.nodes, "", name, initialize, "aws-cloud-controller-manager")
            self.cluster.journal.record(
                "node",
                "ccm-initialized",
                cluster=self.cluster.name,
                node=name,
                instance=runtime.instance_id,
                provider_id=f"aws:///{runtime.az}/{runtime.instance_id}",
            )

    # --------------------------------------------------------------------------------------------------------
    def disruption(self) -> None:
        for pdb in self.store.items(self.pdbs):
            self.refresh_pdb(pdb)

    def pdb_pods(self, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        selector = ob.selector_from_dict((pdb.get("spec") or {}).get("selector"))
        return [
            p
            for p in self.store.items(self.pods, pdb["metadata"]["namespace"])
            if ob.labels_match(selector, p["metadata"].get("labels"))
        ]

    def expected_count(self, pdb: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[int, str | None]:
        """The disruption controller's expected pod count: pods' controllers' scale (or the pod count for an
        integer minAvailable)."""
        spec = pdb.get("spec") or {}
        if "minAvailable" in spec and not str(spec["minAvailable"]).endswith("%"):
            return len(pods), None
        scales: dict[str, int] = {}
        for pod in pods:
            ref = owner(pod)
            if ref is None:
                return 0, f'found no controllers for pod "{pod["metadata"]["name"]}"'
            if ref.get("kind") == "ReplicaSet":
                with self.store.lock:
                    rs = self.store.peek(self.rs, pod["metadata"]["namespace"], ref["name"])
                    if rs is None:
                        return 0, f'replicasets.apps "{ref["name"]}" not found'
                    parent = owner(rs)
                    if parent and parent.get("kind") == "Deployment":
                        dep = self.store.peek(self.deploys, pod["metadata"]["namespace"], parent["name"])
                        scales[parent["uid"]] = (dep or {}).get("spec", {}).get("replicas", 0)
                    else:
                        scales[ref["uid"]] = rs["spec"].get("replicas", 0)
            elif ref.get("kind") in ("StatefulSet", "ReplicationController"):
                res = self.api.table.by_plural(
                    "apps" if ref["kind"] == "StatefulSet" else "",
                    "statefulsets" if ref["kind"] == "StatefulSet" else "replicationcontrollers",
                )
                with self.store.lock:
                    found = self.store.peek(res, pod["metadata"]["namespace"], ref["name"]) if res else None
                scales[ref["uid"]] = (found or {}).get("spec", {}).get("replicas", 0)
            else:
                # DaemonSets and others have no scale subresource: the controller cannot compute a budget.
                return 0, f"{ref.get('kind')} {ref.get('name')} does not implement the scale subresource"
        return sum(scales.values()), None

    def refresh_pdb(self, pdb: dict[str, Any]) -> dict[str, Any]:
        spec = pdb.get("spec") or {}
        pods = self.pdb_pods(pdb)
        old = pdb.get("status") or {}
        disrupted = dict(old.get("disruptedPods") or {})
        live = {p["metadata"]["name"]: p for p in pods}
        # An eviction the controller has not yet seen complete keeps counting as a disruption for 2 minutes.
        for name in list(disrupted):
            pod = live.get(name)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                del disrupted[name]
        healthy = sum(
            1
            for p in pods
            if pod_ready(p) and not p["metadata"].get("deletionTimestamp") and p["metadata"]["name"] not in disrupted
        )
        expected, error = self.expected_count(pdb, pods)
        if error:
            desired, allowed = 0, 0
        elif "minAvailable" in spec:
            desired = scaled_int_or_percent(spec["minAvailable"], expected, True)
            allowed = max(0, healthy - desired)
        elif "maxUnavailable" in spec:
            unavailable = scaled_int_or_percent(spec["maxUnavailable"], expected, True)
            desired = max(0, expected - unavailable)
            allowed = max(0, healthy - desired)
        else:
            desired, allowed = 0, max(0, healthy)
        status = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        allowed_cond = "True" if allowed > 0 else "False"
        reason = "SufficientPods" if allowed > 0 else ("SyncFailed" if error else "InsufficientPods")
        prior = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
        status["conditions"] = [
            {
                "type": "DisruptionAllowed",
                "status": allowed_cond,
                "reason": reason,
                "message": error or "",
                "observedGeneration": pdb["metadata"].get("generation", 1),
                "lastTransitionTime": prior["lastTransitionTime"]
                if prior and prior.get("status") == allowed_cond
                else now_iso(),
            }
        ]
        if old != status:
            out = self.store.mutate(
                self.pdbs,
                pdb["metadata"]["namespace"],
                pdb["metadata"]["name"],
                lambda p, s=status: p.update(status=s),
                KCM,
            )
            return out or pdb
        return pdb

    def evict(self, ns: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST pods/<name>/eviction`` (pkg/registry/core/pod/storage/eviction.go)."""
        with self.store.lock:
            pod = self.store.peek(self.pods, ns, name)
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
            pod = self.store.get(self.pods, ns, name)
            options = body.get("deleteOptions") or {}
            grace = options.get("gracePeriodSeconds")
            phase = (pod.get("status") or {}).get("phase")
            success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
            # Terminal, pending and already deleting pods are deleted without looking at budgets.
            if phase in ("Succeeded", "Failed", "Pending") or pod["metadata"].get("deletionTimestamp"):
                self.store.delete(self.pods, ns, name, grace, scale=self.cluster.scale)
                return success
            pdbs = [
                p
                for p in self.store.items(self.pdbs, ns)
                if ob.labels_match(
                    ob.selector_from_dict((p.get("spec") or {}).get("selector")), pod["metadata"].get("labels")
                )
            ]
            if len(pdbs) > 1:
                raise ApiError(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
            if pdbs:
                pdb = self.refresh_pdb(pdbs[0])
                status = pdb.get("status") or {}
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
                unready_ok = not pod_ready(pod) and (
                    policy == "AlwaysAllow" or status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0) > 0
                )
                if not unready_ok:
                    if status.get("disruptionsAllowed", 0) <= 0:
                        raise ApiError(
                            429,
                            "TooManyRequests",
                            "Cannot evict pod as it would violate the pod's disruption budget.",
                            {
                                "causes": [
                                    {
                                        "reason": "DisruptionBudget",
                                        "message": f"The disruption budget {pdb['metadata']['name']} needs "
                                        f"{status.get('desiredHealthy', 0)} healthy pods and has "
                                        f"{status.get('currentHealthy', 0)} currently",
                                    }
                                ]
                            },
                        )

                    def take(p: dict[str, Any]) -> None:
                        s = p.setdefault("status", {})
                        s["disruptionsAllowed"] = s.get("disruptionsAllowed", 0) - 1
                        s.setdefault("disruptedPods", {})[name] = now_iso()

                    self.store.mutate(self.pdbs, ns, pdb["metadata"]["name"], take, "kube-apiserver")
            self.store.delete(self.pods, ns, name, grace, scale=self.cluster.scale)
            return success


def _flat(node: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        return [item for k, v in node.items() for item in _flat(v, f"{prefix}.{k}")]
    if isinstance(node, list):
        return [item for i, v in enumerate(node) for item in _flat(v, f"{prefix}[{i}]")]
    return [(prefix, repr(node))]
