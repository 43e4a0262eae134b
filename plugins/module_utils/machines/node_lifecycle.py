# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the Kubernetes side of a machine coming and going, applied through ``Operations``.

:class:`KubernetesAccess` opens the workload cluster for one run (the API server with a client certificate minted
from the cluster CA, etcd through the API server with one minted from the etcd CA) and reads it once per step
(:meth:`KubernetesAccess.observe`: one Node list, one pod list of the control-plane namespace, one etcd status).
The removal of a machine follows Cluster API's Machine controller and KubeadmControlPlane: move etcd leadership
off it (:func:`move_leadership_off`), cordon and drain its Node (:func:`drain_node`: evictions through the Eviction
API, refusals by a PodDisruptionBudget retried until ``node_drain_timeout``), wait for its volumes to detach
(:func:`wait_volumes_detached`), remove its etcd member (:func:`remove_member`) - after the drain, before the
instance is terminated - and delete its Node once the instance is gone (:func:`delete_node`). Every write is an
``Operations.call``: in check mode it is planned, not made, and the plan lists the whole ordered sequence.

``kubernetes_api.mode`` decides what happens without an API server to talk to:

* ``auto`` (default): use it when it answers; when it does not, workers are judged by the AWS-only signal
  ``InstanceRunning`` and removed without a drain, each with a warning; a control-plane scale-down or replacement
  is refused before any change (etcd quorum cannot be kept without etcd).
* ``required``: the run fails before any change when the API server does not answer.
* ``none``: never contact it (no route from the controller); otherwise as ``auto`` without the API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError, SpecError
from ..workload import credentials
from ..workload.etcd import Etcd, EtcdStatus
from ..workload.kube import ApiTarget, KubeApi
from .lifecycle import (
    EXCLUDE_DRAINING,
    EXCLUDE_VOLUME_WAIT,
    NodeView,
    PodRef,
    Workload,
    pods_to_evict,
    static_pods_of,
)

MODES = ("auto", "required", "none")
CONTROL_PLANE_NAMESPACE = "kube-system"
CONTROL_PLANE_PODS = "tier=control-plane"
# How often a drain retries refused evictions and re-reads the Node's pods (CAPI: every 20 s; one run has less).
DRAIN_RETRY = 5.0
VOLUME_POLL = 5.0
# etcd refuses reconfiguration for ~5 s after any membership or leader change ("unhealthy cluster").
RECONFIGURE_RETRY = 1.0


@dataclass(frozen=True)
class KubernetesApiSettings:
    """The ``kubernetes_api`` option: how (and whether) the controller reaches the cluster's API server."""

    mode: str = "auto"
    server: str | None = None  # reach the API here instead of the control-plane endpoint (tunnel, proxy, override)
    tls_server_name: str | None = None  # the name the server certificate must carry (default: the endpoint host)
    proxy: str | None = None  # HTTP CONNECT proxy
    timeout: int = 10

    @classmethod
    def from_params(cls, value: dict[str, Any] | None) -> KubernetesApiSettings:
        value = value or {}
        return cls(
            mode=value.get("mode") or "auto",
            server=value.get("server") or None,
            tls_server_name=value.get("tls_server_name") or None,
            proxy=value.get("proxy") or None,
            timeout=value.get("timeout") or 10,
        )

    def validate(self, where: str = "kubernetes_api") -> None:
        if self.mode not in MODES:
            raise SpecError(f"{where}.mode", f"must be one of {', '.join(MODES)}")
        if self.server and not self.server.startswith("https://"):
            raise SpecError(f"{where}.server", f"'{self.server}' is not an https:// URL")
        if self.proxy and not self.proxy.startswith(("http://", "https://")):
            raise SpecError(f"{where}.proxy", f"'{self.proxy}' is not an http(s):// proxy URL")
        if self.timeout < 1:
            raise SpecError(f"{where}.timeout", "must be at least 1 second")


@dataclass
class KubernetesAccess:
    """The workload cluster as one run reaches it (or why it does not)."""

    settings: KubernetesApiSettings
    api: KubeApi | None = None
    etcd: Etcd | None = None
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.api is not None

    @classmethod
    def open(
        cls,
        ctx: Context,
        settings: KubernetesApiSettings,
        *,
        endpoint_host: str,
        endpoint_port: int,
        ca_certificate: str,
        ca_key: str,
        etcd_ca_certificate: str | None = None,
        etcd_ca_key: str | None = None,
    ) -> KubernetesAccess:
        """Reach the API server (and etcd, given its CA); ``required`` fails here when it does not answer."""
        if settings.mode == "none":
            return cls(settings, reason="kubernetes_api.mode is none")
        if not credentials.HAS_CRYPTOGRAPHY:
            raise ReconcileError("the Kubernetes side needs the 'cryptography' package on the controller")
        url = settings.server or f"https://{endpoint_host}:{endpoint_port}"
        # Reached at another address, the server is still checked for the endpoint's name.
        name = settings.tls_server_name or (endpoint_host if settings.server else None)
        target = ApiTarget(url, ca_certificate, tls_server_name=name, proxy=settings.proxy)
        identity = credentials.mint_client_certificate(
            ca_certificate, ca_key, credentials.API_CLIENT_NAME, credentials.API_CLIENT_GROUPS
        )
        api = KubeApi(target, identity, count=ctx.session.recorder.count, timeout=settings.timeout)
        problem = api.probe()
        if problem is not None:
            if settings.mode == "required":
                raise ReconcileError(
                    f"kubernetes_api.mode is required but the Kubernetes API does not answer: {problem}. "
                    "Give a reachable address in kubernetes_api.server (a tunnel or proxy to the API server), "
                    "or set kubernetes_api.mode: auto"
                )
            return cls(settings, reason=problem)
        etcd = None
        if etcd_ca_certificate and etcd_ca_key:
            etcd_identity = credentials.mint_client_certificate(
                etcd_ca_certificate, etcd_ca_key, credentials.ETCD_CLIENT_NAME
            )
            etcd = Etcd(api, etcd_ca_certificate, etcd_identity, count=ctx.session.recorder.count)
        return cls(settings, api=api, etcd=etcd)

    def observe(self, control_plane_nodes: list[str] | None = None) -> Workload:
        """Nodes, the control-plane static pods and (for a control plane) etcd: one read of each."""
        if self.api is None:
            return Workload.unreachable(self.reason)
        try:
            nodes = tuple(NodeView.from_api(n) for n in self.api.nodes())
            static: dict[str, dict[str, bool]] = {}
            status: EtcdStatus | None = None
            etcd_error = ""
            if control_plane_nodes is not None:
                pods = self.api.pods(CONTROL_PLANE_NAMESPACE, label_selector=CONTROL_PLANE_PODS)
                static = static_pods_of(pods)
                status, etcd_error = self._etcd_status(control_plane_nodes, static)
        except RemoteError as e:
            return Workload.unreachable(str(e))
        return Workload(reachable=True, nodes=nodes, static_pods=static, etcd=status, etcd_error=etcd_error)

    def _etcd_status(self, nodes: list[str], static: dict[str, dict[str, bool]]) -> tuple[EtcdStatus | None, str]:
        if self.etcd is None:
            return None, "the etcd CA is not known"
        # Members whose etcd pod is ready first: the first that answers is the one asked.
        ordered = sorted(nodes, key=lambda n: not static.get(n, {}).get("etcd"))
        if not ordered:
            return None, "no control-plane node to reach etcd through"
        try:
            return self.etcd.status(ordered), ""
        except RemoteError as e:
            return None, str(e)

    def close(self) -> None:
        if self.etcd is not None:
            self.etcd.close()


# removal steps -------------------------------------------------------------------------------------------------
@dataclass
class DrainOutcome:
    node: str
    evicted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    excluded: bool = False
    timed_out: list[str] = field(default_factory=list)  # pods still there when node_drain_timeout ran out

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "evicted": self.evicted,
            "skipped": self.skipped,
            "excluded": self.excluded,
            "timed_out": self.timed_out,
        }


def drain_node(
    ctx: Context,
    api: KubeApi,
    node: NodeView,
    machine: str,
    timeout: int = 0,
    excluded: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> DrainOutcome:
    """Cordon the Node and evict its pods (not DaemonSet or mirror pods), as Cluster API's Machine controller does.

    Evictions a PodDisruptionBudget refuses (HTTP 429) are retried every :data:`DRAIN_RETRY` seconds; the drain
    ends when no evicted pod is left on the Node, or when ``timeout`` seconds have passed (``0`` = no limit of its
    own; the run's wait budget still bounds it): then the machine goes anyway, as with CAPI's
    ``nodeDrainTimeout``, and the outcome says which pods were still there. The annotation
    ``machine.cluster.x-k8s.io/exclude-node-draining`` (on the Node, or ``excluded`` for the machine) skips it.
    """
    outcome = DrainOutcome(node.name)
    if excluded or EXCLUDE_DRAINING in node.annotations:
        outcome.excluded = True
        return outcome
    why = f"drain before machine {machine} goes"
    if not node.unschedulable:
        ctx.ops.call(api, "cordon", resource=f"node {node.name}", reason=why, node=node.name)
    pods, skipped = pods_to_evict(api.pods(field_selector=f"spec.nodeName={node.name}"))
    outcome.skipped = [f"{p.namespace}/{p.name} ({p.reason})" for p in skipped]
    if ctx.check_mode:
        for pod in pods:
            _evict(ctx, api, pod, why)
            outcome.evicted.append(f"{pod.namespace}/{pod.name}")
        return outcome
    started = time.monotonic()
    pending = {(p.namespace, p.name): p for p in pods}
    evicted: set[tuple[str, str]] = set()
    while pending:
        for key, pod in pending.items():
            if key not in evicted and _evict(ctx, api, pod, why):
                evicted.add(key)
                outcome.evicted.append(f"{pod.namespace}/{pod.name}")
        # One read per round: an evicted pod is waited for until it is gone, a refused one is asked again.
        on_node = {
            ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", ""))
            for p in api.pods(field_selector=f"spec.nodeName={node.name}")
        }
        pending = {key: pod for key, pod in pending.items() if key in on_node}
        if not pending:
            break
        if timeout and time.monotonic() - started >= timeout:
            outcome.timed_out = sorted(f"{ns}/{name}" for ns, name in pending)
            ctx.warn(
                f"node {node.name} (machine {machine}): node_drain_timeout {timeout}s passed with "
                f"{', '.join(outcome.timed_out)} still on it; the machine goes anyway"
            )
            break
        if ctx.remaining() <= DRAIN_RETRY:
            raise ReconcileError(
                f"draining node {node.name} (machine {machine}) did not finish within wait_timeout: "
                f"{', '.join(sorted(f'{ns}/{name}' for ns, name in pending))} still there (a PodDisruptionBudget "
                "refuses their eviction, or they do not terminate); the machine was kept - the next run goes on, "
                "or set node_drain_timeout to let it go after that long"
            )
        sleep(DRAIN_RETRY)
    return outcome


def _evict(ctx: Context, api: KubeApi, pod: PodRef, why: str) -> bool:
    """One eviction; False when a PodDisruptionBudget refuses it now (429), True when evicted or already gone."""
    answer = ctx.ops.call_unless_refused(
        api,
        "evict",
        resource=f"pod {pod.namespace}/{pod.name}",
        reason=why,
        refused=("TooManyRequests",),
        namespace=pod.namespace,
        name=pod.name,
    )
    return answer is not None


def wait_volumes_detached(
    ctx: Context, api: KubeApi, node_name: str, machine: str, timeout: int = 0, excluded: bool = False
) -> list[str]:
    """Wait until the Node reports no attached volume (CAPI's wait for volume detach), at most ``timeout`` seconds
    (``0`` = no limit of its own); returns the volumes still attached when it gave up."""
    if excluded or ctx.check_mode:
        return []
    started = time.monotonic()
    while True:
        current = api.get(f"/api/v1/nodes/{node_name}", "k8s:GetNode")
        if current is None:
            return []
        view = NodeView.from_api(current)
        if EXCLUDE_VOLUME_WAIT in view.annotations or not view.volumes_attached:
            return []
        if timeout and time.monotonic() - started >= timeout:
            ctx.warn(
                f"node {node_name} (machine {machine}): node_volume_detach_timeout {timeout}s passed with "
                f"{', '.join(view.volumes_attached)} still attached; the machine goes anyway"
            )
            return list(view.volumes_attached)
        if ctx.remaining() <= VOLUME_POLL:
            raise ReconcileError(
                f"volumes of node {node_name} (machine {machine}) did not detach within wait_timeout: "
                f"{', '.join(view.volumes_attached)}; the machine was kept"
            )
        time.sleep(VOLUME_POLL)


def _unhealthy_cluster(error: Exception) -> bool:
    return "unhealthy cluster" in str(error)


def move_leadership_off(ctx: Context, etcd: Etcd, status: EtcdStatus, node: str, candidates: list[str]) -> None:
    """Before the machine of ``node`` goes: if its member leads etcd, hand leadership to the first candidate."""
    leader = status.leader
    if leader is None or leader.name != node:
        return
    errors = []
    for candidate in candidates:
        target = status.by_name(candidate)
        if target is None or target.is_learner:
            continue
        try:
            ctx.ops.call(
                etcd,
                "move_leader",
                resource=f"etcd leader {node}",
                reason=f"machine of {node} goes; leadership to {candidate}",
                retry_if=_unhealthy_cluster,
                retry_delay=RECONFIGURE_RETRY,
                via=node,
                target_id=target.id,
            )
            return
        except RemoteError as e:
            errors.append(f"{candidate}: {e}")
    raise ReconcileError(f"etcd leadership could not be moved off {node}: {'; '.join(errors) or 'no candidate'}")


def remove_member(ctx: Context, etcd: Etcd, status: EtcdStatus, node: str, via: list[str]) -> bool:
    """Remove ``node``'s etcd member through another member (after the drain, before the instance goes)."""
    member = status.by_name(node)
    if member is None:
        return False
    others = [n for n in via if n != node]
    if not others:
        raise ReconcileError(f"no other etcd member to remove {node}'s member through")
    ctx.ops.call(
        etcd,
        "member_remove",
        resource=f"etcd member {node}",
        reason="its machine goes (after the drain, before TerminateInstances)",
        retry_if=_unhealthy_cluster,
        retry_delay=RECONFIGURE_RETRY,
        via=others[0],
        member_id=member.id,
    )
    return True


def remove_stray_member(ctx: Context, etcd: Etcd, member_id: str, label: str, via: list[str]) -> None:
    ctx.ops.call(
        etcd,
        "member_remove",
        resource=f"etcd member {label}",
        reason="no machine has this member (a leftover of a run that stopped halfway)",
        retry_if=_unhealthy_cluster,
        retry_delay=RECONFIGURE_RETRY,
        via=via[0],
        member_id=member_id,
    )


def delete_node(ctx: Context, api: KubeApi, node: str, machine: str) -> None:
    """Delete the Node object once its instance is gone (CAPI deletes it after the infrastructure, issue 2565)."""
    ctx.ops.call_unless_refused(
        api,
        "delete_node",
        resource=f"node {node}",
        reason=f"machine {machine} is gone",
        refused=("NotFound",),
        node=node,
    )
