# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the pure decisions of a machine group (no AWS calls).

Cluster API's machine-set semantics as plain functions: machine names, failure-domain placement, health,
deletion order, and the next step of a rolling update bounded by ``max_surge`` / ``max_unavailable``. The
instance tier observes AWS, turns instances into :class:`Machine` values, and applies what these functions decide
(the template hash that tells an up-to-date machine from an outdated one is ``GroupSpec.definition``'s).
"""

from __future__ import annotations

import datetime
import random
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Sequence

from ..kernel.errors import SpecError
from ..kernel.options import Option
from ..kernel.validation import at, check_not_negative, check_resource_id
from .machine_spec import BOOTSTRAP_TAG, BootstrapRef


class Availability(Protocol):
    """What the workload cluster says of a machine (``lifecycle.Readiness``; declared here so that the pool modules,
    which never ask the cluster, do not bundle the workload client - AnsiballZ follows every import, even typed
    ones)."""

    @property
    def available(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    @property
    def node(self) -> str | None: ...

    @property
    def node_ready(self) -> str | None: ...

    def as_dict(self) -> dict[str, Any]: ...


# States a machine of the group can be in while it still counts (DescribeInstances filter values).
LIVE_STATES = ("pending", "running", "stopping", "stopped")
LEAVING_STATES = ("shutting-down", "terminated")
# Live states in which a machine is down although it still exists: CAPI's MachineHealthCheck remediates it.
DOWN_STATES = ("stopping", "stopped")
IMPAIRED = "impaired"
DEFAULT_MAX_UNHEALTHY = "100%"
# MachineHealthCheck's nodeStartupTimeout: a running machine with no Node after this long is unhealthy (0: never).
DEFAULT_NODE_STARTUP_TIMEOUT = 600
NODE_CONDITION_STATUSES = ("True", "False", "Unknown")

DELETION_POLICIES = ("Random", "Newest", "Oldest")
NAME_SUFFIX_CHARS = string.ascii_lowercase + string.digits
NAME_SUFFIX_LENGTH = 5

# CAPA's InstanceReady condition reasons (api/v1beta2/conditions_consts.go).
REASON_PROVISION_STARTED = "InstanceProvisionStarted"
REASON_NOT_READY = "InstanceNotReady"
REASON_STOPPED = "InstanceStopped"
REASON_TERMINATED = "InstanceTerminated"


# KCP's certificates-expiry annotation, as an instance tag (RFC 3339): read once through the workload cluster.
CERTIFICATES_EXPIRY_TAG = "clusterapi.aws/certificates-expiry"
# KCP's minimum for rolloutBefore.certificatesExpiryDays.
MIN_CERTIFICATES_EXPIRY_DAYS = 7


def certificates_due(expiry: str | None, days: int | None, now: datetime.datetime) -> str:
    """Why a control-plane machine is rolled for its certificates (KCP's ``rolloutBefore.certificatesExpiryDays``):
    they expire within ``days``; '' when they do not, when the expiry is not known, or without the option."""
    if not days or not expiry:
        return ""
    try:
        when = datetime.datetime.fromisoformat(expiry.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if when - now > datetime.timedelta(days=days):
        return ""
    return f"certificates expire {expiry}, within rollout_before_certificates_expiry_days ({days})"


@dataclass
class Machine:
    """One instance of the group: what the planner decides on, and what AWS last said about the instance."""

    id: str
    name: str
    zone: str
    state: str
    launch_time: str = ""
    template_hash: str = ""
    subnet_id: str = ""
    updated: bool = True
    created: bool = False  # launched by this run
    unhealthy: str = ""  # why the machine is to be remediated (set only when remediation is allowed)
    health_reason: str = ""  # why the health check found it unhealthy, remediated or not
    starting: bool = False  # running with no Node yet, inside node_startup_timeout (the cluster answered)
    certificates_due: str = ""  # why its certificates make it outdated (rollout_before_certificates_expiry_days)
    tags: dict[str, str] = field(default_factory=dict)
    private_ip: str | None = None
    public_ip: str | None = None
    image_id: str | None = None
    instance_type: str | None = None
    architecture: str | None = None  # its image's, as DescribeInstances reports it
    metadata_options: dict[str, Any] = field(default_factory=dict)
    private_dns_name: str = ""  # the node name kubeadm gives the kubelet
    # What the workload cluster says of the machine (None: not asked - AWS's state alone decides).
    readiness: Availability | None = None

    @property
    def certificates_expire(self) -> str | None:
        """When its kube-apiserver's serving certificate expires, as read once and kept in its tags (KCP's
        ``machine.cluster.x-k8s.io/certificates-expiry``)."""
        return self.tags.get(CERTIFICATES_EXPIRY_TAG)

    @property
    def bootstrap_ref(self) -> BootstrapRef | None:
        """Where the machine's bootstrap entries are (its bootstrap-data tag), so they go with it."""
        return BootstrapRef.from_tag(self.tags.get(BOOTSTRAP_TAG))

    @property
    def available(self) -> bool:
        """CAPI's available machine: running, not to be remediated and, when the cluster was asked, its Node
        joined (``Readiness``)."""
        if self.state != "running" or self.unhealthy:
            return False
        return self.readiness is None or self.readiness.available

    @property
    def joining(self) -> bool:
        """Running and healthy, but its Node has not joined yet (or not become ready): worth waiting for."""
        return self.state == "running" and not self.unhealthy and not self.available

    @property
    def leaving(self) -> bool:
        return self.state in LEAVING_STATES


@dataclass
class Step:
    """One step of a reconcile: how many machines to launch and which to remove."""

    create: int = 0
    delete: list[Machine] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.create and not self.delete


# names ---------------------------------------------------------------------------------------------------------------
def machine_name(cluster: str, group: str, taken: Iterable[str], rng: random.Random) -> str:
    """``<cluster>-<group>-<5 random [a-z0-9]>``, as CAPI names a MachineSet's machines, never one in use."""
    taken = set(taken)
    while True:
        suffix = "".join(rng.choice(NAME_SUFFIX_CHARS) for _position in range(NAME_SUFFIX_LENGTH))
        name = f"{cluster}-{group}-{suffix}"
        if name not in taken:
            return name


# status ----------------------------------------------------------------------------------------------------------
def instance_ready(state: str, just_created: bool = False) -> dict[str, Any]:
    """CAPA's InstanceReady condition for an instance state."""
    if state == "running":
        return {"status": True, "reason": ""}
    if state == "pending":
        return {"status": False, "reason": REASON_PROVISION_STARTED if just_created else REASON_NOT_READY}
    if state in ("stopping", "stopped"):
        return {"status": False, "reason": REASON_STOPPED}
    return {"status": False, "reason": REASON_TERMINATED}


# health (CAPI MachineHealthCheck) -------------------------------------------------------------------------------
@dataclass
class Remediation:
    """Which machines are unhealthy, and whether the guard lets this run replace them."""

    unhealthy: dict[str, str] = field(default_factory=dict)  # machine id -> reason
    remediate: list[str] = field(default_factory=list)  # ids to replace now
    allowed: bool = True
    reason: str = ""  # why remediation is held back, when it is

    def as_dict(self, names: Mapping[str, str], check: HealthCheck) -> dict[str, Any]:
        return {
            "max_unhealthy": check.max_unhealthy,
            "unhealthy_range": check.unhealthy_range,
            "unhealthy": [{"id": i, "name": names.get(i, i), "reason": r} for i, r in sorted(self.unhealthy.items())],
            "remediated": sorted(names.get(i, i) for i in self.remediate),
            "allowed": self.allowed,
            "skipped_reason": self.reason or None,
        }


@dataclass(frozen=True)
class UnhealthyCondition:
    """A Node condition that makes its machine unhealthy once it has held for ``timeout`` seconds (MHC's
    ``unhealthyNodeConditions`` entry)."""

    type: str
    status: str
    timeout: int

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> UnhealthyCondition:
        return cls(type=params["type"], status=params["status"], timeout=params["timeout"])


@dataclass(frozen=True)
class HealthCheck:
    """A group's MachineHealthCheck: what makes a machine unhealthy, and when remediation is held back."""

    max_unhealthy: str = DEFAULT_MAX_UNHEALTHY
    unhealthy_range: str | None = None
    unhealthy_node_conditions: tuple[UnhealthyCondition, ...] = ()
    node_startup_timeout: int = DEFAULT_NODE_STARTUP_TIMEOUT

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> HealthCheck:
        """The :data:`HEALTH_OPTIONS` of validated parameters (a module's, or a cluster spec section's)."""
        return cls(
            max_unhealthy=str(params["max_unhealthy"]),
            unhealthy_range=params["unhealthy_range"],
            unhealthy_node_conditions=tuple(
                UnhealthyCondition.from_params(c) for c in params["unhealthy_node_conditions"]
            ),
            node_startup_timeout=params["node_startup_timeout"],
        )

    @classmethod
    def of(cls, group: Any) -> HealthCheck:
        """The health check of a typed cluster spec section (the control plane, a machine deployment)."""
        return cls(
            max_unhealthy=str(group.max_unhealthy),
            unhealthy_range=group.unhealthy_range,
            unhealthy_node_conditions=tuple(
                UnhealthyCondition(c.type, c.status, c.timeout) for c in group.unhealthy_node_conditions
            ),
            node_startup_timeout=group.node_startup_timeout,
        )

    def validate(self, where: str = "") -> None:
        check_max_unhealthy(self.max_unhealthy, at(where, "max_unhealthy"))
        if self.unhealthy_range is not None:
            check_unhealthy_range(self.unhealthy_range, at(where, "unhealthy_range"))
        check_not_negative(self.node_startup_timeout, at(where, "node_startup_timeout"))
        for n, condition in enumerate(self.unhealthy_node_conditions):
            field_ = at(where, f"unhealthy_node_conditions[{n}]")
            if not condition.type:
                raise SpecError(f"{field_}.type", "must name a Node condition type, like Ready")
            check_not_negative(condition.timeout, f"{field_}.timeout")

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_unhealthy": self.max_unhealthy,
            "unhealthy_range": self.unhealthy_range,
            "unhealthy_node_conditions": [
                {"type": c.type, "status": c.status, "timeout": c.timeout} for c in self.unhealthy_node_conditions
            ],
            "node_startup_timeout": self.node_startup_timeout,
        }


def health_reason(state: str, status: Mapping[str, Any] | None) -> str:
    """Why a live machine is unhealthy ('' when it is healthy).

    ``status`` is the machine's DescribeInstanceStatus entry: AWS reports failed reachability checks of the
    instance (its OS) and of the system (the host) as ``impaired``; ``initializing`` and ``insufficient-data``
    are not failures.
    """
    if state in DOWN_STATES:
        return f"instance {state}"
    failed = [
        label
        for label, key in (("system", "SystemStatus"), ("instance", "InstanceStatus"))
        if ((status or {}).get(key) or {}).get("Status") == IMPAIRED
    ]
    return f"{' and '.join(failed)} status check impaired" if failed else ""


def parse_max_unhealthy(value: Any) -> tuple[int, bool]:
    """``3`` / ``"3"`` -> (3, False); ``"40%"`` -> (40, True). Raises ValueError for anything else."""
    text = str(DEFAULT_MAX_UNHEALTHY if value is None or value == "" else value).strip()
    percent = text.endswith("%")
    number = int(text[:-1] if percent else text)
    if number < 0 or (percent and number > 100):
        raise ValueError(text)
    return number, percent


# the rules of a group, once: capa_instance checks its options with them, the cluster spec its sections --------------
def check_max_unhealthy(value: Any, field: str) -> None:
    try:
        parse_max_unhealthy(value)
    except ValueError:
        raise SpecError(field, f"'{value}' is not a count (like 2) or a percentage up to 100% (like 40%)") from None


def parse_unhealthy_range(value: str) -> tuple[int, int]:
    """``"[1-3]"`` -> (1, 3), MHC's unhealthyRange. Raises ValueError for anything else."""
    text = value.strip()
    if not (text.startswith("[") and text.endswith("]")) or text.count("-") != 1:
        raise ValueError(text)
    low, high = (int(part) for part in text[1:-1].split("-"))
    if low < 0 or high < low:
        raise ValueError(text)
    return low, high


def check_unhealthy_range(value: str, field: str) -> None:
    try:
        parse_unhealthy_range(value)
    except ValueError:
        raise SpecError(field, f"'{value}' is not a range like [1-3] (low at most high, neither negative)") from None


def check_replicas(replicas: int, where: str, control_plane: bool = False, bastion: bool = False) -> None:
    """A group's size: not negative; a control plane's odd (etcd's quorum); a bastion's at most one."""
    field = at(where, "replicas")
    check_not_negative(replicas, field)
    if control_plane and replicas % 2 == 0 and replicas:
        raise SpecError(field, f"{replicas}: etcd needs an odd number of members (1, 3, 5)")
    if bastion and replicas > 1:
        raise SpecError(field, "a cluster has at most one bastion")


def check_rollout(max_surge: int, max_unavailable: int, where: str, control_plane: bool = False) -> None:
    """A rolling replacement can start, and a control plane's changes etcd one member at a time (KCP's rule): it
    adds its new machine first (max_surge 1) and never takes a machine away before (max_unavailable 0).

    KubeadmControlPlane's scale-in-first rollout (maxSurge 0) is not implemented: the cluster spec refuses it rather
    than hand the module a rollout it cannot start."""
    field = at(where, "rollout")
    if max_surge < 0 or max_unavailable < 0:
        raise SpecError(field, "max_surge and max_unavailable must not be negative")
    if control_plane:
        if max_surge != 1:
            raise SpecError(
                f"{field}.max_surge", f"{max_surge}: a control plane adds its new machine before it removes one: 1"
            )
        if max_unavailable:
            raise SpecError(
                f"{field}.max_unavailable", "must be 0 for a control plane (machines are replaced one by one)"
            )
    if max_surge == 0 and max_unavailable == 0:
        raise SpecError(field, "max_surge and max_unavailable cannot both be 0: a rollout could never start")


def max_unhealthy_count(value: Any, targets: int) -> int:
    """CAPI's scaled maxUnhealthy: a percentage of the targets, rounded down (intstr, roundUp=false)."""
    number, percent = parse_max_unhealthy(value)
    return targets * number // 100 if percent else number


def plan_remediation(
    machines: Sequence[Machine],
    reasons: Mapping[str, str],
    check: HealthCheck,
    control_plane: bool = False,
    starting: Iterable[str] = (),
) -> Remediation:
    """CAPI's MachineHealthCheck short-circuit, plus KubeadmControlPlane's rules for a control plane.

    Remediation is allowed only while the machines that are not healthy - unhealthy, or still ``starting`` (running,
    no Node yet, inside ``node_startup_timeout``: MHC counts expected minus healthy) - number at most
    ``max_unhealthy`` of the targets (the group's live machines), or lie in ``unhealthy_range`` when it is set;
    past that something is wrong beyond single machines, and replacing them all would only make it worse. A control
    plane is remediated one machine at a time, and only when etcd keeps its quorum once that machine is gone.
    """
    live = [m for m in machines if not m.leaving]
    unhealthy = {m.id: reasons[m.id] for m in live if reasons.get(m.id)}
    result = Remediation(unhealthy=unhealthy)
    if not unhealthy:
        return result
    waiting = {i for i in starting if i not in unhealthy} & {m.id for m in live}
    held = _held_back(len(unhealthy), len(waiting), len(live), check)
    if held:
        result.allowed, result.reason = False, held
        return result
    ids = [m.id for m in live if m.id in unhealthy]
    if control_plane:
        members = len(live) - 1
        healthy = len(live) - len(unhealthy)
        if healthy < members // 2 + 1:
            result.allowed = False
            result.reason = (
                f"removing an unhealthy control-plane machine would leave {healthy} healthy of {members} etcd "
                "members, below quorum: remediation is held back"
            )
            return result
        ids = ids[:1]
    result.remediate = ids
    return result


def _held_back(unhealthy: int, starting: int, targets: int, check: HealthCheck) -> str:
    """Why the short-circuit holds remediation back ('' when it does not)."""
    count = unhealthy + starting
    counted = f"{unhealthy} of {targets} machines are unhealthy" + (
        f" and {starting} still starting" if starting else ""
    )
    if check.unhealthy_range is not None:
        low, high = parse_unhealthy_range(check.unhealthy_range)
        if low <= count <= high:
            return ""
        return f"{counted}, outside unhealthy_range {check.unhealthy_range}: remediation is held back"
    limit = max_unhealthy_count(check.max_unhealthy, targets)
    if count <= limit:
        return ""
    return f"{counted}, more than max_unhealthy {check.max_unhealthy} ({limit}): remediation is held back"


# A machine group's health check, declared once: capa_instance's options and the cluster spec's control_plane and
# machine_deployments sections take these (Cluster API's MachineHealthCheck fields, v1beta1 names in snake case).
HEALTH_OPTIONS: tuple[Option, ...] = (
    Option(
        "max_unhealthy",
        "Self-healing guard (MachineHealthCheck C(maxUnhealthy)): a count, or a percentage like C(40%) of the "
        "group's machines; with more unhealthy machines than that (those still starting included) none is "
        "replaced.",
        type="raw",
        default=DEFAULT_MAX_UNHEALTHY,
    ),
    Option(
        "unhealthy_range",
        "Replace unhealthy machines only while their number (those still starting included) is in this range, "
        "like C([1-3]) (C(unhealthyRange)); takes precedence over I(max_unhealthy).",
    ),
    Option(
        "unhealthy_node_conditions",
        [
            "Node conditions that make a machine unhealthy once they have held for I(timeout) seconds (since the "
            "condition's C(lastTransitionTime)); any one is enough (C(unhealthyConditions)). Cluster API's "
            "examples use C(Ready) C(Unknown) 300 and C(Ready) C(False) 300. None by default.",
            "Judged only when the group's Kubernetes API answers (I(kubernetes_api)); EC2's stopped instances and "
            "impaired status checks are judged always.",
        ],
        type="list",
        elements="dict",
        default=[],
        options=(
            Option("type", "The condition's type, like C(Ready) or C(DiskPressure).", required=True),
            Option("status", "The status that is unhealthy.", required=True, choices=NODE_CONDITION_STATUSES),
            Option("timeout", "Seconds the condition must have held.", type="int", required=True),
        ),
    ),
    Option(
        "node_startup_timeout",
        "Seconds after its launch by which a running machine must have a Node; a machine without one is unhealthy "
        "(C(nodeStartupTimeout)). C(0) turns this off. Judged only when the Kubernetes API answers.",
        type="int",
        default=DEFAULT_NODE_STARTUP_TIMEOUT,
    ),
)


# placement -------------------------------------------------------------------------------------------------------
def choose_zone(machines: Sequence[Machine], domains: Sequence[str]) -> str:
    """The failure domain for the next machine.

    Fewest up-to-date machines first (so a rolling replacement ends as balanced as it started), then fewest
    machines of any kind, then alphabetical.
    """
    live = [m for m in machines if not m.leaving]
    updated = Counter(m.zone for m in live if m.updated)
    total = Counter(m.zone for m in live)
    return min(sorted(set(domains)), key=lambda z: (updated[z], total[z], z))


def subnet_for_zone(subnets: Sequence[Mapping[str, Any]], zone: str, public: bool) -> Mapping[str, Any] | None:
    """The zone's first subnet of the wanted kind (public for public IPs, private otherwise), in input order."""
    for subnet in subnets:
        if subnet.get("availability_zone") == zone and bool(subnet.get("is_public")) == public:
            return subnet
    return None


def check_placement_inputs(subnets: Sequence[Mapping[str, Any]], security_group_ids: Sequence[str]) -> None:
    """The subnets (as capa_subnet returns them) and security group ids a machine module was given."""
    for index, subnet in enumerate(subnets):
        if not subnet.get("id") or not subnet.get("availability_zone"):
            raise SpecError(f"subnets[{index}]", "needs id and availability_zone (as capa_subnet returns them)")
        check_resource_id(subnet["id"], "subnet", f"subnets[{index}].id")
    for index, group in enumerate(security_group_ids):
        check_resource_id(group, "sg", f"security_group_ids[{index}]")


def default_failure_domains(subnets: Sequence[Mapping[str, Any]], public: bool, first_only: bool = False) -> list[str]:
    """The AZs of the subnets of the wanted kind (sorted), or only the first such subnet's AZ (bastion)."""
    zones = [
        s["availability_zone"] for s in subnets if bool(s.get("is_public")) == public and s.get("availability_zone")
    ]
    if first_only:
        return zones[:1]
    return sorted(set(zones))


# deletion order --------------------------------------------------------------------------------------------------
def order_for_deletion(
    machines: Sequence[Machine], policy: str, rng: random.Random, balance_zones: bool = False
) -> list[Machine]:
    """Machines in the order they should go.

    Like CAPI, machines that are not available (stopped, still pending) go first whatever the policy; then
    ``Oldest``/``Newest`` by launch time, or a random order from ``rng``. With ``balance_zones`` (control
    planes, as KubeadmControlPlane does) the most crowded failure domain gives up a machine first.
    """
    if policy == "Random":
        shuffled = list(machines)
        rng.shuffle(shuffled)
        rank = {id(m): i for i, m in enumerate(shuffled)}
    else:
        by_age = sorted(machines, key=lambda m: (m.launch_time, m.name), reverse=policy == "Newest")
        rank = {id(m): i for i, m in enumerate(by_age)}
    crowd = Counter(m.zone for m in machines)
    ordered: list[Machine] = []
    remaining = list(machines)
    while remaining:
        pick = min(
            remaining,
            key=lambda m: (m.available, -crowd[m.zone] if balance_zones else 0, rank[id(m)]),
        )
        ordered.append(pick)
        remaining.remove(pick)
        crowd[pick.zone] -= 1
    return ordered


# joining -----------------------------------------------------------------------------------------------------------
def awaited_joins(
    machines: Sequence[Machine], *, control_plane: bool, node_startup_timeout: int, now: datetime.datetime
) -> list[Machine]:
    """The machines a run waits for until they join: running and healthy but not available yet (``joining``), and
    either launched by this run or - on a worker group - launched by an earlier run less than
    ``node_startup_timeout`` ago (:data:`DEFAULT_NODE_STARTUP_TIMEOUT` when that is off).

    An earlier run may launch a worker group without waiting (``wait: false``: the cluster role starts a new
    cluster's workers as soon as its control plane is initialized, and waits for them after the other
    control-plane machines): the next run waits for those machines as a MachineDeployment's status waits for its
    replicas. A machine past its startup window is MachineHealthCheck's to judge, not the run's to wait for (a
    broken machine must not hold every later run until its budget runs out), and so is one the health check
    already judged unhealthy (its remediation held back by ``max_unhealthy``) or whose Node's kubelet stopped
    reporting (``Ready`` ``Unknown``: a joining Node reports ``False`` until its network is up). A control plane
    waits only for the machines it launched: one of an earlier run that is not available is named by
    KubeadmControlPlane's preflight, which refuses the next step instead."""
    window = node_startup_timeout or DEFAULT_NODE_STARTUP_TIMEOUT
    awaited = []
    for machine in machines:
        if machine.leaving or not machine.joining:
            continue
        if machine.created or (not control_plane and _on_its_way(machine, window, now)):
            awaited.append(machine)
    return awaited


def _on_its_way(machine: Machine, window: int, now: datetime.datetime) -> bool:
    """An earlier run's machine that may still join: young, not judged unhealthy, its kubelet not lost."""
    if machine.health_reason:
        return False
    if machine.readiness is not None and machine.readiness.node_ready == "Unknown":
        return False
    return _launched_within(machine, window, now)


def _launched_within(machine: Machine, seconds: int, now: datetime.datetime) -> bool:
    try:
        launched = datetime.datetime.fromisoformat(machine.launch_time.replace("Z", "+00:00"))
    except ValueError:
        return False  # no launch time known: not one to wait for
    if launched.tzinfo is None:
        launched = launched.replace(tzinfo=datetime.timezone.utc)
    return (now - launched).total_seconds() < seconds


# rollout ---------------------------------------------------------------------------------------------------------
def plan_step(
    machines: Sequence[Machine],
    replicas: int,
    max_surge: int,
    max_unavailable: int,
    policy: str,
    rng: random.Random,
    one_at_a_time: bool = False,
) -> Step:
    """The next step towards ``replicas`` up-to-date machines (CAPI MachineDeployment rolling update).

    Scaling a group with no outdated machine is unbounded (CAPI scales a MachineSet in one go). While outdated
    machines exist, the group never has more than ``replicas + max_surge`` machines and never fewer than
    ``replicas - max_unavailable`` available ones: new machines are launched into the surge, and outdated ones
    are removed only as far as availability allows (unavailable outdated ones can always go). ``one_at_a_time``
    is the control-plane rule (KubeadmControlPlane): one machine per step - a removal alone, else a single launch,
    and a launch only when every new machine is available.

    Without ``one_at_a_time`` the machines a step removes no longer count against the surge: the same step
    launches their replacements (a MachineSet counts no deleting machine), which the caller starts once their
    termination has been asked for, so the group's pending and running instances stay within the bound.
    """
    live = [m for m in machines if not m.leaving]
    new = [m for m in live if m.updated]
    old = [m for m in live if not m.updated]
    step = Step(create=_launches(replicas, max_surge, live, new, bool(old)))
    if one_at_a_time:
        step.create = min(step.create, 0 if any(not m.available for m in new) else 1)
        return _one_change(_plan_removals(step, live, new, old, replicas, max_unavailable, policy, rng, True))
    step = _plan_removals(step, live, new, old, replicas, max_unavailable, policy, rng, False)
    if step.delete:
        going = {id(m) for m in step.delete}
        staying = [m for m in live if id(m) not in going]
        step.create = _launches(replicas, max_surge, staying, [m for m in new if id(m) not in going], bool(old))
    return step


def _launches(replicas: int, max_surge: int, live: Sequence[Machine], new: Sequence[Machine], rolling: bool) -> int:
    """New machines a step may launch: up to ``replicas`` up-to-date ones, within the surge while rolling."""
    if rolling:
        return max(0, min(replicas + max_surge - len(live), replicas - len(new)))
    return max(0, replicas - len(new))


def _one_change(step: Step) -> Step:
    """KubeadmControlPlane changes one machine per step: a removal alone, else a single launch."""
    if step.delete:
        return Step(create=0, delete=step.delete[:1])
    return step


def _plan_removals(
    step: Step,
    live: Sequence[Machine],
    new: Sequence[Machine],
    old: Sequence[Machine],
    replicas: int,
    max_unavailable: int,
    policy: str,
    rng: random.Random,
    one_at_a_time: bool,
) -> Step:
    """Which machines go in this step: beyond ``replicas`` when none is outdated, else outdated ones (and
    up-to-date ones beyond replicas) as far as ``max_unavailable`` allows."""
    if not old:
        excess = len(new) - replicas
        step.delete = order_for_deletion(new, policy, rng, balance_zones=one_at_a_time)[: max(0, excess)]
        return step

    budget = max(0, sum(m.available for m in live) - max(0, replicas - max_unavailable))
    # Outdated machines all go; up-to-date ones only beyond replicas (a scale-in during a rollout).
    candidates = order_for_deletion(old, policy, rng, balance_zones=one_at_a_time)
    candidates += order_for_deletion(new, policy, rng, balance_zones=one_at_a_time)[: max(0, len(new) - replicas)]
    for machine in candidates:
        if not machine.available:
            step.delete.append(machine)  # removing it costs no availability
        elif budget > 0:
            step.delete.append(machine)
            budget -= 1
    return step
