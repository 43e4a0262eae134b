# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the Kubernetes side of a machine coming and going, applied through ``Operations``.

The workload cluster is reached through ``workload.access.KubernetesAccess`` and read once per step. The removal
of a machine follows Cluster API's Machine controller and KubeadmControlPlane: move etcd leadership off it
(:func:`move_leadership_off`), cordon and drain its Node (:func:`drain_node`: evictions through the Eviction API,
refusals by a PodDisruptionBudget retried until ``node_drain_timeout``), wait for its volumes to detach
(:func:`wait_volumes_detached`), remove its etcd member (:func:`remove_member`) - after the drain, before the
instance is terminated - and delete its Node once the instance is gone (:func:`delete_node`). Every write is an
``Operations.call``: in check mode it is planned, not made, and the plan lists the whole ordered sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.waiting import Backoff, watched_sleep
from ..workload.etcd import Etcd, EtcdStatus
from ..workload.kube import KubeApi
from ..workload.observe import NodeView
from .lifecycle import EXCLUDE_DRAINING, EXCLUDE_VOLUME_WAIT, PodRef, pods_to_evict

# How often a drain retries refused evictions and re-reads the Node's pods (CAPI: every 20 s; one run has less time):
# quickly at first - an evicted pod is often gone in a second - then every 5 s.
DRAIN_RETRY = Backoff(first=0.5, cap=5.0, factor=2.0)  # retries of what was refused: no hurry to ask again
VOLUME_POLL = Backoff(first=1.0, cap=5.0)
# etcd refuses reconfiguration for ~5 s after any membership or leader change ("unhealthy cluster").
RECONFIGURE_RETRY = 1.0


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
) -> DrainOutcome:
    """Cordon the Node and evict its pods (not DaemonSet or mirror pods), as Cluster API's Machine controller does.

    Evictions a PodDisruptionBudget refuses (HTTP 429) are retried, paced by :data:`DRAIN_RETRY`; the drain
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
    pending = {(p.namespace, p.name): p for p in pods}
    evicted: set[tuple[str, str]] = set()
    selector = f"spec.nodeName={node.name}"

    def left_the_node(kind: str, pod: dict[str, Any]) -> bool:
        metadata = pod.get("metadata") or {}
        key = (metadata.get("namespace", ""), metadata.get("name", ""))
        return kind == "DELETED" and key in evicted and key in pending

    def watch(seconds: float) -> bool:
        # Between rounds, a watch of the Node's pods: an evicted pod that goes ends the pause (refused evictions
        # are still asked again at DRAIN_RETRY's pace).
        return bool(evicted & pending.keys()) and api.watch_pods(left_the_node, seconds, field_selector=selector)

    waiting = ctx.wait_for(
        f"node {node.name} to drain",
        limit=timeout,
        backoff=DRAIN_RETRY,
        sleep=lambda seconds: watched_sleep(ctx, seconds, watch),
    )
    while pending:
        for key, pod in pending.items():
            if key not in evicted and _evict(ctx, api, pod, why):
                evicted.add(key)
                outcome.evicted.append(f"{pod.namespace}/{pod.name}")
        # One read per round: an evicted pod is waited for until it is gone, a refused one is asked again.
        on_node = {
            ((p.get("metadata") or {}).get("namespace", ""), (p.get("metadata") or {}).get("name", ""))
            for p in api.pods(field_selector=selector)
        }
        pending = {key: pod for key, pod in pending.items() if key in on_node}
        if not pending:
            break
        if waiting.over_limit():
            outcome.timed_out = sorted(f"{ns}/{name}" for ns, name in pending)
            ctx.warn(
                f"node {node.name} (machine {machine}): node_drain_timeout {timeout}s passed with "
                f"{', '.join(outcome.timed_out)} still on it; the machine goes anyway"
            )
            break
        if not waiting.budget_left(DRAIN_RETRY.first):
            raise ReconcileError(
                f"draining node {node.name} (machine {machine}) did not finish within wait_timeout: "
                f"{', '.join(sorted(f'{ns}/{name}' for ns, name in pending))} still there (a PodDisruptionBudget "
                "refuses their eviction, or they do not terminate); the machine was kept - the next run goes on, "
                "or set node_drain_timeout to let it go after that long"
            )
        waiting.pause()
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
    waiting = ctx.wait_for(f"volumes of node {node_name} to detach", limit=timeout, backoff=VOLUME_POLL)
    while True:
        current = api.get(f"/api/v1/nodes/{node_name}", "k8s:GetNode")
        if current is None:
            return []
        view = NodeView.from_api(current)
        if EXCLUDE_VOLUME_WAIT in view.annotations or not view.volumes_attached:
            return []
        if waiting.over_limit():
            ctx.warn(
                f"node {node_name} (machine {machine}): node_volume_detach_timeout {timeout}s passed with "
                f"{', '.join(view.volumes_attached)} still attached; the machine goes anyway"
            )
            return list(view.volumes_attached)
        if not waiting.budget_left(VOLUME_POLL.first):
            raise ReconcileError(
                f"volumes of node {node_name} (machine {machine}) did not detach within wait_timeout: "
                f"{', '.join(view.volumes_attached)}; the machine was kept"
            )
        waiting.pause()


def _unhealthy_cluster(error: Exception) -> bool:
    return "unhealthy cluster" in str(error)


def move_leadership_off(
    ctx: Context, etcd: Etcd, status: EtcdStatus, node: str, candidates: list[str], planned: Sequence[str] = ()
) -> None:
    """Before the machine of ``node`` goes: if its member leads etcd, hand leadership to the first candidate.

    ``planned``: check mode's machines of this run, which have no member yet; the plan hands leadership to the
    first of them, as the apply will to the up-to-date machine that has joined by then."""
    leader = status.leader
    if leader is None or leader.name != node:
        return
    # (name, member id) to try in order: check mode's planned machines stand for their members-to-be.
    targets = [(name, name) for name in planned[:1]]
    for candidate in candidates:
        member = status.by_name(candidate)
        if member is not None and not member.is_learner:
            targets.append((candidate, member.id))
    errors = []
    for name, target_id in targets:
        try:
            ctx.ops.call(
                etcd,
                "move_leader",
                resource=f"etcd leader {node}",
                reason=f"machine of {node} goes; leadership to {name}",
                retry_if=_unhealthy_cluster,
                retry_delay=RECONFIGURE_RETRY,
                via=node,
                target_id=target_id,
            )
            return
        except RemoteError as e:
            errors.append(f"{name}: {e}")
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
