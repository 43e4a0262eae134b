# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the ``capa_addons`` tier - what a kubeadm cluster needs before any node is Ready, applied once the API
answers, the way Cluster API's ClusterResourceSet applies it.

Addons: the CNI (``cni: calico``, :mod:`.addon_calico`, or ``none``), the AWS cloud controller manager
(:mod:`.addon_ccm`), and the user's ``additional_manifests``. Each is applied with server-side apply (field manager
``clusterapi.aws``), object by object in order (resource definitions before objects of their kinds), through
``Operations.call`` (``k8s:Apply`` in the plan). What was applied is recorded, per addon and with the hash of its
manifests, in the ConfigMap ``kube-system/clusterapi-aws-addons`` - the counterpart of a ClusterResourceSetBinding -
so a run that changes nothing reads one object and writes none. ``strategy: ApplyOnce`` (the default, as in
Cluster API) applies an addon once and never again; ``Reconcile`` applies it again whenever its manifests change.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError, SpecError
from ..kernel.options import argument_spec as spec_of
from ..kernel.tier import Outcome
from ..kernel.waiting import wait_until
from ..workload.access import KUBERNETES_API, KubernetesAccess, KubernetesApiSettings
from ..workload.kube import UNREACHABLE, KubeApi, PlannedApi
from ..workload.observe import NodeView
from . import addon_calico, addon_ccm
from .pki import load_cluster_pki

RECORD_NAMESPACE = "kube-system"
RECORD_NAME = "clusterapi-aws-addons"
RECORD_PATH = f"/api/v1/namespaces/{RECORD_NAMESPACE}/configmaps/{RECORD_NAME}"
STRATEGIES = ("ApplyOnce", "Reconcile")
CNIS = ("calico", "none")
# A resource definition applied a moment ago is served a little later: objects of its kind wait that long.
SERVED_RETRY = 1.0
NETWORK_POLL = 2.0  # seconds between Node lists while the CNI's pods start


@dataclass(frozen=True)
class Addon:
    name: str
    objects: tuple[dict[str, Any], ...]

    @property
    def digest(self) -> str:
        canonical = json.dumps(list(self.objects), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class AddonsSpec:
    state: str
    kubernetes_version: str
    endpoint_host: str
    endpoint_port: int
    kubernetes_api: KubernetesApiSettings
    cni: str
    cloud_controller_manager: bool
    ccm_image: str | None
    additional: tuple[dict[str, Any], ...]
    strategy: str

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AddonsSpec:
        """The module's parameters as the argument spec validated them (every default filled in)."""
        endpoint = params["endpoint"]
        ccm = params["cloud_controller_manager"]
        return cls(
            state=params["state"],
            kubernetes_version=params["kubernetes_version"],
            endpoint_host=endpoint["host"],
            endpoint_port=endpoint["port"],
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
            cni=params["cni"],
            cloud_controller_manager=ccm["enabled"],
            ccm_image=ccm["image"] or None,
            additional=tuple(params["additional_manifests"]),
            strategy=params["strategy"],
        )

    def validate(self) -> None:
        if self.cni not in CNIS:
            raise SpecError("cni", f"must be one of {', '.join(CNIS)}")
        if self.strategy not in STRATEGIES:
            raise SpecError("strategy", f"must be one of {', '.join(STRATEGIES)}")
        if not self.endpoint_host:
            raise SpecError("endpoint.host", "is required (the control-plane endpoint)")
        self.kubernetes_api.validate()
        for index, manifest in enumerate(self.additional):
            where = f"additional_manifests[{index}]"
            if not isinstance(manifest, Mapping) or not manifest.get("apiVersion") or not manifest.get("kind"):
                raise SpecError(where, "must be a Kubernetes object with apiVersion and kind")
            if not (manifest.get("metadata") or {}).get("name"):
                raise SpecError(f"{where}.metadata.name", "is required")

    def addons(self, pod_cidr: str) -> list[Addon]:
        wanted: list[Addon] = []
        if self.cni == "calico":
            wanted.append(Addon("cni-calico", tuple(addon_calico.manifests(pod_cidr))))
        if self.cloud_controller_manager:
            objects = addon_ccm.manifests(self.kubernetes_version, self.ccm_image)
            wanted.append(Addon("aws-cloud-controller-manager", tuple(objects)))
        if self.additional:
            wanted.append(Addon("additional-manifests", self.additional))
        return wanted


def argument_spec() -> dict[str, Any]:
    """``capa_addons``'s options (its DOCUMENTATION says the same; ansible-test's validate-modules compares them)."""
    return dict(
        kubernetes_version=dict(type="str", required=True),
        endpoint=dict(
            type="dict",
            required=True,
            options=dict(host=dict(type="str", required=True), port=dict(type="int", default=6443)),
        ),
        **spec_of([KUBERNETES_API]),
        cni=dict(type="str", default="calico", choices=list(CNIS)),
        cloud_controller_manager=dict(
            type="dict", default={}, options=dict(enabled=dict(type="bool", default=True), image=dict(type="str"))
        ),
        additional_manifests=dict(type="list", elements="dict", default=[]),
        strategy=dict(type="str", default="ApplyOnce", choices=list(STRATEGIES)),
    )


def to_apply(addons: list[Addon], record: Mapping[str, str], strategy: str) -> list[tuple[Addon, str]]:
    """(addon, why) for each addon this run applies: never recorded, or (Reconcile) recorded with other manifests."""
    todo = []
    for addon in addons:
        applied = record.get(addon.name)
        if applied is None:
            todo.append((addon, "not applied yet"))
        elif strategy == "Reconcile" and applied != addon.digest:
            todo.append((addon, f"manifests changed ({applied} -> {addon.digest})"))
    return todo


def label(manifest: Mapping[str, Any]) -> str:
    metadata = manifest.get("metadata") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{manifest['kind']} {where}{metadata['name']}"


CNI_PREFIX = "cni-"  # the CNI addon's name (cni-calico): the one that makes Nodes Ready
NETWORK_NOT_READY = "NetworkPluginNotReady"  # the kubelet's Ready=False reason until a CNI is installed


def nodes_without_network(api: KubeApi) -> list[str]:
    """Nodes whose kubelet still says its network plugin is not ready (one Node list)."""
    nodes = (NodeView.from_api(n) for n in api.nodes())
    return sorted(
        n.name
        for n in nodes
        if (ready := n.condition("Ready")) is not None and ready.status != "True" and NETWORK_NOT_READY in ready.message
    )


def wait_for_network(ctx: Context, api: KubeApi) -> None:
    """After the CNI was applied: wait until no Node waits for a network plugin any more, so the run goes on with
    Nodes that serve (the first control-plane machine's turns Ready now, and the status a run ends with says so).
    A CNI that does not come up within the wait budget is a warning: the machines' own waits report the Nodes."""
    if ctx.check_mode or not ctx.wait:
        return
    try:
        wait_until(
            lambda: nodes_without_network(api),
            lambda waiting: not waiting,
            ctx,
            "the CNI to make the Nodes' network ready",
            NETWORK_POLL,
            state=lambda waiting: f"{', '.join(waiting)} still NetworkPluginNotReady",
        )
    except (ReconcileError, RemoteError) as e:
        ctx.warn(f"the CNI was applied but the Nodes' network is not ready yet: {e}")


class AddonsTier:
    def parse(self, params: Mapping[str, Any]) -> AddonsSpec:
        return AddonsSpec.from_params(params)

    def validate(self, spec: AddonsSpec, region: str | None) -> None:
        if spec.state == "present":
            spec.validate()

    def reconcile(self, ctx: Context, spec: AddonsSpec) -> Outcome:
        if spec.state == "absent":
            # Addons live in the cluster: they go with it. Nothing in AWS is the addons'.
            return Outcome(None, None)
        return Outcome(*self._apply_all(ctx, spec))

    def _apply_all(self, ctx: Context, spec: AddonsSpec) -> tuple[Any, Any]:
        pki = load_cluster_pki(ctx, ctx.cluster, missing_ok=ctx.check_mode)
        addons = spec.addons(pki.pod_cidr if pki else "192.168.0.0/16")
        if pki is None:  # check mode before capa_kubeadm ran: everything would be applied
            return None, self._planned(ctx, addons, "the cluster does not exist yet")
        access = KubernetesAccess.open(
            ctx,
            spec.kubernetes_api,
            endpoint_host=spec.endpoint_host,
            endpoint_port=spec.endpoint_port,
            cluster_ca=pki.cluster_ca,
        )
        try:
            record = self._read_record(access)
        finally:
            access.close()
        api = access.api  # a record was read through it: not None once record is not None
        if record is None or api is None:
            if ctx.check_mode:
                return None, self._planned(ctx, addons, access.reason)
            ctx.warn(f"addons not applied: {access.reason}; a later run applies them once the API answers")
            return None, self._result(addons, {}, [], access.reason)
        before = self._result(addons, record, [], "")
        todo = to_apply(addons, record, spec.strategy)
        for addon, why in todo:
            self._apply(ctx, api, addon, why)
            record[addon.name] = addon.digest
        if todo:
            ctx.ops.call(
                api,
                "apply",
                resource=label(_record(record)),
                reason="record what was applied",
                manifest=_record(record),
            )
        if any(addon.name.startswith(CNI_PREFIX) for addon, _why in todo):
            wait_for_network(ctx, api)
        return before, self._result(addons, record, [a.name for a, _why in todo], "")

    def _read_record(self, access: KubernetesAccess) -> dict[str, str] | None:
        if access.api is None:
            return None
        try:
            found = access.api.get(RECORD_PATH, "k8s:GetConfigMap")
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise ReconcileError(f"reading {RECORD_NAMESPACE}/{RECORD_NAME}: {e}") from None
            access.unreachable(str(e))
            return None
        return dict((found or {}).get("data") or {})

    def _apply(self, ctx: Context, api: KubeApi, addon: Addon, why: str) -> None:
        for manifest in addon.objects:
            ctx.ops.call(
                api,
                "apply",
                resource=label(manifest),
                reason=f"addon {addon.name}: {why}",
                retry_if=_not_served_yet,
                retry_delay=SERVED_RETRY,
                manifest=manifest,
            )

    def _planned(self, ctx: Context, addons: list[Addon], why: str) -> dict[str, Any]:
        planned = PlannedApi(why)
        for addon in addons:
            for manifest in addon.objects:
                ctx.ops.call(
                    planned, "apply", resource=label(manifest), reason=f"addon {addon.name}", manifest=manifest
                )
        return self._result(addons, {a.name: a.digest for a in addons}, [a.name for a in addons], why)

    @staticmethod
    def _result(addons: list[Addon], record: Mapping[str, str], applied: list[str], unreachable: str) -> dict[str, Any]:
        return {
            "addons": {
                a.name: {
                    "digest": a.digest,
                    "objects": len(a.objects),
                    "recorded": record.get(a.name),
                    "applied": a.name in applied,
                }
                for a in addons
            },
            "kubernetes_api": {"reachable": not unreachable, "reason": unreachable or None},
        }


def _not_served_yet(error: Exception) -> bool:
    return isinstance(error, RemoteError) and error.code == "NotServed"


def _record(record: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": RECORD_NAME,
            "namespace": RECORD_NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "clusterapi.aws"},
        },
        "data": dict(sorted(record.items())),
    }
