# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the Kubernetes side of one machine group - what its cluster says of the machines, and the steps that
keep the cluster whole while machines come and go.

The instance tier asks :class:`GroupWorkload` three things per step of a rollout:

* :meth:`~GroupWorkload.observe` - one read of the cluster (Nodes; for a control plane also its static pods and
  etcd) and each machine's :class:`~.lifecycle.Readiness`, so the rollout counts *available* machines as a
  MachineDeployment / KubeadmControlPlane does, not EC2 ``running``;
* :meth:`~GroupWorkload.guard` - for a control plane, KCP's preflight and etcd quorum projection before a step
  starts; a step that could lose quorum, or that cannot be judged because etcd is out of reach, is refused;
* :meth:`~GroupWorkload.retire` / :meth:`~GroupWorkload.forget` - the Machine controller's deletion: etcd
  leadership moved off, Node drained, volumes detached, etcd member removed, all before ``TerminateInstances``;
  the Node deleted once the instance is gone;
* :meth:`~GroupWorkload.join_token` / :meth:`~GroupWorkload.tidy_join_tokens` - CABPK's bootstrap tokens: one
  minted in the cluster for each machine that joins, renewed while it has not, deleted once it has.

Only kubeadm machines are asked about: for other bootstrap types (raw, none, EKS self-managed nodes) the group is
judged by EC2's state alone. ``kubernetes_api.mode`` (``workload.access``) says what happens without an API server.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.operations import is_placeholder
from ..kernel.options import Option, argument_spec
from ..kernel.waiting import wait_until, watched_sleep
from ..kubeadm import bootstrap_tokens as tokens
from ..kubeadm.cloud_init import cluster_configuration_version, normalise_version, with_kubernetes_version
from ..kubeadm.pki import ClusterPki
from ..workload.access import KUBERNETES_API, KubernetesAccess, KubernetesApiSettings
from ..workload.credentials import certificate_expiry
from ..workload.etcd import Etcd, EtcdStatus, apiserver_certificate
from ..workload.kube import UNREACHABLE, KubeApi, PlannedApi
from ..workload.observe import NodeView, Workload
from . import node_lifecycle as _nodes
from .join_tokens import JoinTokens, recall_init_token
from .lifecycle import (
    SIGNAL_AWS_ONLY,
    ControlPlaneMachine,
    NodeHealth,
    Readiness,
    leader_candidates,
    node_health,
    preflight,
    quorum_allows,
    readiness,
    stray_members,
)
from .plan import CERTIFICATES_EXPIRY_TAG, HealthCheck, Machine, Step

# How often a wait for machines to join reads the cluster again.
JOIN_POLL = 5.0
# kubeadm join --control-plane renders the static pods of the version the cluster's ClusterConfiguration names.
KUBEADM_CONFIG = ("kube-system", "kubeadm-config")

# The options of a machine group's Kubernetes side (capa_instance's DOCUMENTATION says the same; ansible-test's
# validate-modules compares them).
NODE_OPTIONS: tuple[Option, ...] = (
    KUBERNETES_API,
    Option(
        "node_drain_timeout",
        "Seconds a drain may take before the machine goes anyway (Cluster API's C(nodeDrainTimeout)); C(0) - "
        "until I(wait_timeout) runs out, then the run fails and keeps the machine.",
        type="int",
        default=0,
    ),
    Option(
        "node_volume_detach_timeout",
        "Seconds to wait for a drained Node's volumes to detach (C(nodeVolumeDetachTimeout)); C(0) - until "
        "I(wait_timeout) runs out.",
        type="int",
        default=0,
    ),
    Option(
        "min_ready_seconds",
        "Seconds a worker's Node must have been C(Ready) before its machine counts as available (a "
        "MachineDeployment's C(minReadySeconds)).",
        type="int",
        default=0,
    ),
    Option(
        "cluster_deletion",
        "The whole cluster is being deleted: machines go without a drain (Cluster API skips it then too).",
        type="bool",
        default=False,
    ),
)


def node_argument_spec() -> dict[str, Any]:
    return argument_spec(NODE_OPTIONS)


@dataclass(frozen=True)
class NodeSettings:
    """The group's options for the Kubernetes side (Cluster API's Machine / MachineDeployment fields)."""

    kubernetes_api: KubernetesApiSettings = KubernetesApiSettings()
    node_drain_timeout: int = 0  # seconds; 0 = drain until the run's wait budget ends
    node_volume_detach_timeout: int = 0
    min_ready_seconds: int = 0
    cluster_deletion: bool = False  # the whole cluster goes: no drain, no etcd member removal (CAPI skips both)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> NodeSettings:
        """The :data:`NODE_OPTIONS` of a module's validated parameters."""
        return cls(
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
            node_drain_timeout=params["node_drain_timeout"],
            node_volume_detach_timeout=params["node_volume_detach_timeout"],
            min_ready_seconds=params["min_ready_seconds"],
            cluster_deletion=params["cluster_deletion"],
        )


@dataclass
class Departure:
    """A machine on its way out, and the Node to delete once its instance is gone."""

    machine: Machine
    node: str | None
    group: list[Machine] = field(default_factory=list)  # the group as it was when the machine started to go


class GroupWorkload:
    """The workload cluster as one group's run sees it (kubeadm machines only)."""

    def __init__(
        self,
        ctx: Context,
        settings: NodeSettings,
        *,
        group: str,
        control_plane: bool,
        asks_cluster: bool,
        endpoint: tuple[str, int],
        pki: Callable[[], ClusterPki | None],
        token_ttl: int = tokens.DEFAULT_MACHINE_TTL,
    ) -> None:
        self.ctx, self.settings, self.group = ctx, settings, group
        self.token_ttl = token_ttl
        self.tokens: JoinTokens | None = None
        self._api_down = ""  # why minting a token found no API in this run
        self.control_plane = control_plane
        self.asks_cluster = asks_cluster  # kubeadm bootstrap: the cluster's API is the one in the PKI secret
        self.endpoint = endpoint
        self._pki = pki
        self.access: KubernetesAccess | None = None
        self.workload: Workload | None = None
        self.answered = False  # the API answered once in this run
        self.version_named: str | None = None  # the version kubeadm-config names (read or written in this run)
        self._warned: set[str] = set()

    # observing -------------------------------------------------------------------------------------------------
    @property
    def reachable(self) -> bool:
        return self.workload is not None and self.workload.reachable

    @property
    def reason(self) -> str:
        """Why the cluster is not asked (empty when it is)."""
        if not self.asks_cluster:
            return "not a kubeadm machine group"
        if self.workload is None:
            return self.access.reason if self.access is not None else "the cluster PKI does not exist yet"
        return self.workload.reason

    def observe(self, machines: list[Machine], *, first: bool = False) -> None:
        """One read of the cluster, and each machine's readiness from it.

        The ``first`` read of a run decides whether the API is there (``kubernetes_api.mode: required`` fails
        without it, before any change; ``auto`` goes on without it for the run). Later reads - while machines
        join - ask again each time: a first control plane's API server only starts with ``kubeadm init``.
        """
        if not self.asks_cluster or not any(_real(m) and m.state == "running" for m in machines):
            return  # nothing the cluster could say anything about yet
        access = self._open()
        if access is None:
            return
        nodes = [m.private_dns_name for m in machines if _real(m) and m.private_dns_name and not m.leaving]
        self.workload = access.observe(nodes if self.control_plane else None, again_later=not first)
        self.answered = self.answered or self.workload.reachable
        now = datetime.datetime.now(datetime.timezone.utc)
        for machine in machines:
            machine.readiness = self._readiness(machine, now)

    def _open(self) -> KubernetesAccess | None:
        if self.access is None:
            host, port = self.endpoint
            cluster_ca: Callable[[], tuple[str, str]] = self._cluster_ca
            etcd_ca: tuple[str | None, str | None] = (None, None)
            if self.control_plane or self.ctx.check_mode:
                pki = self._pki()  # the etcd client is made now; check mode may find no PKI to ask with
                if pki is None:  # check mode before capa_kubeadm ran: there is no cluster to ask yet
                    return None
                cluster_ca = pki.cluster_ca
                if self.control_plane:
                    etcd_ca = (pki.etcd_ca_cert, pki.etcd_ca_key)
            # Otherwise a worker group reads the PKI when its first request goes out: none does on a run whose Node
            # list an earlier step handed on and whose API an earlier step found unreachable.
            self.access = KubernetesAccess.open(
                self.ctx,
                self.settings.kubernetes_api,
                endpoint_host=host,
                endpoint_port=port,
                cluster_ca=cluster_ca,
                etcd_ca_certificate=etcd_ca[0],
                etcd_ca_key=etcd_ca[1],
            )
        return self.access

    def _cluster_ca(self) -> tuple[str, str]:
        pki = self._pki()
        if pki is None:  # only check mode reads the PKI with missing_ok, and it reads it at once (_open)
            raise ReconcileError("the cluster PKI is missing: run capa_kubeadm first")
        return pki.cluster_ca()

    @property
    def expects_api(self) -> bool:
        """An API that does not answer now is one to wait for (``required``, or it answered earlier in the run);
        otherwise (``auto``) the machines are judged by EC2 alone."""
        return self.settings.kubernetes_api.mode == "required" or self.answered

    def _readiness(self, machine: Machine, now: datetime.datetime) -> Readiness | None:
        if not _real(machine):
            return None  # check mode's planned machine: counted as EC2 would count it
        if machine.state == "running" and not self.reachable and self.expects_api:
            return Readiness(False, f"the Kubernetes API does not answer yet ({self.reason})")
        return readiness(
            self.workload,
            instance_state=machine.state,
            zone=machine.zone,
            instance_id=machine.id,
            node_name=machine.private_dns_name,
            control_plane=self.control_plane,
            min_ready_seconds=self.settings.min_ready_seconds,
            now=now,
        )

    def node_health(self, machine: Machine, check: HealthCheck, now: datetime.datetime) -> NodeHealth:
        """What the machine's Node says of its health; nothing (healthy) unless the cluster answered this run and
        the machine is a running instance (MHC judges only what the workload cluster can show)."""
        if not self.reachable or not _real(machine) or machine.state != "running":
            return NodeHealth()
        launched = datetime.datetime.fromisoformat(machine.launch_time) if machine.launch_time else None
        return node_health(
            self._node(machine), node_name=machine.private_dns_name, launched=launched, check=check, now=now
        )

    def _node(self, machine: Machine) -> NodeView | None:
        if not self.reachable or not _real(machine):
            return None
        return self._observed().node_for(machine.zone, machine.id, machine.private_dns_name)

    # waiting for machines to join ------------------------------------------------------------------------------
    def wait_joined(self, machines: list[Machine], waiting: list[Machine]) -> None:
        """Read the cluster until every machine of ``waiting`` is available, within the run's wait budget; the
        wait's progress reports (every 30 s) say who is still joining, and why."""
        names = ", ".join(m.name for m in waiting)

        def poll() -> list[Machine]:
            self.observe(machines)
            return [m for m in waiting if m.joining]

        def still_joining(still: list[Machine]) -> str:
            return "; ".join(f"{m.name}: {_why(m)}" for m in still)

        try:
            wait_until(
                poll,
                lambda still: not still,
                self.ctx,
                f"{names} to join the cluster",
                JOIN_POLL,
                state=still_joining,
                sleep=lambda seconds: self._until_nodes_change(waiting, seconds),
            )
        except ReconcileError as e:
            detail = "; ".join(f"{m.name}: {_why(m)}" for m in waiting if m.joining)
            raise ReconcileError(f"{e} ({detail})" if detail else str(e)) from None

    def _until_nodes_change(self, waiting: list[Machine], seconds: float) -> None:
        """A pause of the join wait: a watch of the Nodes, over as soon as a Node of ``waiting`` is added or changes
        (a Node turning Ready is seen at once, as Cluster API's watches see it, not at the next poll), at most
        ``seconds``; without an API that answered the pause is slept."""
        api = self.access.api if self.access is not None and self.reachable else None
        nodes = {m.private_dns_name for m in waiting if m.private_dns_name}

        def wanted(_kind: str, node: dict[str, Any]) -> bool:
            return (node.get("metadata") or {}).get("name") in nodes

        def watch(pause: float) -> bool:
            return bool(api is not None and nodes and api.watch_for("/api/v1/nodes", "k8s:WatchNodes", wanted, pause))

        watched_sleep(self.ctx, seconds, watch)

    # the control plane's guard (KCP) ---------------------------------------------------------------------------
    def guard(self, step: Step, machines: list[Machine]) -> None:
        """Refuse a control-plane step that could lose etcd quorum, or that cannot be judged."""
        if not self.control_plane or not self.asks_cluster:
            return
        existing = [m for m in machines if _real(m) and not m.leaving]
        if not existing:
            return  # the first machine: kubeadm init
        what = (
            f"removing control-plane machine {step.delete[0].name}"
            if step.delete
            else f"adding a control-plane machine to {len(existing)}"
        )
        if not self.reachable:
            if step.delete:
                raise self._blind(what, "Nothing of this step was changed")
            self._warn_once("join", f"group {self.group}: {what} without asking etcd ({self.reason})")
            return
        leaving = step.delete[0] if step.delete else None
        sick = leaving.name if leaving is not None and not leaving.available else None
        why_not = preflight(self._control_plane(machines), self._observed().etcd, excluding=sick)
        if why_not:
            raise ReconcileError(f"refused: {what}: {why_not}. Nothing of this step was changed")
        etcd = self._etcd_status()  # preflight refuses without it
        health = {m.readiness.node: m.available for m in existing if m.readiness and m.readiness.node}
        node = leaving.readiness.node if leaving is not None and leaving.readiness else None
        allowed, detail = quorum_allows(etcd, health, add=not step.delete, remove=node)
        if not allowed:
            raise ReconcileError(f"refused: {what} would lose etcd quorum ({detail}). Nothing of this step was changed")

    def target_version(self, version: str, machines: list[Machine]) -> None:
        """Before a control-plane machine of another version joins: the ClusterConfiguration in kubeadm-config
        names that version, as KubeadmControlPlane rewrites it before a rollout - ``kubeadm join --control-plane``
        runs the control-plane components of the version it finds there, not of the machine's image. One read per
        run that launches a control-plane machine; a write only when the version differs."""
        existing = [m for m in machines if _real(m) and not m.leaving]
        wanted = normalise_version(version) if version else ""
        if not (self.control_plane and self.asks_cluster and wanted and existing and self.reachable):
            return  # kubeadm init writes it; without the API, guard() has said so already
        if self.version_named == wanted:
            return  # read (or written, or in check mode planned) earlier in this run
        namespace, name = KUBEADM_CONFIG
        path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
        found = self._api().get(path, "k8s:GetConfigMap")
        if found is None:
            raise ReconcileError(f"ConfigMap {namespace}/{name} is missing: this is not a cluster kubeadm initialised")
        text = (found.get("data") or {}).get("ClusterConfiguration") or ""
        current = cluster_configuration_version(text)
        self.version_named = wanted
        if current == wanted:
            return
        manifest = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"ClusterConfiguration": with_kubernetes_version(text, wanted)},
        }
        self.ctx.ops.call(
            self._api(),
            "apply",
            resource=f"ConfigMap {namespace}/{name}",
            reason=f"the control plane moves from {current or 'an unknown version'} to {wanted}",
            predicted={},
            manifest=manifest,
        )

    def refuse_blind_removals(self, going: list[Machine]) -> None:
        """Before anything: a control plane that will lose machines in this run (outdated, beyond replicas, to
        remediate) cannot keep etcd's quorum without etcd - refused while nothing has changed yet."""
        if self.control_plane and self.asks_cluster and going and not self.reachable:
            names = ", ".join(m.name for m in going)
            raise self._blind(f"removing control-plane machine(s) {names}", "Nothing was changed")

    def _blind(self, what: str, changed: str) -> ReconcileError:
        return ReconcileError(
            f"refused: {what} needs etcd to keep its quorum, but the Kubernetes API is not reachable ({self.reason}). "
            f"{changed}. Reach the API from the controller (kubernetes_api.server: a tunnel, an SSM port forward "
            "or a proxy to the endpoint; kubernetes_api.mode: required to wait for it) and run again"
        )

    def _control_plane(self, machines: list[Machine]) -> list[ControlPlaneMachine]:
        # Instances already going are not members any more (their member went before TerminateInstances, or is a
        # stray member now): the rules judge the machines that stay.
        return [
            ControlPlaneMachine(
                name=m.name,
                node=m.readiness.node if m.readiness else None,
                leaving=False,
                readiness=m.readiness if isinstance(m.readiness, Readiness) else Readiness(False, "not asked"),
                updated=m.updated,
            )
            for m in machines
            if _real(m) and not m.leaving
        ]

    def remove_stray_members(self, machines: list[Machine]) -> None:
        """etcd members no machine explains (a run killed between MemberAdd and its machine, or between
        TerminateInstances and MemberRemove) are removed while quorum allows, as KCP does."""
        if not self.control_plane or not self.reachable or self.workload is None or self.workload.etcd is None:
            return
        etcd, client = self.workload.etcd, self._etcd()
        cp = self._control_plane(machines)
        health = {m.node: m.readiness.available for m in cp if m.node}
        via = [m.node for m in cp if m.node and m.readiness.available]
        for member in stray_members(etcd, cp):
            allowed, detail = quorum_allows(etcd, health, remove=member.name)
            if not allowed or not via:
                self.ctx.warn(f"etcd member {member.name or member.id} matches no machine; kept ({detail})")
                continue
            _nodes.remove_stray_member(self.ctx, client, member.id, member.name or member.id, via)

    # a machine's departure (CAPI's Machine deletion) -----------------------------------------------------------
    def retire(self, going: list[Machine], machines: list[Machine]) -> list[Departure]:
        """What comes first when machines go: for each, etcd leadership off it (control plane), its Node cordoned
        and drained, its volumes detached. Its etcd member goes later (:meth:`release`)."""
        if not going:
            return []
        if not self.asks_cluster or self.settings.cluster_deletion:
            return [Departure(m, None) for m in going]
        if not self.reachable:
            names = ", ".join(m.name for m in going)
            self._warn_once(
                "drain", f"group {self.group}: {names} removed without a drain ({self.reason or 'no Kubernetes API'})"
            )
            return [Departure(m, None) for m in going]
        departures = []
        for machine in going:
            node = self._node(machine)
            if node is None:
                departures.append(Departure(machine, None))
                continue
            if self.control_plane:
                self._leadership_off(machine, node.name, machines)
            self._drain(machine, node)
            departures.append(Departure(machine, node.name, machines))
        return departures

    def release(self, departures: list[Departure]) -> None:
        """After the drain and the load balancers, before ``TerminateInstances``: the etcd members of departing
        control-plane machines (their API servers get no more traffic, their members would vote on as dead)."""
        if not self.control_plane:
            return
        for departure in departures:
            if departure.node is not None:
                self._remove_member(departure.machine, departure.node, departure.group)

    def _drain(self, machine: Machine, node: NodeView) -> None:
        api = self._api()
        # A Node whose kubelet stopped reporting cannot finish evictions: CAPI skips the wait for such a Node.
        unreachable = node.ready == "Unknown"
        if unreachable:
            self.ctx.warn(f"node {node.name} (machine {machine.name}) is unreachable: not drained")
        outcome = _nodes.drain_node(
            self.ctx, api, node, machine.name, timeout=self.settings.node_drain_timeout, excluded=unreachable
        )
        if not outcome.excluded:
            _nodes.wait_volumes_detached(
                self.ctx, api, node.name, machine.name, timeout=self.settings.node_volume_detach_timeout
            )

    def _leadership_off(self, machine: Machine, node: str, machines: list[Machine]) -> None:
        candidates = leader_candidates(self._control_plane(machines), machine.name)
        _nodes.move_leadership_off(
            self.ctx, self._etcd(), self._etcd_status(), node, candidates, planned=self._planned(machines)
        )

    def _remove_member(self, machine: Machine, node: str, machines: list[Machine]) -> None:
        via = self._planned(machines) + leader_candidates(self._control_plane(machines), machine.name)
        _nodes.remove_member(self.ctx, self._etcd(), self._etcd_status(), node, via)

    def _planned(self, machines: list[Machine]) -> list[str]:
        """Check mode's machines of this run: up to date, and joined by the time the apply would remove anything
        (it waits for them), so the plan moves leadership and removes members through them as the apply will."""
        if not self.ctx.check_mode:
            return []
        return [m.name for m in machines if not _real(m) and not m.leaving]

    def forget(self, departures: list[Departure]) -> None:
        """After the instances are gone: their Node objects (Cluster API deletes them after the infrastructure)."""
        for departure in departures:
            if departure.node is not None:
                _nodes.delete_node(self.ctx, self._api(), departure.node, departure.machine.name)

    # what a step needs, once observed (a missing one is a bug: the callers check reachable first) ----------------
    def _observed(self) -> Workload:
        if self.workload is None:
            raise ReconcileError("the workload cluster was not observed before it was used (a bug)")
        return self.workload

    def _etcd_status(self) -> EtcdStatus:
        status = self._observed().etcd
        if status is None:
            raise ReconcileError(f"etcd's member list could not be read: {self._observed().etcd_error}")
        return status

    def _api(self) -> KubeApi:
        if self.access is None or self.access.api is None:
            raise ReconcileError("the Kubernetes API client is gone (a bug)")
        return self.access.api

    def _etcd(self) -> Etcd:
        if self.access is None or self.access.etcd is None:
            raise ReconcileError("the etcd client is gone: the etcd CA is not known")
        return self.access.etcd

    # certificate expiries (KCP) --------------------------------------------------------------------------------
    def record_certificate_expiries(self, machines: list[Machine]) -> None:
        """Once per control-plane machine that is available: its kube-apiserver's serving certificate expiry,
        read through a port-forward as KCP reads it, kept as the instance tag CERTIFICATES_EXPIRY_TAG (KCP keeps an
        annotation) so every later run - and capa_cluster_info - has it with the instances, at no cost."""
        if not (self.control_plane and self.asks_cluster and self.reachable):
            return
        pki = self._pki()
        if pki is None:
            return
        for machine in machines:
            if machine.leaving or machine.certificates_expire:
                continue
            if not _real(machine):
                if self.ctx.check_mode and self.ctx.wait:  # the apply reads and tags it once it joined
                    self._tag_certificates(machine, "planned")
                continue
            node = self._node(machine) if machine.available else None
            if node is None:
                continue
            try:
                expiry = certificate_expiry(apiserver_certificate(self._api(), node.name, pki.cluster_ca_cert))
            except RemoteError as e:
                self._warn_once(f"certificates:{machine.name}", f"{machine.name}: certificate expiry not read: {e}")
                continue
            value = tokens.rfc3339(expiry)
            self._tag_certificates(machine, value)
            machine.tags = {**machine.tags, CERTIFICATES_EXPIRY_TAG: value}

    def _tag_certificates(self, machine: Machine, value: str) -> None:
        self.ctx.ops.call(
            self.ctx.client("ec2"),
            "create_tags",
            resource=machine.name,
            reason="its API server certificate's expiry, read once",
            Resources=[machine.id],
            Tags=[{"Key": CERTIFICATES_EXPIRY_TAG, "Value": value}],
        )

    # join tokens (CABPK) ---------------------------------------------------------------------------------------
    def join_token(self, machine: str) -> str:
        """A bootstrap token minted in the cluster for ``machine`` alone, valid for ``token_ttl`` seconds (before
        its launch: a machine that cannot get one is not launched - it could never join)."""
        access = self._open()
        api: KubeApi | PlannedApi | None = access.api if access is not None else None
        reason = self.reason or "the cluster does not answer yet"
        if api is None and self.ctx.check_mode:
            api = PlannedApi(reason)  # the apply mints it once the API answers (after kubeadm init)
        if api is None or self._api_down:
            return self._init_token(machine, self._api_down or reason)
        try:
            join_tokens = self._tokens(api)
            join_tokens.all()  # the run's one read of the tokens; it also says whether the API answers
            return join_tokens.mint(
                group=self.group, holder=machine, ttl=self.token_ttl, reason="a machine joins with a token of its own"
            )
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            self._api_down = str(e)  # asked once per run: the next joins of the run do not wait for it again
            return self._init_token(machine, self._api_down)

    def _init_token(self, machine: str, reason: str) -> str:
        """Without the API: kubeadm init's token while it has enough life left (a first build from outside the
        cluster's network), else the join is refused before the launch."""
        value = recall_init_token(self.ctx, tokens.MIN_TTL)
        if value is None:
            raise self._tokenless(machine, reason)
        self._warn_once(
            "init-token",
            f"group {self.group}: the Kubernetes API is not reachable ({reason}); machines join with kubeadm init's "
            "token while it lasts - later joins need the API",
        )
        return value

    def tidy_join_tokens(self, machines: list[Machine]) -> None:
        """After the rollout: tokens of machines still on their way to join are renewed (when less than half their
        TTL is left), tokens of machines that joined or went are deleted, and so is the token that never expires,
        as releases before 0.2.0 minted it at ``kubeadm init``. Only with the cluster answering: the one read is the
        list of bootstrap tokens."""
        if not self.asks_cluster or (self.workload is not None and not self.reachable):
            return  # asked this run, and the API did not answer
        access = self._open()
        if access is None or access.api is None:
            return
        join_tokens = self._tokens(access.api)
        try:
            join_tokens.all()
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            return
        now = tokens.utc_now()
        by_name = {m.name: m for m in machines if not m.leaving}
        for token in join_tokens.of_group(self.group):
            machine = by_name.get(token.holder or "")
            # Joined only when this run saw its Node (not asked yet this run: still joining, the token kept); check
            # mode's planned machines join as the apply waits for them to (it shows the rollout as if they came up).
            planned = machine is not None and not _real(machine) and self.ctx.check_mode and self.ctx.wait
            seen = machine is not None and self.reachable and _real(machine) and self._node(machine) is not None
            joined = planned or seen
            joining = machine is not None and not joined
            action = tokens.machine_token_action(token, joining=joining, ttl=self.token_ttl, now=now)
            if action == tokens.RENEW:
                join_tokens.renew(token, self.token_ttl)
            elif action == tokens.DELETE:
                join_tokens.delete(token, _token_gone_reason(token, machine, now))
        join_tokens.remove_legacy()

    def _tokens(self, api: KubeApi | PlannedApi) -> JoinTokens:
        if self.tokens is None or self.tokens.api is not api:
            self.tokens = JoinTokens(self.ctx, api)
        return self.tokens

    def _tokenless(self, machine: str, reason: str) -> ReconcileError:
        return ReconcileError(
            f"refused: launching {machine}: it joins with a bootstrap token minted in the cluster, and the Kubernetes "
            f"API is not reachable ({reason}); kubeadm init's token has expired or is about to. Nothing of this step "
            "was changed. Reach the API from the controller (kubernetes_api.server: a tunnel, an SSM port forward or "
            "a proxy to the endpoint) and run again"
        )

    # results ---------------------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        return {
            "asked": self.asks_cluster,
            "reachable": self.reachable,
            "reason": None if self.reachable else self.reason,
            "signal": "NodeReady" if self.reachable else SIGNAL_AWS_ONLY,
        }

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.ctx.warn(message)

    def close(self) -> None:
        if self.access is not None:
            self.access.close()


def _real(machine: Machine) -> bool:
    return not is_placeholder(machine.id)


def _token_gone_reason(token: tokens.JoinToken, machine: Machine | None, now: datetime.datetime) -> str:
    if token.expired(now):
        return "expired"
    if machine is None:
        return f"{token.holder} is gone"
    return f"{token.holder} joined the cluster"


def _why(machine: Machine) -> str:
    return machine.readiness.reason if machine.readiness and machine.readiness.reason else machine.state
