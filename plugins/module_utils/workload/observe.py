# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (workload-cluster client): what the workload cluster says, as typed values (no decisions here).

A :class:`Workload` is one observation for one step of a run: the Nodes (:class:`NodeView`), the control-plane
static pods per node, and etcd's view of itself. The machines package decides from it (``machines/lifecycle.py``).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .etcd import EtcdStatus

# The static pods kubeadm runs on a control-plane node, as mirror pods in kube-system labelled ``component``.
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def provider_id(zone: str, instance_id: str) -> str:
    """CAPA's providerID of an instance (pkg/cloud/scope/providerid.go), set on the Node by the cloud provider."""
    return f"aws:///{zone}/{instance_id}"


@dataclass(frozen=True)
class NodeCondition:
    type: str
    status: str  # "True", "False" or "Unknown"
    since: datetime.datetime | None  # lastTransitionTime
    message: str = ""


@dataclass(frozen=True)
class NodeView:
    name: str
    provider_id: str
    ready: str  # "True", "False" or "Unknown" (the Ready condition's status)
    ready_since: datetime.datetime | None  # lastTransitionTime of Ready
    unschedulable: bool
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    volumes_attached: tuple[str, ...] = ()
    conditions: tuple[NodeCondition, ...] = ()

    def condition(self, kind: str) -> NodeCondition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    @classmethod
    def from_api(cls, node: Mapping[str, Any]) -> NodeView:
        metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
        conditions = tuple(
            NodeCondition(
                c.get("type", ""),
                c.get("status") or "Unknown",
                _time(c.get("lastTransitionTime")),
                str(c.get("message") or ""),
            )
            for c in status.get("conditions") or []
        )
        ready = next((c for c in conditions if c.type == "Ready"), None)
        return cls(
            name=metadata.get("name", ""),
            provider_id=spec.get("providerID") or "",
            ready=ready.status if ready else "Unknown",
            ready_since=ready.since if ready else None,
            unschedulable=bool(spec.get("unschedulable")),
            annotations=dict(metadata.get("annotations") or {}),
            labels=dict(metadata.get("labels") or {}),
            volumes_attached=tuple(v.get("name", "") for v in status.get("volumesAttached") or []),
            conditions=conditions,
        )


def _time(value: Any) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True)
class Workload:
    """One observation of the workload cluster: Nodes, control-plane static pods, etcd. ``reachable`` False: the
    API did not answer (``reason`` says why); then nothing else is known."""

    reachable: bool
    reason: str = ""
    nodes: tuple[NodeView, ...] = ()
    # node name -> component -> ready, for the static pods of the control-plane namespace
    static_pods: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    etcd: EtcdStatus | None = None
    etcd_error: str = ""

    @classmethod
    def unreachable(cls, reason: str) -> Workload:
        return cls(reachable=False, reason=reason)

    @property
    def network_up(self) -> bool:
        """Some Node is Ready: a pod network runs in the cluster (a kubelet reports Ready only once its CNI is
        there), so a Node that is not Ready is waiting for its own CNI pod, not for the CNI addon."""
        return any(n.ready == "True" for n in self.nodes)

    def node_for(self, zone: str, instance_id: str, node_name: str) -> NodeView | None:
        """The machine's Node: by providerID once the cloud provider set it, else by the name kubeadm registered."""
        wanted = provider_id(zone, instance_id)
        by_provider = next((n for n in self.nodes if n.provider_id == wanted), None)
        if by_provider is not None:
            return by_provider
        return next((n for n in self.nodes if n.name == node_name and not n.provider_id), None)


def static_pods_of(pods: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, bool]]:
    """node -> component -> ready, from the pods of the control-plane namespace (mirror pods of kubeadm)."""
    found: dict[str, dict[str, bool]] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        component = (metadata.get("labels") or {}).get("component")
        node = (pod.get("spec") or {}).get("nodeName")
        if component not in COMPONENTS or not node:
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        found.setdefault(node, {})[component] = ready and not metadata.get("deletionTimestamp")
    return found
