# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: Cluster API's machine lifecycle, decided from what the workload cluster says (pure: no requests).

What Cluster API's Machine, MachineSet and KubeadmControlPlane controllers decide, as plain functions over one
observation of the workload cluster (:class:`Workload`, read once per run):

* when a machine counts as **available** (:func:`readiness`): its Node exists (matched by ``spec.providerID``
  ``aws:///<zone>/<instance id>``, else by the node name kubeadm gives the kubelet - the instance's private DNS
  name); a worker's Node is ``Ready`` (for ``min_ready_seconds``); a control-plane machine's static pods
  (``kube-apiserver``, ``kube-controller-manager``, ``kube-scheduler``, ``etcd``) are ready and its etcd member
  is a started, promoted voter without alarms, and its Node is ``Ready`` once the cluster has a pod network (any
  Node Ready): before the CNI addon no kubelet can be Ready, and ``kubeadm init``'s machine is what the addon needs;
* whether a control-plane change may start (:func:`preflight`): no machine being deleted, every machine with a
  Node, every component and member healthy, no learner or never-started member;
* whether etcd keeps quorum through it (:func:`quorum_allows`), KCP's projection: the target voters, counting the
  member to be added as unhealthy and the member to be removed as gone, must keep a majority of healthy voters;
* where etcd leadership goes when the leader's machine leaves (:func:`leader_candidates`), which members no
  machine explains (:func:`stray_members`), and which pods a drain evicts (:func:`pods_to_evict`).

Without the Kubernetes API the fallback is explicit: :func:`readiness` then reports the AWS-only signal
``InstanceRunning`` (``Readiness.signal``), and the control-plane decisions refuse.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..workload.etcd import EtcdStatus, Member
from ..workload.observe import COMPONENTS, MIRROR_ANNOTATION, NodeView, Workload, provider_id
from .plan import HealthCheck

# Machine (here: instance tag or Node) annotations Cluster API honours on deletion.
EXCLUDE_DRAINING = "machine.cluster.x-k8s.io/exclude-node-draining"
EXCLUDE_VOLUME_WAIT = "machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach"
# A pod label that takes it out of the drain (Cluster API's drain label).
DRAIN_LABEL = "cluster.x-k8s.io/drain"
SIGNAL_NODE = "NodeReady"
SIGNAL_AWS_ONLY = "InstanceRunning"


# readiness (CAPI's Machine Ready/Available) ------------------------------------------------------------------------
@dataclass(frozen=True)
class Readiness:
    available: bool
    reason: str  # why not available ('' when available)
    signal: str = SIGNAL_NODE  # NodeReady, or InstanceRunning when the Kubernetes API is not used
    node: str | None = None
    node_ready: str | None = None  # the Node's Ready status
    member: str | None = None  # voter | learner | unanswered | alarm:<names> | missing | unknown (control plane)

    def as_dict(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "reason": self.reason or None,
            "signal": self.signal,
            "node": self.node,
            "node_ready": self.node_ready,
            "etcd_member": self.member,
        }


def member_state(etcd: EtcdStatus | None, node: str) -> str:
    if etcd is None:
        return "unknown"
    member = etcd.by_name(node)
    if member is None:
        return "missing"
    if node in etcd.unanswered:
        return "unanswered"
    alarms = etcd.alarms.get(member.id)
    if alarms:
        return "alarm:" + ",".join(alarms)
    return "learner" if member.is_learner else "voter"


def etcd_unanswered(workload: Workload, node: str) -> str:
    return workload.etcd.unanswered.get(node, "") if workload.etcd is not None else ""


def readiness(
    workload: Workload | None,
    *,
    instance_state: str,
    zone: str,
    instance_id: str,
    node_name: str,
    control_plane: bool,
    min_ready_seconds: int = 0,
    now: datetime.datetime | None = None,
) -> Readiness:
    """Whether one machine counts as available, and why not."""
    if instance_state != "running":
        return Readiness(False, f"instance {instance_state}", SIGNAL_AWS_ONLY if workload is None else SIGNAL_NODE)
    if workload is None or not workload.reachable:
        # No Kubernetes API: only EC2 says anything. Named, so results and warnings say what was judged.
        return Readiness(True, "", SIGNAL_AWS_ONLY)
    node = workload.node_for(zone, instance_id, node_name)
    if node is None:
        return Readiness(False, f"no Node {node_name} (or providerID {provider_id(zone, instance_id)}) yet")
    if control_plane:
        return _control_plane_readiness(workload, node)
    if node.ready != "True":
        return Readiness(False, f"Node {node.name} is not Ready ({node.ready})", node=node.name, node_ready=node.ready)
    if min_ready_seconds and node.ready_since is not None:
        now = now or datetime.datetime.now(datetime.timezone.utc)
        ready_for = (now - node.ready_since).total_seconds()
        if ready_for < min_ready_seconds:
            reason = f"Node {node.name} Ready for {int(ready_for)}s of min_ready_seconds {min_ready_seconds}"
            return Readiness(False, reason, node=node.name, node_ready=node.ready)
    return Readiness(True, "", node=node.name, node_ready=node.ready)


def _control_plane_readiness(workload: Workload, node: NodeView) -> Readiness:
    member = member_state(workload.etcd, node.name)
    base = {"node": node.name, "node_ready": node.ready, "member": member}
    pods = workload.static_pods.get(node.name, {})
    unready = [c for c in COMPONENTS if not pods.get(c)]
    if unready:
        return Readiness(False, f"static pods not ready on {node.name}: {', '.join(unready)}", **base)
    if member != "voter":
        reason = {
            "missing": f"no etcd member {node.name}",
            "learner": f"etcd member {node.name} is a learner, not yet promoted",
            "unknown": f"etcd not readable: {workload.etcd_error}",
            "unanswered": f"etcd member {node.name} does not answer: {etcd_unanswered(workload, node.name)}",
        }.get(member, f"etcd member {node.name} has an alarm ({member[6:]})")
        return Readiness(False, reason, **base)
    if node.ready != "True" and workload.network_up:
        # Joined, but its kubelet waits for the CNI pod on it: counted available now, the run would end (and
        # write its status) with a NotReady control-plane Node that the next run finds Ready.
        return Readiness(False, f"Node {node.name} is not Ready ({node.ready})", **base)
    return Readiness(True, "", **base)


# health from the Node (CAPI's MachineHealthCheck targets) ---------------------------------------------------------
@dataclass(frozen=True)
class NodeHealth:
    """What a running machine's Node says of its health."""

    reason: str = ""  # why the machine is unhealthy ('' when the Node does not make it so)
    starting: bool = False  # no Node yet, inside node_startup_timeout: neither healthy nor unhealthy


def node_health(
    node: NodeView | None,
    *,
    node_name: str,
    launched: datetime.datetime | None,
    check: HealthCheck,
    now: datetime.datetime,
) -> NodeHealth:
    """MHC's verdict on one running machine of a cluster that answered: no Node past ``node_startup_timeout``
    (counted from the instance's launch), or a Node condition held for its timeout (any one entry is enough)."""
    if node is None:
        age = (now - launched).total_seconds() if launched is not None else 0.0
        timeout = check.node_startup_timeout
        if timeout and age >= timeout:
            return NodeHealth(f"no Node {node_name} {int(age)}s after launch (node_startup_timeout {timeout}s)")
        return NodeHealth(starting=True)
    for wanted in check.unhealthy_node_conditions:
        found = node.condition(wanted.type)
        if found is None or found.status != wanted.status:
            continue
        held = (now - found.since).total_seconds() if found.since is not None else float(wanted.timeout)
        if held >= wanted.timeout:
            return NodeHealth(
                f"Node {node.name} {wanted.type}={wanted.status} for {int(held)}s (timeout {wanted.timeout}s)"
            )
    return NodeHealth()


# control-plane safety (KCP's preflight and quorum projection) ----------------------------------------------------
@dataclass(frozen=True)
class ControlPlaneMachine:
    """What the safety rules need of one control-plane machine."""

    name: str
    node: str | None  # its Node's name, None without one
    leaving: bool  # its instance is shutting down / terminating
    readiness: Readiness
    updated: bool = True  # built from the group's current definition (not due for replacement)


def preflight(
    machines: Sequence[ControlPlaneMachine], etcd: EtcdStatus | None, excluding: str | None = None
) -> str | None:
    """Why a control-plane scale-up, scale-down or replacement step may not start now (None: it may).

    ``excluding`` is the machine about to be removed: it need not be healthy (a scale-down of a sick one).
    """
    leaving = [m.name for m in machines if m.leaving]
    if leaving:
        return f"control-plane machine {', '.join(leaving)} is being deleted: one change at a time"
    if etcd is None:
        return "the etcd member list could not be read"
    problems = [p for p in (_machine_problem(machines, excluding), _member_problem(etcd)) if p]
    return "; ".join(problems) or None


def _machine_problem(machines: Sequence[ControlPlaneMachine], excluding: str | None) -> str | None:
    for machine in machines:
        if machine.name == excluding:
            continue
        if machine.node is None:
            return f"control-plane machine {machine.name} has no Node yet"
        if not machine.readiness.available:
            return f"control-plane machine {machine.name} is not healthy: {machine.readiness.reason}"
    return None


def _member_problem(etcd: EtcdStatus) -> str | None:
    for member in etcd.members:
        if not member.started:
            return f"etcd member {member.id} was added but never started (it blocks every join until removed)"
        if member.is_learner:
            return f"etcd member {member.name} is a learner (a join is still in progress, or one that never caught up)"
    return None


def quorum_allows(
    etcd: EtcdStatus, machine_health: Mapping[str, bool], *, add: bool = False, remove: str | None = None
) -> tuple[bool, str]:
    """KCP's projection (targetEtcdClusterHealthy): may etcd add a member / lose ``remove`` and keep quorum?

    ``machine_health`` maps the member name (node name) of every control-plane machine to whether that machine is
    healthy; a member no machine explains counts as healthy unless etcd reports an alarm for it. A member to be
    added counts as a voter and as unhealthy until it has joined, except in a cluster of at most one member. Any
    learner, or a member that never started, blocks the step.
    """
    if any(m.is_learner or not m.started for m in etcd.members):
        return False, "etcd has a learner or a member that never started"
    voters = [m for m in etcd.members if m.name != remove]
    unhealthy = sum(1 for m in voters if etcd.alarms.get(m.id) or not machine_health.get(m.name, True))
    size = len(voters)
    if add:
        size += 1
        if len(etcd.members) > 1:
            unhealthy += 1
    quorum = size // 2 + 1
    detail = f"{size - unhealthy} healthy of {size} voters after the change, quorum {quorum}"
    return size - unhealthy >= quorum, detail


def leader_candidates(machines: Sequence[ControlPlaneMachine], leaving: str) -> list[str]:
    """Where leadership may go from ``leaving``'s member: Nodes of machines not going - healthy ones first, then up
    to date (a rollout moves leadership once, onto a machine that stays), in the input order (KCP sorts
    etcd-healthy first, then up to date, then newest)."""
    able = [m for m in machines if m.name != leaving and m.node is not None and not m.leaving]
    return [m.node for m in sorted(able, key=lambda m: (not m.readiness.available, not m.updated)) if m.node]


def stray_members(etcd: EtcdStatus, machines: Sequence[ControlPlaneMachine]) -> list[Member]:
    """etcd members that no control-plane machine explains (a killed run's leftovers), never-started ones first.

    Only judged once every machine has a Node: a member may belong to a machine still joining (KCP skips then too).
    """
    if any(m.node is None for m in machines if not m.leaving):
        return []
    nodes = {m.node for m in machines}
    stray = [m for m in etcd.members if not m.started or m.name not in nodes]
    return sorted(stray, key=lambda m: (m.started, m.name))


# drain (CAPI's filters, aligned with kubectl drain) ----------------------------------------------------------------
@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    reason: str = ""  # why it is skipped ('' when it is evicted)


def pods_to_evict(pods: Iterable[Mapping[str, Any]]) -> tuple[list[PodRef], list[PodRef]]:
    """(to evict, skipped) among the pods of one Node. DaemonSet pods and mirror (static) pods stay, as does a pod
    labelled ``cluster.x-k8s.io/drain: skip``; pods already deleting are left to finish; everything else is
    evicted through the Eviction API (PodDisruptionBudgets apply)."""
    evict: list[PodRef] = []
    skipped: list[PodRef] = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        ref = (metadata.get("namespace", "default"), metadata.get("name", ""))
        owners = metadata.get("ownerReferences") or []
        if (metadata.get("annotations") or {}).get(MIRROR_ANNOTATION) is not None:
            skipped.append(PodRef(*ref, reason="mirror pod"))
        elif any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners):
            skipped.append(PodRef(*ref, reason="DaemonSet pod"))
        elif (metadata.get("labels") or {}).get(DRAIN_LABEL) == "skip":
            skipped.append(PodRef(*ref, reason=f"label {DRAIN_LABEL}=skip"))
        elif metadata.get("deletionTimestamp"):
            skipped.append(PodRef(*ref, reason="already terminating"))
        else:
            evict.append(PodRef(*ref))
    return evict, skipped
