"""The API server's resource table: what discovery serves and what the generic storage accepts.

Built-in kinds are those of a kubeadm Kubernetes 1.31 cluster (the GA groups); custom resources join the table when
a CustomResourceDefinition is created (and leave it when it is deleted).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = tuple(ALL_VERBS)
    singular: str = ""
    categories: tuple[str, ...] = ()
    crd: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: objects of one resource share storage across versions of the group."""
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        """How kube-apiserver names the resource in messages: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources


def _r(
    gv: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: str = "",
    sub: str = "",
    verbs: str = "",
    cats: str = "",
) -> Resource:
    group, _slash, version = gv.rpartition("/")
    return Resource(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        short_names=tuple(short.split()),
        subresources=tuple(sub.split()),
        verbs=tuple(verbs.split()) if verbs else tuple(ALL_VERBS),
        singular=kind.lower(),
        categories=tuple(cats.split()),
    )


BUILTIN: list[Resource] = [
    _r("v1", "namespaces", "Namespace", False, "ns", "status finalize"),
    _r("v1", "nodes", "Node", False, "no", "status proxy"),
    _r("v1", "pods", "Pod", True, "po", "status eviction portforward log binding exec attach", cats="all"),
    _r("v1", "secrets", "Secret"),
    _r("v1", "configmaps", "ConfigMap", short="cm"),
    _r("v1", "services", "Service", short="svc", sub="status proxy", cats="all"),
    _r("v1", "serviceaccounts", "ServiceAccount", short="sa", sub="token"),
    _r("v1", "events", "Event", short="ev"),
    _r("v1", "endpoints", "Endpoints", short="ep"),
    _r("v1", "persistentvolumes", "PersistentVolume", False, "pv", "status"),
    _r("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short="pvc", sub="status"),
    _r("v1", "limitranges", "LimitRange", short="limits"),
    _r("v1", "resourcequotas", "ResourceQuota", short="quota", sub="status"),
    _r("v1", "replicationcontrollers", "ReplicationController", short="rc", sub="status scale", cats="all"),
    _r("v1", "podtemplates", "PodTemplate"),
    _r("apps/v1", "daemonsets", "DaemonSet", short="ds", sub="status", cats="all"),
    _r("apps/v1", "deployments", "Deployment", short="deploy", sub="status scale", cats="all"),
    _r("apps/v1", "replicasets", "ReplicaSet", short="rs", sub="status scale", cats="all"),
    _r("apps/v1", "statefulsets", "StatefulSet", short="sts", sub="status scale", cats="all"),
    _r("apps/v1", "controllerrevisions", "ControllerRevision"),
    _r("batch/v1", "jobs", "Job", sub="status", cats="all"),
    _r("batch/v1", "cronjobs", "CronJob", short="cj", sub="status", cats="all"),
    _r("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short="pdb", sub="status"),
    _r("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", False, sub="status"),
    _r("storage.k8s.io/v1", "storageclasses", "StorageClass", False, "sc"),
    _r("storage.k8s.io/v1", "csidrivers", "CSIDriver", False),
    _r("storage.k8s.io/v1", "csinodes", "CSINode", False),
    _r("storage.k8s.io/v1", "csistoragecapacities", "CSIStorageCapacity"),
    _r("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", False, "crd crds", "status"),
    _r("rbac.authorization.k8s.io/v1", "roles", "Role"),
    _r("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    _r("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("coordination.k8s.io/v1", "leases", "Lease"),
    _r("events.k8s.io/v1", "events", "Event", short="ev"),
    _r("discovery.k8s.io/v1", "endpointslices", "EndpointSlice"),
    _r("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", short="netpol"),
    _r("networking.k8s.io/v1", "ingresses", "Ingress", short="ing", sub="status"),
    _r("networking.k8s.io/v1", "ingressclasses", "IngressClass", False),
    _r("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False, "pc"),
    _r("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", False),
    _r(
        "certificates.k8s.io/v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        False,
        "csr",
        "status approval",
    ),
    _r("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
    _r("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False),
    _r("apiregistration.k8s.io/v1", "apiservices", "APIService", False, sub="status"),
    _r("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", short="hpa", sub="status"),
    _r("flowcontrol.apiserver.k8s.io/v1", "flowschemas", "FlowSchema", False, sub="status"),
    _r(
        "flowcontrol.apiserver.k8s.io/v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        False,
        sub="status",
    ),
    _r("authentication.k8s.io/v1", "tokenreviews", "TokenReview", False, verbs="create"),
    _r("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview", False, verbs="create"),
    _r("authorization.k8s.io/v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, verbs="create"),
    _r("authorization.k8s.io/v1", "subjectaccessreviews", "SubjectAccessReview", False, verbs="create"),
]

# Kinds whose main endpoint ignores status and whose /status endpoint changes only status.
SUBRESOURCE_KINDS = {"status", "scale"}


@dataclass
class ResourceTable:
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _resources: list[Resource] = field(default_factory=lambda: list(BUILTIN))

    def all(self) -> list[Resource]:
        with self._lock:
            return list(self._resources)

    def find(self, group: str, version: str, plural: str) -> Resource | None:
        with self._lock:
            for r in self._resources:
                if r.group == group and r.version == version and r.plural == plural:
                    return r
        return None

    def by_kind(self, api_version: str, kind: str) -> Resource | None:
        group, _slash, version = api_version.rpartition("/")
        with self._lock:
            for r in self._resources:
                if r.group == group and r.version == version and r.kind == kind:
                    return r
        return None

    def by_plural(self, group: str, plural: str) -> Resource | None:
        with self._lock:
            for r in self._resources:
                if r.group == group and r.plural == plural:
                    return r
        return None

    def groups(self) -> dict[str, list[str]]:
        """group -> versions (preferred first), in table order."""
        found: dict[str, list[str]] = {}
        with self._lock:
            for r in self._resources:
                versions = found.setdefault(r.group, [])
                if r.version not in versions:
                    versions.append(r.version)
        return found

    def add_crd(self, crd: dict[str, Any]) -> list[Resource]:
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        group = spec.get("group", "")
        added = []
        with self._lock:
            self.remove_crd(crd)
            for version in spec.get("versions", []):
                if not version.get("served", True):
                    continue
                sub = version.get("subresources") or {}
                resource = Resource(
                    group=group,
                    version=version["name"],
                    plural=names.get("plural", ""),
                    kind=names.get("kind", ""),
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                    short_names=tuple(names.get("shortNames", []) or []),
                    subresources=tuple(k for k in ("status", "scale") if k in sub),
                    singular=names.get("singular", "") or names.get("kind", "").lower(),
                    categories=tuple(names.get("categories", []) or []),
                    crd=True,
                )
                self._resources.append(resource)
                added.append(resource)
        return added

    def remove_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec", {})
        group, plural = spec.get("group", ""), spec.get("names", {}).get("plural", "")
        with self._lock:
            self._resources = [r for r in self._resources if not (r.crd and r.group == group and r.plural == plural)]
