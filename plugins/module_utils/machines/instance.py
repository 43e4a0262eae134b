# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: a named group of identical EC2 machines (a control plane, a machine deployment, or the bastion).

CAPA's AWSMachine (pkg/cloud/services/ec2/instances.go, controllers/awsmachine_controller.go) plus the Cluster API
machine-set behaviour it relies on: replicas spread over failure domains, rolling replacement of machines whose
template changed, deletion policy, control-plane load-balancer registration, bootstrap data kept in Secrets
Manager or SSM. One run observes the group with one paginated ``DescribeInstances`` (plus one AMI lookup and, for
a control plane, one read of each load balancer), so a run that changes nothing makes the same requests for 2
machines and for 200. The decisions live in ``plan``, the machines' own options in ``machine_spec``; this file
observes and applies.
"""

from __future__ import annotations

import datetime
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.ec2 import cluster_instances_request, describe, tags_of
from ..aws.errors import error_code, is_not_found, missing_as_none
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.hashing import template_hash
from ..kernel.idempotency import new_client_token
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.options import Option, argument_spec
from ..kernel.tags import (
    OWNED,
    ROLE_BASTION,
    ROLE_CONTROL_PLANE,
    ROLE_NODE,
    cloud_provider_tag_key,
    cluster_tag_key,
    dict_to_tags,
    repair_tags,
    tag_specifications,
)
from ..kernel.tier import Outcome
from ..kernel.validation import check_availability_zone, check_one_of
from ..kernel.waiting import wait_until
from ..kubeadm.bootstrap_tokens import new_token
from ..kubeadm.cloud_init import ROLE_INIT, ROLE_JOIN_CONTROL_PLANE, ROLE_JOIN_WORKER, check_upgrade_step
from . import bootstrap_data as _bootstrap_data
from .ami import Image, resolve_image, seen_architecture
from .bootstrap_data import BOOTSTRAP_TAG
from .etcd_restore import ETCD_RESTORE, RESTORED_TAG, EtcdRestore, quorum_kept
from .group_workload import Departure, GroupWorkload, NodeSettings, node_argument_spec
from .join_tokens import remember_init_token
from .machine_spec import BASTION, KUBEADM, NONE, ROLE, SECRETS_MANAGER, MachineSpec, instance_argument_spec
from .node_bootstrap import NodeBootstrap
from .plan import (
    DELETION_POLICIES,
    HEALTH_OPTIONS,
    LEAVING_STATES,
    MIN_CERTIFICATES_EXPIRY_DAYS,
    HealthCheck,
    Machine,
    Remediation,
    Step,
    awaited_joins,
    certificates_due,
    check_placement_inputs,
    check_replicas,
    check_rollout,
    choose_zone,
    default_failure_domains,
    health_reason,
    instance_ready,
    machine_name,
    plan_remediation,
    plan_step,
    subnet_for_zone,
)

GROUP_TAG = "clusterapi.aws/machine-group"
HASH_TAG = "clusterapi.aws/template-hash"
# The Kubernetes version a kubeadm machine was made with: the next run refuses to skip a minor version from it.
VERSION_TAG = "clusterapi.aws/kubernetes-version"
MACHINE_NAME_TAG = "MachineName"
# Tags that describe how a machine was made; a later run must not rewrite them on machines it keeps.
FROZEN_TAGS = (HASH_TAG, BOOTSTRAP_TAG, VERSION_TAG)
GROUP_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
GROUP_NAME_MAX = 40
CONTROL_PLANE = "control-plane"
ROLE_TAGS = {CONTROL_PLANE: ROLE_CONTROL_PLANE, "node": ROLE_NODE, "bastion": ROLE_BASTION}
MAX_STEPS = 100
# The result of an ``initialize`` run on a group that has machines.
INITIALIZED = {
    "kubernetes_api": {
        "asked": False,
        "reachable": False,
        "reason": "initialize: the group has machines already",
        "signal": None,
    }
}
STATUS_IDS_MAX = 100


def machine_argument_spec() -> dict[str, Any]:
    """The machine options of ``capa_instance`` (doc fragments ``clusterapi.aws.machine``, ``.instance`` and
    ``clusterapi.aws.kubernetes_api``) and those of its Kubernetes side."""
    return {**instance_argument_spec(), **node_argument_spec()}


# The group's own options, declared once: the module's argument spec comes from here (its DOCUMENTATION says the
# same; ansible-test's validate-modules compares the two), and so does every default a GroupSpec holds.
GROUP_OPTIONS: tuple[Option, ...] = (
    Option("name", "Name of the group, e.g. C(control-plane), C(md-0), C(bastion).", required=True),
    ROLE,
    Option("replicas", "Number of machines.", type="int", default=1),
    Option("failure_domains", "Availability zones to spread the machines over.", type="list", elements="str"),
    Option("public_ip", "Public IPs and public subnets (default true for the bastion, else false).", type="bool"),
    Option("load_balancers", "Load balancers of the API server.", type="list", elements="dict", default=[]),
    Option(
        "rollout",
        "How machines are replaced and removed.",
        type="dict",
        default={},
        options=(
            Option("max_surge", "Machines allowed above replicas during a rollout.", type="int", default=1),
            Option("max_unavailable", "Running machines allowed below replicas.", type="int", default=0),
            Option("deletion_policy", "Which machines go first on scale-in.", choices=DELETION_POLICIES),
        ),
    ),
    *HEALTH_OPTIONS,
    Option(
        "rollout_before_certificates_expiry_days",
        "Control plane only (KubeadmControlPlane's C(rolloutBefore.certificatesExpiryDays)): machines whose "
        "certificates expire within this many days are replaced, one at a time, through the etcd-safe rollout. "
        "Each machine's expiry is read once, when it is available, from its kube-apiserver's serving certificate "
        "(a port-forward through I(kubernetes_api)) and kept as its instance tag "
        "C(clusterapi.aws/certificates-expiry). At least 7; unset - off.",
        type="int",
    ),
    Option("initialize", "Only launch a first machine while the group has none.", type="bool", default=False),
    ETCD_RESTORE,
)


def group_argument_spec() -> dict[str, Any]:
    """``capa_instance``'s whole argument spec (without the options every module takes)."""
    return {**machine_argument_spec(), **argument_spec(GROUP_OPTIONS)}


@dataclass
class GroupSpec:
    """The group's options as plain values, defaults resolved per role; the machines' own in ``machine``."""

    state: str
    name: str
    replicas: int
    subnets: list[dict[str, Any]]
    failure_domains: list[str]
    public_ip: bool
    machine: MachineSpec
    load_balancers: list[dict[str, Any]]
    max_surge: int
    max_unavailable: int
    deletion_policy: str
    health: HealthCheck = HealthCheck()
    nodes: NodeSettings = NodeSettings()
    certificates_expiry_days: int | None = None  # KCP's rolloutBefore.certificatesExpiryDays
    # Only a group's first machine, and only while it has none (a new control plane's kubeadm init machine).
    initialize: bool = False
    etcd_restore: EtcdRestore | None = None  # the snapshot a control plane that lost quorum comes back from
    # current_hashes per image id: a group's machines mostly run one image, so its hashes are computed once, not
    # once per machine and pass (kept_image, each machine's updated, the result's count).
    _current: dict[str, set[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> GroupSpec:
        """capa_instance's parameters, as its argument spec validated them (every default filled in); what is left
        unset there depends on the role: the bastion's public IP and single zone, the deletion policy."""
        machine = MachineSpec.from_params(params)
        public_ip = machine.bastion if params["public_ip"] is None else params["public_ip"]
        subnets = [dict(s) for s in params["subnets"]]
        domains = list(params["failure_domains"] or ())
        if not domains:
            domains = default_failure_domains(subnets, public=public_ip, first_only=machine.bastion)
        rollout = params["rollout"]
        deletion_policy = rollout["deletion_policy"]
        if deletion_policy is None:
            # KubeadmControlPlane always removes the oldest machine (of the most crowded failure domain).
            deletion_policy = "Oldest" if machine.role == CONTROL_PLANE else "Random"
        return cls(
            state=params["state"],
            name=params["name"],
            replicas=min(params["replicas"], 1) if params["initialize"] else params["replicas"],
            subnets=subnets,
            failure_domains=domains,
            public_ip=public_ip,
            machine=machine,
            load_balancers=[dict(lb) for lb in params["load_balancers"]],
            max_surge=rollout["max_surge"],
            max_unavailable=rollout["max_unavailable"],
            deletion_policy=deletion_policy,
            health=HealthCheck.from_params(params),
            nodes=NodeSettings.from_params(params),
            certificates_expiry_days=params["rollout_before_certificates_expiry_days"],
            initialize=params["initialize"],
            etcd_restore=EtcdRestore.from_params(params["etcd_restore"]),
        )

    @property
    def role(self) -> str:
        return self.machine.role

    @property
    def control_plane(self) -> bool:
        return self.role == "control-plane"

    @property
    def role_tag(self) -> str:
        return ROLE_TAGS[self.role]

    def definition(self, image: Image, with_lookup: bool = True) -> dict[str, Any]:
        """Everything that defines a machine of the group (not its placement, not IMDS: that is repaired in place):
        the image it boots and, for a looked-up image, the lookup that found it (a changed lookup - another base OS,
        owner or name format - is another machine, as a new AWSMachineTemplate is in CAPA)."""
        found = {
            **self.machine.definition(image.id),
            **self.machine.market_and_placement(),
            "public_ip": self.public_ip,
        }
        if with_lookup and not self.machine.ami.id:
            found["ami_lookup"] = self.machine.ami_lookup()
        return found

    def current_hashes(self, image: Image) -> set[str]:
        """The template hashes of a machine that runs ``image`` and is what the spec defines. A machine launched
        before the lookup was part of its definition (releases before 2026-12) has the hash without it: it counts as
        current too, its lookup taken to be the spec's - a rollout on upgrading the collection would be a surprise."""
        if image.id not in self._current:
            hashes = {template_hash(self.definition(image))}
            if not self.machine.ami.id:
                hashes.add(template_hash(self.definition(image, with_lookup=False)))
            self._current[image.id] = hashes
        return self._current[image.id]


def running_image(machine: Machine) -> Image:
    """The image a machine runs, as far as its instance shows it (its id is what its definition holds)."""
    return Image(machine.image_id or "", "", "", None, machine.architecture or "x86_64")


def is_current(spec: GroupSpec, machine: Machine) -> bool:
    """Whether the machine is what the spec defines, with the image it runs.

    CAPA resolves a machine's image when it creates the machine (AWSMachine ``spec.ami`` lookup) and never replaces
    a machine for a newer image of the same lookup (Canonical's or CAPA's images come out every few weeks): a
    machine is replaced only when its template changes. So here: a machine keeps its image while the rest of its
    definition is unchanged; the image given by ``ami.id`` must be the one it runs.
    """
    if not machine.image_id or (spec.machine.ami.id and machine.image_id != spec.machine.ami.id):
        return False
    return machine.template_hash in spec.current_hashes(running_image(machine))


def kept_image(spec: GroupSpec, live: Sequence[Machine]) -> Image | None:
    """The image of the group's newest current machine (:func:`is_current`); None when no machine is current.

    A group with a current machine needs no image lookup (no ``DescribeImages``, no EKS image parameter) until it
    launches one: the launch looks the image up as CAPA's creation does (:meth:`GroupRun._launch`).
    """
    for machine in sorted(live, key=lambda m: (m.launch_time, m.name), reverse=True):
        if is_current(spec, machine):
            return running_image(machine)
    return None


# validation (pure, before any AWS call) ----------------------------------------------------------------------------
def validate(spec: GroupSpec, region: str | None) -> None:
    if not GROUP_NAME.match(spec.name) or len(spec.name) > GROUP_NAME_MAX:
        raise SpecError("name", f"'{spec.name}' must be lower-case letters, digits and '-', at most {GROUP_NAME_MAX}")
    _validate_rollout(spec)
    _validate_certificates(spec)
    _validate_nodes(spec.nodes)
    check_placement_inputs(spec.subnets, spec.machine.security_group_ids)
    _validate_load_balancers(spec)
    if spec.etcd_restore is not None:
        spec.etcd_restore.validate(
            control_plane=spec.control_plane,
            kubeadm=spec.machine.bootstrap.type == KUBEADM,
            initialize=spec.initialize,
        )
    if spec.state == "absent" or spec.replicas == 0:
        return
    spec.machine.validate()
    _validate_placement(spec, region)


def _validate_certificates(spec: GroupSpec) -> None:
    days = spec.certificates_expiry_days
    if days is None:
        return
    if not spec.control_plane:
        raise SpecError("rollout_before_certificates_expiry_days", "is for a control plane (role control-plane)")
    if days < MIN_CERTIFICATES_EXPIRY_DAYS:
        raise SpecError(
            "rollout_before_certificates_expiry_days", f"{days}: at least {MIN_CERTIFICATES_EXPIRY_DAYS} (as KCP's)"
        )


def _validate_rollout(spec: GroupSpec) -> None:
    check_replicas(spec.replicas, "", spec.control_plane and spec.state == "present", spec.role == BASTION)
    check_rollout(spec.max_surge, spec.max_unavailable, "", spec.control_plane)
    check_one_of(spec.deletion_policy, DELETION_POLICIES, "rollout.deletion_policy")
    spec.health.validate()


def _validate_nodes(nodes: NodeSettings) -> None:
    nodes.kubernetes_api.validate()
    for name in ("node_drain_timeout", "node_volume_detach_timeout", "min_ready_seconds"):
        if getattr(nodes, name) < 0:
            raise SpecError(name, "must not be negative")


def _validate_load_balancers(spec: GroupSpec) -> None:
    if spec.load_balancers and not spec.control_plane:
        raise SpecError("load_balancers", "only control-plane machines are registered with load balancers")
    for index, lb in enumerate(spec.load_balancers):
        where = f"load_balancers[{index}]"
        if lb.get("type") not in ("classic", "nlb"):
            raise SpecError(f"{where}.type", f"'{lb.get('type')}' is not one of classic, nlb")
        if lb.get("type") == "classic" and not lb.get("name"):
            raise SpecError(f"{where}.name", "is required for a classic load balancer")
        if lb.get("type") == "nlb" and not lb.get("target_group_arns"):
            raise SpecError(f"{where}.target_group_arns", "is required for a network load balancer")


def _validate_placement(spec: GroupSpec, region: str | None) -> None:
    if not spec.subnets:
        raise SpecError("subnets", "at least one subnet is needed to place machines")
    if not spec.failure_domains:
        kind = "public" if spec.public_ip else "private"
        raise SpecError("failure_domains", f"none given and the subnets have no {kind} subnet")
    for index, zone in enumerate(spec.failure_domains):
        check_availability_zone(zone, region, f"failure_domains[{index}]")
        if subnet_for_zone(spec.subnets, zone, spec.public_ip) is None:
            kind = "public" if spec.public_ip else "private"
            raise SpecError(f"failure_domains[{index}]", f"no {kind} subnet in {zone} among subnets")


# observing ---------------------------------------------------------------------------------------------------------
def _iso(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.timezone.utc).isoformat()
    return str(value or "")


def to_machine(instance: Mapping[str, Any]) -> Machine:
    tags = tags_of(instance)
    machine = Machine(
        id=instance["InstanceId"],
        name=tags.get("Name", instance["InstanceId"]),
        zone=instance.get("Placement", {}).get("AvailabilityZone", ""),
        state="pending",
        launch_time=_iso(instance.get("LaunchTime")),
        template_hash=tags.get(HASH_TAG, ""),
        subnet_id=instance.get("SubnetId", ""),
        tags=tags,
    )
    refresh(machine, instance)
    return machine


def refresh(machine: Machine, instance: Mapping[str, Any]) -> None:
    """What AWS now says about the machine's instance: its state, addresses, image, type and metadata options."""
    machine.state = instance.get("State", {}).get("Name", "pending")
    machine.subnet_id = machine.subnet_id or instance.get("SubnetId", "")
    machine.private_ip = instance.get("PrivateIpAddress")
    machine.public_ip = instance.get("PublicIpAddress")
    machine.image_id = instance.get("ImageId")
    machine.instance_type = instance.get("InstanceType")
    machine.architecture = instance.get("Architecture")
    machine.metadata_options = dict(instance.get("MetadataOptions") or {})
    machine.private_dns_name = instance.get("PrivateDnsName") or machine.private_dns_name


def observe(ctx: Context, group: str) -> tuple[list[Machine], list[str]]:
    """The group's machines, and the ids of every running instance of the cluster (for :func:`observe_health`)."""
    reservations = describe(ctx, "describe_instances", "Reservations", **cluster_instances_request(ctx))
    found = [i for r in reservations for i in r.get("Instances", [])]
    machines = [to_machine(i) for i in found if tags_of(i).get(GROUP_TAG) == group]
    running = sorted(i["InstanceId"] for i in found if (i.get("State") or {}).get("Name") == "running")
    return sorted(machines, key=lambda m: (m.launch_time, m.name)), running


def observe_health(
    ctx: Context, machines: list[Machine], cluster_running: Sequence[str] | None = None
) -> dict[str, str]:
    """Why each unhealthy machine is unhealthy: one DescribeInstanceStatus (per 100) for the running machines.

    Stopped machines are known from DescribeInstances already; only running ones can have failed status checks,
    so a group with none running costs no extra request. Given ``cluster_running`` (every running instance of the
    cluster, sorted), the request asks for all of them: every machine group of a run then asks the identical
    question, answered once on a run that changes nothing (kernel/shared_reads.py).
    """
    reasons = {m.id: health_reason(m.state, None) for m in machines if not m.leaving and not is_placeholder(m.id)}
    running = [m.id for m in machines if m.state == "running" and not is_placeholder(m.id)]
    if not running:
        return {k: v for k, v in reasons.items() if v}
    asked = list(cluster_running) if cluster_running and set(running) <= set(cluster_running) else running
    by_id: dict[str, Any] = {}
    # DescribeInstanceStatus takes at most 100 instance ids: one request per 100 running machines.
    for start in range(0, len(asked), STATUS_IDS_MAX):
        statuses = (
            ctx.client("ec2")
            .paginate(
                "describe_instance_status",
                InstanceIds=asked[start : start + STATUS_IDS_MAX],
                IncludeAllInstances=True,
            )
            .get("InstanceStatuses", [])
        )
        by_id.update({s["InstanceId"]: s for s in statuses})
    for machine_id in running:
        reasons[machine_id] = health_reason("running", by_id.get(machine_id))
    return {k: v for k, v in reasons.items() if v}


@dataclass
class Registrations:
    """Which instances each load balancer (classic) or target group (NLB) has, read once per run."""

    classic: dict[str, set[str]] = field(default_factory=dict)
    classic_zones: dict[str, set[str]] = field(default_factory=dict)
    target_groups: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def observe(cls, ctx: Context, spec: GroupSpec) -> Registrations:
        found = cls()
        if not spec.control_plane:
            return found
        names = [lb["name"] for lb in spec.load_balancers if lb.get("type") == "classic"]
        for name in names:
            found.classic[name] = set()
        real = [n for n in names if not is_placeholder(n)]
        if real:
            try:
                described = (
                    ctx.client("elb")
                    .paginate("describe_load_balancers", LoadBalancerNames=real)
                    .get("LoadBalancerDescriptions", [])
                )
            except botocore.exceptions.ClientError as e:
                if not is_not_found(e):
                    raise
                if not ctx.check_mode:
                    raise ReconcileError(f"load_balancers: {e.response['Error'].get('Message', 'not found')}") from e
                # In check mode the load balancer may be one capa_elb would create: nothing is registered yet.
                described = []
            for lb in described:
                found.classic[lb["LoadBalancerName"]] = {i["InstanceId"] for i in lb.get("Instances", [])}
                found.classic_zones[lb["LoadBalancerName"]] = set(lb.get("AvailabilityZones", []))
        for lb in spec.load_balancers:
            for arn in lb.get("target_group_arns") or []:
                found.target_groups[arn] = set()
                if is_placeholder(arn):
                    continue
                health = ctx.client("elbv2").describe_target_health(TargetGroupArn=arn)
                found.target_groups[arn] = {
                    t["Target"]["Id"]
                    for t in health.get("TargetHealthDescriptions", [])
                    if t.get("TargetHealth", {}).get("State") != "draining"
                }
        return found

    def check_zones(self, zones: list[str]) -> None:
        """CAPA refuses to register an instance in a zone the classic load balancer has no subnet in."""
        for name, lb_zones in self.classic_zones.items():
            missing = sorted(set(zones) - lb_zones)
            if lb_zones and missing:
                raise ReconcileError(f"load balancer {name} has no subnet in {', '.join(missing)}")

    def registered(self, machine: Machine) -> bool:
        return all(machine.id in ids for ids in (*self.classic.values(), *self.target_groups.values()))

    def register(self, ctx: Context, machine: Machine) -> None:
        for name, ids in self.classic.items():
            if machine.id not in ids:
                ctx.ops.call(
                    ctx.client("elb"),
                    "register_instances_with_load_balancer",
                    resource=machine.name,
                    reason=f"running control-plane machine, not in {name}",
                    LoadBalancerName=name,
                    Instances=[{"InstanceId": machine.id}],
                )
                ids.add(machine.id)
        for arn, ids in self.target_groups.items():
            if machine.id not in ids:
                ctx.ops.call(
                    ctx.client("elbv2"),
                    "register_targets",
                    resource=machine.name,
                    reason=f"running control-plane machine, not in {arn.rsplit('/', 2)[-2]}",
                    TargetGroupArn=arn,
                    Targets=[{"Id": machine.id}],
                )
                ids.add(machine.id)

    def deregister(self, ctx: Context, machine: Machine) -> None:
        """Before termination (CAPA 4.6): the load balancer stops sending to it first."""
        for name, ids in self.classic.items():
            if machine.id in ids:
                _deregistered(
                    ctx.ops.call,
                    ctx.client("elb"),
                    "deregister_instances_from_load_balancer",
                    resource=machine.name,
                    reason=f"machine goes; deregistered from {name} first",
                    LoadBalancerName=name,
                    Instances=[{"InstanceId": machine.id}],
                )
                ids.discard(machine.id)
        for arn, ids in self.target_groups.items():
            if machine.id in ids:
                _deregistered(
                    ctx.ops.call,
                    ctx.client("elbv2"),
                    "deregister_targets",
                    resource=machine.name,
                    reason="machine goes; deregistered first",
                    TargetGroupArn=arn,
                    Targets=[{"Id": machine.id}],
                )
                ids.discard(machine.id)


def _deregistered(call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """``call(*args, **kwargs)``; the load balancer (or target group) being gone is fine, and so is a classic
    load balancer that no longer knows the instance (``InvalidInstance``: terminated behind our back)."""
    try:
        missing_as_none(call, *args, **kwargs)
    except botocore.exceptions.ClientError as e:
        if error_code(e) != "InvalidInstance":
            raise


# the tier ----------------------------------------------------------------------------------------------------------
class InstanceTier:
    def __init__(self, rng: random.Random | None = None) -> None:
        # Names and the Random deletion policy draw from this; tests inject a seeded source.
        self.rng = rng or random.SystemRandom()

    def parse(self, params: Mapping[str, Any]) -> GroupSpec:
        return GroupSpec.from_params(params)

    def validate(self, spec: GroupSpec, region: str | None) -> None:
        validate(spec, region)

    def reconcile(self, ctx: Context, spec: GroupSpec) -> Outcome:
        machines, cluster_running = observe(ctx, spec.name)
        before = self._result(spec, machines, None, Registrations())
        if spec.state == "absent":
            registrations = Registrations.observe(ctx, spec)
            self._remove_all(ctx, spec, machines, registrations)
            return Outcome(before, self._result(spec, [], None, registrations))
        restore = spec.etcd_restore
        if restore is not None and not restore.done(machines):
            machines = self._clear_for_restore(ctx, spec, restore, machines)
        if spec.initialize and any(not m.leaving for m in machines):
            # Initialized already: the group is the full reconcile's (the next step), nothing is changed or asked.
            return Outcome(before, {**before, "health": Remediation().as_dict({}, spec.health), **INITIALIZED})
        run = GroupRun(ctx, spec, self.rng, machines, cluster_running=cluster_running)
        try:
            run.reconcile()
        finally:
            run.cluster.close()
        after = self._result(spec, run.machines, run.group_hash, run.registrations, run.image)
        after["health"] = run.health.as_dict(run.names, spec.health)
        after["kubernetes_api"] = run.cluster.summary()
        return Outcome(before, after)

    def _clear_for_restore(
        self, ctx: Context, spec: GroupSpec, restore: EtcdRestore, machines: list[Machine]
    ) -> list[Machine]:
        """Before a restore (machines/etcd_restore.py): the snapshot exists and etcd lost quorum (or the restore is
        forced), else nothing changes; then every machine of the group goes through the normal removal without its
        etcd and Node steps (a cluster without quorum takes neither), and is waited for. The machines that stay."""
        restore.check_snapshot(ctx)
        live = [m for m in machines if not m.leaving]
        cluster = group_workload(ctx, spec, NodeBootstrap(ctx, spec.machine))
        try:
            cluster.observe(machines)  # an API that does not answer is expected here, whatever the mode
            kept = quorum_kept(cluster.workload)
            if kept and not restore.force:
                raise ReconcileError(
                    f"etcd_restore refused: etcd of cluster {ctx.cluster} has quorum ({kept}); a restore would roll "
                    f"the cluster back to {restore.source}. Nothing was changed (etcd_restore.force replaces it anyway)"
                )
            reason = f"etcd restore from {restore.source}: " + (kept or "etcd lost quorum")
            if live:
                departures = [Departure(machine, node=None) for machine in live]
                _remove(ctx, cluster, Registrations.observe(ctx, spec), departures, reason)
        finally:
            cluster.close()
        return [m for m in machines if m.leaving]  # the ones found leaving; the removed ones are gone

    def _remove_all(self, ctx: Context, spec: GroupSpec, machines: list[Machine], regs: Registrations) -> None:
        going = [m for m in machines if not m.leaving]
        # A control plane's deletion is the cluster's: its etcd goes with it (KCP skips member removal then).
        cluster = group_workload(ctx, spec, NodeBootstrap(ctx, spec.machine), asks=not spec.control_plane)
        try:
            if going:
                cluster.observe(machines, first=True)
            departures = cluster.retire(going, machines)
            _remove(ctx, cluster, regs, departures, "state is absent")
            if cluster.reachable:  # the tokens of machines that never joined go with them
                cluster.tidy_join_tokens([])
        finally:
            cluster.close()
        _sweep_bootstrap(ctx, spec, [])

    def _result(
        self,
        spec: GroupSpec,
        machines: list[Machine],
        group_hash: str | None,
        regs: Registrations,
        image: Image | None = None,
    ) -> dict[str, Any]:
        views = [_view(m, regs if spec.control_plane and spec.load_balancers else None) for m in machines]
        live = [m for m in machines if not m.leaving]
        return {
            "machines": sorted(views, key=lambda v: v["name"]),
            "replicas": {
                "desired": spec.replicas if spec.state == "present" else 0,
                "ready": sum(m.available for m in live),
                "updated": sum(1 for m in live if group_hash and is_current(spec, m)),
            },
            "template_hash": group_hash,
            "ami_id": image.id if image else None,
        }


@dataclass
class GroupRun:
    """One present-state reconcile of a group: resolve the template, then step until converged."""

    ctx: Context
    spec: GroupSpec
    rng: random.Random
    machines: list[Machine]
    image: Image | None = None
    group_hash: str | None = None
    registrations: Registrations = field(default_factory=Registrations)
    health: Remediation = field(default_factory=Remediation)
    names: dict[str, str] = field(default_factory=dict)
    cluster_running: list[str] = field(default_factory=list)  # the cluster's running instances (all groups)
    image_kept: bool = False  # the image is the one a current machine runs (kept_image), not a lookup's

    def __post_init__(self) -> None:
        self.boot = NodeBootstrap(self.ctx, self.spec.machine)
        self.cluster = group_workload(self.ctx, self.spec, self.boot)

    def reconcile(self) -> None:
        live = [m for m in self.machines if not m.leaving]
        kubeadm = self.spec.machine.bootstrap.type == KUBEADM
        if kubeadm:
            running = [m.tags.get(VERSION_TAG, "") for m in live]
            check_upgrade_step([v for v in running if v], self.spec.machine.kubernetes_version or "")
        if self.spec.replicas or live:
            self.image = kept_image(self.spec, live)
            self.image_kept = self.image is not None
            if self.image is None:
                self.image = self._looked_up_image()
            self.group_hash = template_hash(self.spec.definition(self.image))
        for machine in self.machines:
            machine.updated = is_current(self.spec, machine)
        instance_reasons = observe_health(self.ctx, self.machines, self.cluster_running) if self.spec.replicas else {}
        self.registrations = Registrations.observe(self.ctx, self.spec)
        if self.spec.replicas:
            self.registrations.check_zones(self.spec.failure_domains)
        self.cluster.observe(self.machines, first=True)
        self._check_health(instance_reasons)
        self._check_certificates()
        if sum(m.updated for m in live) < self.spec.replicas and kubeadm:
            self.boot.pki()  # before the first change: a missing PKI must not leave a rollout half done
        kept = {m.id for m in live}
        swept = False
        self.cluster.refuse_blind_removals(self._leaving_this_run())
        self.cluster.remove_stray_members(self.machines)
        stale = False  # the first observation holds until this run changes something or waits for a machine
        for _attempt in range(MAX_STEPS):
            if self.ctx.wait:
                stale = self._wait_pending() or stale
            if stale:
                self.cluster.observe(self.machines)
                stale = False
            self._register_running()
            step = plan_step(
                self.machines,
                self.spec.replicas,
                self.spec.max_surge,
                self.spec.max_unavailable,
                self.spec.deletion_policy,
                self.rng,
                one_at_a_time=self.spec.control_plane,
            )
            if step.empty:
                joining = self._joining()
                if joining and self.ctx.wait and not self.ctx.check_mode:
                    self.cluster.wait_joined(self.machines, joining)
                    continue
                if not self._converged() and self.spec.control_plane:
                    # Held back by a machine of an earlier run that is not available: KCP's preflight says why.
                    self.cluster.guard(Step(create=1), self.machines)
                break
            self.cluster.guard(step, self.machines)
            if step.create and self.spec.control_plane:
                self.cluster.target_version(self.spec.machine.kubernetes_version or "", self.machines)
            if not swept:
                # Before the first launch or removal (a no-op run stays one describe per type): what a killed
                # run stored for a machine it never launched is deleted before new entries are written.
                _sweep_bootstrap(self.ctx, self.spec, self.machines)
                swept = True
            self._apply(step)
            stale = True
            if not self.ctx.wait:
                self._register_running()
                break
        else:
            raise ReconcileError(f"group {self.spec.name} did not converge in {MAX_STEPS} steps")
        self._repair([m for m in self.machines if m.id in kept and not m.leaving])
        self.cluster.record_certificate_expiries(self.machines)  # the machines this run launched, once they joined
        self.cluster.tidy_join_tokens(self.machines)

    def _looked_up_image(self) -> Image:
        """The group's image as the spec resolves it; the architecture from its live machines when they show it."""
        live = ((m.instance_type, m.architecture) for m in self.machines if not m.leaving)
        return resolve_image(self.ctx, self.spec.machine, seen_architecture(live, self.spec.machine.instance_type))

    # health ----------------------------------------------------------------------------------------------------
    def _check_health(self, instance_reasons: dict[str, str]) -> None:
        """Mark the machines to remediate: outdated and unavailable, so the rollout replaces them first.

        EC2 judges every machine (stopped, impaired status checks); when the cluster answered, its Nodes judge the
        running ones too (conditions held past their timeouts, no Node after node_startup_timeout)."""
        self.names = {m.id: m.name for m in self.machines}
        reasons = dict(instance_reasons)
        starting: list[str] = []
        if self.spec.replicas:
            now = datetime.datetime.now(datetime.timezone.utc)
            for machine in self.machines:
                if machine.id in reasons or machine.leaving:
                    continue
                verdict = self.cluster.node_health(machine, self.spec.health, now)
                if verdict.reason:
                    reasons[machine.id] = verdict.reason
                elif verdict.starting:
                    starting.append(machine.id)
        self.health = plan_remediation(
            self.machines, reasons, self.spec.health, control_plane=self.spec.control_plane, starting=starting
        )
        if not self.health.allowed:
            self.ctx.warn(f"group {self.spec.name}: {self.health.reason}")
        for machine in self.machines:
            machine.health_reason = reasons.get(machine.id, "")
            machine.starting = machine.id in starting
            if machine.id in self.health.remediate:
                machine.unhealthy = self.health.unhealthy[machine.id]
                machine.updated = False

    def _check_certificates(self) -> None:
        """KCP's certificate rollout: the expiries are read once per available machine; machines whose
        certificates expire within rollout_before_certificates_expiry_days are outdated (replaced one at a time)."""
        self.cluster.record_certificate_expiries(self.machines)
        now = datetime.datetime.now(datetime.timezone.utc)
        for machine in self.machines:
            due = certificates_due(machine.certificates_expire, self.spec.certificates_expiry_days, now)
            if due and not machine.leaving:
                machine.certificates_due, machine.updated = due, False

    # steps -----------------------------------------------------------------------------------------------------
    def _joining(self) -> list[Machine]:
        """Running machines whose Node has not joined (or become ready) yet that the run waits for: the ones it
        launched, and on a worker group those an earlier run launched without waiting, still inside their startup
        window (``plan.awaited_joins``; on a control plane the preflight names such a machine instead)."""
        return awaited_joins(
            self.machines,
            control_plane=self.spec.control_plane,
            node_startup_timeout=self.spec.health.node_startup_timeout,
            now=datetime.datetime.now(datetime.timezone.utc),
        )

    def _leaving_this_run(self) -> list[Machine]:
        """The machines a full reconcile would remove: outdated, to remediate, or beyond replicas."""
        live = [m for m in self.machines if not m.leaving]
        outdated = [m for m in live if not m.updated]
        extra = max(0, len(live) - len(outdated) - self.spec.replicas)
        return outdated + [m for m in live if m.updated][:extra]

    def _converged(self) -> bool:
        live = [m for m in self.machines if not m.leaving]
        return all(m.updated for m in live) and len(live) == self.spec.replicas

    def _apply(self, step: Step) -> None:
        # Removals start first (drained, terminated): the group's pending and running instances then never exceed
        # replicas + max_surge, even for a moment. A control plane waits for them to be gone before it launches
        # (KubeadmControlPlane scales up only without a deleting machine); a worker group launches while they
        # shut down (a MachineSet counts no deleting machine), and waits for both in the same run.
        departures = self.cluster.retire(step.delete, self.machines)
        sick = [d for d in departures if d.machine.unhealthy]
        if sick:
            reason = "unhealthy: " + "; ".join(f"{d.machine.name} {d.machine.unhealthy}" for d in sick)
            _start_removal(self.ctx, self.cluster, self.registrations, sick, reason)
        healthy = [d for d in departures if not d.machine.unhealthy]
        expiring = [d for d in healthy if d.machine.certificates_due]
        if expiring:
            _start_removal(self.ctx, self.cluster, self.registrations, expiring, expiring[0].machine.certificates_due)
        rest = [d for d in healthy if not d.machine.certificates_due]
        _start_removal(self.ctx, self.cluster, self.registrations, rest, "outdated or beyond replicas")
        if self.spec.control_plane:
            _finish_removal(self.ctx, self.cluster, departures)
        # The result lists what stays; machines found leaving at the start are still reported.
        gone = {id(m) for m in step.delete}
        self.machines = [m for m in self.machines if id(m) not in gone]
        for _launch in range(step.create):
            self.machines.append(self._launch())
        if not self.spec.control_plane:
            _finish_removal(self.ctx, self.cluster, departures)

    def _launch(self) -> Machine:
        ctx, spec, machine_spec = self.ctx, self.spec, self.spec.machine
        if self.image is None:
            raise ReconcileError("no AMI was resolved before launching (a bug)")
        if self.image_kept:
            # A new machine (a scale-up, a replacement of an unhealthy one) takes today's lookup, as CAPA's creation
            # does; its definition is the one with that image.
            self.image, self.image_kept = self._looked_up_image(), False
            self.group_hash = template_hash(spec.definition(self.image))
        live = [m for m in self.machines if not m.leaving]
        zone = choose_zone(self.machines, spec.failure_domains)
        subnet = subnet_for_zone(spec.subnets, zone, spec.public_ip) or {}
        name = machine_name(ctx.cluster, spec.name, [m.name for m in self.machines], self.rng)
        tags = ctx.tags(
            spec.role_tag,
            name,
            {
                cloud_provider_tag_key(ctx.cluster): OWNED,
                MACHINE_NAME_TAG: f"{ctx.cluster}/{name}",
                GROUP_TAG: spec.name,
                HASH_TAG: self.group_hash or "",
            },
        )
        if machine_spec.bootstrap.type == KUBEADM:
            tags[VERSION_TAG] = machine_spec.kubernetes_version or ""
        request = machine_spec.run_instances_request(
            self.image,
            zone=zone,
            subnet_id=subnet.get("id", ""),
            public_ip=spec.public_ip,
            client_token=new_client_token(),
        )
        ref = None
        role = self._kubeadm_role(first=not live)
        restore = spec.etcd_restore if role == ROLE_INIT else None
        if restore is not None:
            tags[RESTORED_TAG] = restore.source
        document = self.boot.document(
            name,
            kubeadm_role=role,
            token=self._bootstrap_token(name, role),
            etcd_snapshot_url=restore.url(ctx) if restore is not None else None,
        )
        if machine_spec.spot is not None:  # drain the node on a spot interruption notice
            document = self.boot.add_watcher(document)
        if document is not None:
            entry_tags = {k: v for k, v in tags.items() if k not in (HASH_TAG, VERSION_TAG)}
            ref = _bootstrap_data.store(ctx, machine_spec.bootstrap.backend, name, document, entry_tags)
            tags[BOOTSTRAP_TAG] = ref.tag_value()
            request["UserData"] = _bootstrap_data.user_data(_bootstrap_data.boot_script(ctx.region or "", ref))
        request["TagSpecifications"] = [
            spec_
            for resource in ("instance", "volume", "network-interface")
            for spec_ in tag_specifications(resource, tags)
        ]
        predicted = {
            "Instances": [
                {
                    "InstanceId": placeholder("instance", name),
                    "State": {"Name": "pending"},
                    "Placement": {"AvailabilityZone": zone},
                    "SubnetId": subnet.get("id", ""),
                    "ImageId": request["ImageId"],
                    "InstanceType": request["InstanceType"],
                    "Tags": dict_to_tags(tags),
                }
            ]
        }
        try:
            answer = ctx.ops.call(
                ctx.client("ec2"),
                "run_instances",
                resource=name,
                reason=f"replicas: {zone}",
                predicted=predicted,
                **request,
            )
        except botocore.exceptions.ClientError:
            if ref is not None:  # nothing will fetch or delete these entries otherwise
                _bootstrap_data.delete(ctx, ref, name)
            raise
        machine = to_machine(answer["Instances"][0])
        machine.name, machine.created, machine.updated = name, True, True
        machine.template_hash = self.group_hash or ""
        machine.tags = tags
        return machine

    def _bootstrap_token(self, name: str, role: str) -> str | None:
        """The token machine ``name`` boots with: ``kubeadm init`` creates its own, expiring after ``token_ttl``
        (kept on the controller's side for the joins of a first build that cannot reach the API: kubeadm's own
        procedure); a join gets one minted in the cluster for it alone."""
        if self.spec.machine.bootstrap.type != KUBEADM:
            return None
        if role == ROLE_INIT:
            value = new_token()
            remember_init_token(self.ctx, value, self.spec.machine.bootstrap.token_ttl)
            return value
        return self.cluster.join_token(name)

    def _kubeadm_role(self, first: bool) -> str:
        """The first machine of an empty control plane runs kubeadm init; the others join."""
        if not self.spec.control_plane:
            return ROLE_JOIN_WORKER
        return ROLE_INIT if first else ROLE_JOIN_CONTROL_PLANE

    # waiting and registration --------------------------------------------------------------------------------
    def _wait_pending(self) -> bool:
        """Wait for pending machines to run; whether there were any."""
        pending = [m for m in self.machines if m.state == "pending" and not m.leaving]
        if not pending:
            return False
        if self.ctx.check_mode:
            for machine in pending:  # check mode shows the whole rollout as if machines came up
                machine.state = "running"
            return True
        found = _wait_for(self.ctx, pending, lambda s: s == "running", "to run", failed_states=LEAVING_STATES)
        for machine in pending:
            refresh(machine, found[machine.id])
        return True

    def _register_running(self) -> None:
        if not self.spec.control_plane:
            return
        for machine in self.machines:
            if machine.available:
                self.registrations.register(self.ctx, machine)

    # in-place repairs ------------------------------------------------------------------------------------------
    def _repair(self, kept: list[Machine]) -> None:
        desired_options = self.spec.machine.metadata_options()
        for machine in kept:
            if is_placeholder(machine.id):
                continue
            current = machine.metadata_options
            drift = [k for k, v in desired_options.items() if current.get(k) != v]
            if drift:
                self.ctx.ops.call(
                    self.ctx.client("ec2"),
                    "modify_instance_metadata_options",
                    resource=machine.name,
                    reason=f"metadata options differ: {', '.join(drift)}",
                    InstanceId=machine.id,
                    **desired_options,
                )
                machine.metadata_options = {**current, **desired_options}
            self._repair_tags(machine)

    def _repair_tags(self, machine: Machine) -> None:
        desired = self.ctx.tags(
            self.spec.role_tag,
            machine.name,
            {cloud_provider_tag_key(self.ctx.cluster): OWNED, MACHINE_NAME_TAG: f"{self.ctx.cluster}/{machine.name}"},
        )
        machine.tags = repair_tags(self.ctx, "ec2", machine.id, machine.name, machine.tags, desired, frozen=FROZEN_TAGS)


# shared helpers ----------------------------------------------------------------------------------------------------
def group_workload(ctx: Context, spec: GroupSpec, boot: NodeBootstrap, asks: bool = True) -> GroupWorkload:
    """The Kubernetes side of the group: kubeadm machines only (the cluster's CA is in the PKI secret)."""
    bootstrap = spec.machine.bootstrap
    return GroupWorkload(
        ctx,
        spec.nodes,
        group=spec.name,
        control_plane=spec.control_plane,
        asks_cluster=asks and bootstrap.type == KUBEADM and spec.role != BASTION,
        endpoint=(bootstrap.endpoint_host or "", bootstrap.endpoint_port),
        pki=boot.pki,
        token_ttl=bootstrap.token_ttl,
    )


def _remove(
    ctx: Context, cluster: GroupWorkload, regs: Registrations, departures: list[Departure], reason: str
) -> None:
    """Deregister, remove the etcd members, terminate, and - once the instances are gone - delete their Nodes
    and bootstrap entries."""
    _start_removal(ctx, cluster, regs, departures, reason)
    _finish_removal(ctx, cluster, departures)


def _start_removal(
    ctx: Context, cluster: GroupWorkload, regs: Registrations, departures: list[Departure], reason: str
) -> None:
    """Deregistered from the load balancers, etcd members removed, ``TerminateInstances`` asked."""
    if not departures:
        return
    machines = [d.machine for d in departures]
    for machine in machines:
        regs.deregister(ctx, machine)
    cluster.release(departures)
    _terminate(ctx, machines, reason)


def _finish_removal(ctx: Context, cluster: GroupWorkload, departures: list[Departure]) -> None:
    """Once the instances are gone (one wait for all of them): their Nodes and bootstrap entries deleted."""
    if not departures:
        return
    machines = [d.machine for d in departures]
    waits = [m for m in machines if not m.leaving and not is_placeholder(m.id)]
    if waits and ctx.wait and not ctx.check_mode:
        _wait_for(ctx, waits, lambda s: s == "terminated", "to terminate")
    cluster.forget(departures)
    for machine in machines:
        _delete_bootstrap(ctx, machine)


def _terminate(ctx: Context, machines: list[Machine], reason: str) -> None:
    # Only instances that are not already going: moto (not AWS) fails on terminating a terminated instance.
    ids = [m.id for m in machines if not m.leaving and not is_placeholder(m.id)]
    planned = [m for m in machines if is_placeholder(m.id)]
    if ids or planned:
        ctx.ops.call(
            ctx.client("ec2"),
            "terminate_instances",
            resource=", ".join(m.name for m in machines),
            reason=reason,
            InstanceIds=ids,
        )


def _sweep_bootstrap(ctx: Context, spec: GroupSpec, machines: list[Machine]) -> None:
    """Delete the group's bootstrap entries that no machine refers to (a run killed between storing them and
    RunInstances, or between TerminateInstances and deleting them, leaves such entries behind)."""
    bootstrap = spec.machine.bootstrap
    if bootstrap.type == NONE or bootstrap.backend != SECRETS_MANAGER:
        return
    if ctx.check_mode:
        return  # what a check run would sweep depends on machines it only planned
    kept = {m.bootstrap_ref.prefix for m in machines if m.bootstrap_ref is not None}
    owner = {cluster_tag_key(ctx.cluster): OWNED, GROUP_TAG: spec.name}
    stray = _bootstrap_data.unreferenced_secrets(ctx, owner, kept, MACHINE_NAME_TAG)
    _bootstrap_data.delete_named(ctx, stray, "bootstrap data no machine refers to")


def _delete_bootstrap(ctx: Context, machine: Machine) -> None:
    ref = machine.bootstrap_ref
    if ref is not None:
        _bootstrap_data.delete(ctx, ref, machine.name)


def _wait_for(
    ctx: Context,
    machines: list[Machine],
    done_state: Callable[[str], bool],
    what: str,
    failed_states: tuple[str, ...] = (),
) -> dict[str, dict[str, Any]]:
    """Poll the given instances with one DescribeInstances per round, within the run's wait budget."""
    ids = [m.id for m in machines]

    def poll() -> dict[str, dict[str, Any]]:
        # Just launched instances may not be visible yet: not found is "not yet".
        answer = missing_as_none(ctx.client("ec2").paginate, "describe_instances", InstanceIds=ids)
        reservations = (answer or {}).get("Reservations", [])
        return {i["InstanceId"]: i for r in reservations for i in r.get("Instances", [])}

    def done(found: dict[str, dict[str, Any]]) -> bool:
        return len(found) == len(ids) and all(done_state(i["State"]["Name"]) for i in found.values())

    def failed(found: dict[str, dict[str, Any]]) -> str | None:
        for instance in found.values():
            if instance["State"]["Name"] in failed_states:
                reason = instance.get("StateReason", {}).get("Message", instance["State"]["Name"])
                return f"{instance['InstanceId']} is {instance['State']['Name']} ({reason})"
        return None

    names = ", ".join(m.name for m in machines)
    return wait_until(poll, done, ctx, f"{names} {what}", delay=5.0, failed=failed)


def _view(machine: Machine, regs: Registrations | None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": machine.id,
        "name": machine.name,
        "availability_zone": machine.zone,
        "subnet_id": machine.subnet_id or None,
        "private_ip": machine.private_ip,
        "public_ip": machine.public_ip,
        "state": machine.state,
        "launch_time": machine.launch_time or None,
        "template_hash": machine.template_hash,
        "ami_id": machine.image_id,
        "instance_type": machine.instance_type,
        "status": {"InstanceReady": instance_ready(machine.state, machine.created)},
    }
    if regs is not None:
        view["registered"] = regs.registered(machine)
    view["kubernetes"] = machine.readiness.as_dict() if machine.readiness else None
    view["health"] = _health_view(machine)
    view["certificates_expire"] = machine.certificates_expire
    return view


def _health_view(machine: Machine) -> dict[str, Any] | None:
    """What the health check said of the machine when the run started (None for a machine that is leaving). A
    machine this run launched was not judged: it is ``healthy`` once available (what the next run will find, so a
    no-op's status says the same), ``starting`` until then; so is one found starting that became available while
    the run waited for it."""
    if machine.leaving:
        return None
    if machine.health_reason:
        state = "unhealthy"
    elif (machine.starting or machine.created) and not machine.available:
        state = "starting"
    else:
        state = "healthy"
    return {"state": state, "reason": machine.health_reason or None, "remediated": bool(machine.unhealthy)}
