# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster preflight (``capa_preflight``) - what a spec needs from the account, checked before a change.

A spec can be well formed (``capa_cluster_spec`` accepts it) and still wrong for the account: a zone the region does
not have, an instance type not offered in a zone, an arm64 type with an x86_64 AMI, a key pair, instance profile,
AMI, subnet, security group, load balancer or KMS key that does not exist, an EKS version AWS no longer offers, a
quota too small for what the cluster adds. Without a preflight such a run fails halfway, after the first changes.

The tier has the skeleton of every tier, read-only:

* **spec** - :func:`needs` turns the typed cluster spec into what it asks of the account (pure);
* **observe, cheap** - ONE tagging-API request (:func:`observe_existing`) finds what the cluster already has (its
  VPC, subnets, NAT gateways, machines per group and pool, EKS cluster and node groups);
* **plan** - :func:`plan_checks` keeps only what the run would create (pure): a no-op run stops here, one request;
* **observe, the rest** - one read per resource type for what is left (:func:`observe_facts`), into :class:`Facts`;
* **decide** - :func:`failures` lists every problem at once, each naming the spec field and the fact (pure).

IAM has no batch read of instance profiles: one ``GetInstanceProfile`` per distinct name. Service Quotas: one
``GetServiceQuota`` per quota that matters.

A check exists to help, never to stop a run it cannot judge: a read the caller may not make (AccessDenied,
UnauthorizedOperation, 403) or the endpoint does not serve (an unknown operation) skips the checks that need it, with
a warning naming the check and the permission that would enable it (:class:`Reads`); only facts that were read can
refuse a change. The permission check asks IAM's policy simulation whether the caller may make the requests the run
needs (those the generated policies grant on any resource), so a policy missing one fails before the first change.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ..aws import eks as _eks
from ..aws import elb as _elb
from ..aws import elbv2 as _elbv2
from ..aws.ec2 import describe
from ..aws.errors import cannot_read, error_code, is_not_found
from ..aws.iam import caller_arn, get_instance_profile, principal_of, simulate_principal
from ..aws.kms import describe_key
from ..aws.servicequotas import quota_value
from ..aws.tagging import cluster_owned
from ..iam.policies import unscoped_needed
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.tags import tags_to_dict
from ..kernel.tier import Outcome
from ..machines.ami import CAPA_OWNER, DEFAULT_BASE_OS, name_patterns
from ..network.subnet_plan import NAT_NONE, NAT_SINGLE, choose_zones
from .cluster_spec import argument_spec, normalise
from .cluster_types import ClusterSpec, ControlPlane, MachineDeployment, MachinePool, NodeGroup

SPEC = "capa_cluster"
MACHINE_GROUP_TAG = "clusterapi.aws/machine-group"
POOL_TAG = "clusterapi.aws/machine-pool"
ASG_NAME_TAG = "aws:autoscaling:groupName"
NODE_GROUP_TAG = "clusterapi.aws/node-group"
CONTROL_PLANE_GROUP = "control-plane"
BASTION_GROUP = "bastion"
# Running On-Demand / Spot quotas count vCPUs of the standard families (A, C, D, H, I, M, R, T, Z).
STANDARD_FAMILIES = frozenset("acdhimrtz")
NOT_STANDARD = ("hpc", "inf", "dl", "trn", "mac", "u-", "vt")
LIVE_INSTANCE_STATES = ["pending", "running"]
LIVE_NAT_STATES = ["pending", "available"]
QUOTA_PERMISSION = "servicequotas:GetServiceQuota and servicequotas:GetAWSDefaultServiceQuota"
EIP_READ = "ec2:DescribeAddresses"
LB_READ = "elasticloadbalancing:DescribeLoadBalancers"
KMS_USAGE = "ENCRYPT_DECRYPT"


@dataclass(frozen=True)
class Quota:
    service: str
    code: str
    name: str


QUOTAS = {
    "vpcs": Quota("vpc", "L-F678F1CE", "VPCs per Region"),
    "elastic_ips": Quota("ec2", "L-0263D0A3", "EC2-VPC Elastic IPs"),
    "nat_gateways": Quota("vpc", "L-FE5A380F", "NAT gateways per Availability Zone"),
    "classic_lbs": Quota("elasticloadbalancing", "L-E9E9831D", "Classic Load Balancers per Region"),
    "nlbs": Quota("elasticloadbalancing", "L-69A177A2", "Network Load Balancers per Region"),
    "on_demand_vcpus": Quota("ec2", "L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    "spot_vcpus": Quota("ec2", "L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
}


# ---------------------------------------------------------------------------------------------------------------
# What the spec asks of the account (pure)
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lookup:
    """CAPA's AMI lookup of a machine: the newest image of ``owner`` named like one of ``patterns``."""

    owner: str
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Machines:
    """One machine group, pool or node group: what launching its machines needs from the account."""

    field: str
    group: str
    kind: str  # machine | pool | node_group
    instance_types: tuple[str, ...]
    types_field: str
    failure_domains: tuple[str, ...] = ()
    ami_id: str | None = None
    ami_field: str = ""
    lookup: Lookup | None = None
    architecture: str | None = None  # a node group's AMI type fixes it
    ssh_key_name: str | None = None
    key_field: str = ""
    instance_profile: str | None = None
    profile_field: str = ""
    security_group_ids: tuple[str, ...] = ()
    size: int = 0
    spot: int = 0  # of ``size``
    launcher: str = "instances"  # the controller tier that launches them: instances | asg | fleet | eks_nodegroup

    @property
    def on_demand(self) -> int:
        return self.size - self.spot


@dataclass(frozen=True)
class SubnetNeed:
    index: int
    id: str | None
    availability_zone: str | None
    is_public: bool


@dataclass(frozen=True)
class Needs:
    """The typed spec, as far as the account matters."""

    cluster: str
    region: str
    kind: str
    byo_vpc: str | None
    subnets: tuple[SubnetNeed, ...]
    zone_limit: int
    zone_selection: str
    nat_gateways: str
    security_group_overrides: Mapping[str, str]
    lb_type: str
    lb_name: str | None
    machines: tuple[Machines, ...]
    eks_name: str | None = None
    eks_version: str | None = None
    kms_key: str | None = None
    fargate: bool = False


def read_spec(spec: Mapping[str, Any]) -> ClusterSpec:
    """The typed spec of ``capa_cluster_spec``'s normalised ``cluster``. Raises SpecError.

    The compiled step leaves out unset (``None``) keys; the cluster's argument spec puts them back (their defaults
    are what was compiled: a key is only unset when its default is).
    """
    validated = ArgumentSpecValidator(argument_spec()).validate(dict(spec))
    if validated.error_messages:
        raise SpecError("spec", f"is not a cluster spec as capa_cluster_spec returns it: {validated.error_messages[0]}")
    try:
        return ClusterSpec.from_params(normalise(validated.validated_parameters))
    except (KeyError, TypeError, ValueError) as e:
        raise SpecError("spec", f"is not a cluster spec as capa_cluster_spec returns it ({e})") from None


def needs(spec: ClusterSpec, region: str) -> Needs:
    eks = spec.kind == "eks"
    machines: list[Machines] = []
    if not eks:
        machines.append(_machine(spec, spec.control_plane, f"{SPEC}.control_plane", CONTROL_PLANE_GROUP))
    if spec.bastion.enabled:
        machines.append(_bastion(spec))
    for index, deployment in enumerate(spec.machine_deployments):
        machines.append(_machine(spec, deployment, f"{SPEC}.machine_deployments[{index}]", deployment.name))
    for index, pool in enumerate(spec.machine_pools):
        machines.append(_pool(spec, pool, f"{SPEC}.machine_pools[{index}]"))
    if eks:
        for index, group in enumerate(spec.eks.node_groups):
            machines.append(_node_group(group, f"{SPEC}.eks.node_groups[{index}]"))
    network = spec.network
    return Needs(
        cluster=spec.name,
        region=region,
        kind=spec.kind,
        byo_vpc=network.vpc.id,
        subnets=tuple(SubnetNeed(i, s.id, s.availability_zone, s.is_public) for i, s in enumerate(network.subnets)),
        zone_limit=network.vpc.availability_zone_usage_limit,
        zone_selection=network.vpc.availability_zone_selection,
        nat_gateways=network.nat_gateways,
        security_group_overrides={role: str(sg) for role, sg in network.security_group_overrides.items() if sg},
        lb_type=spec.control_plane_load_balancer.type,
        lb_name=spec.control_plane_load_balancer.name,
        machines=tuple(machines),
        eks_name=(spec.eks.name or spec.name) if eks else None,
        eks_version=spec.eks.version if eks else None,
        kms_key=spec.eks.encryption_config.provider if eks else None,
        fargate=eks and bool(spec.eks.fargate_profiles),
    )


def _key(spec: ClusterSpec, own: str | None, where: str) -> tuple[str | None, str]:
    """A machine's own key pair, else the cluster's (the field the user has to fix is where it was written)."""
    if own:
        return own, f"{where}.ssh_key_name"
    return spec.ssh_key_name, f"{SPEC}.ssh_key_name"


def _lookup(spec: ClusterSpec, machine: ControlPlane | MachineDeployment | MachinePool, version: str) -> Lookup | None:
    ami = machine.ami
    if ami.id:
        return None
    patterns = name_patterns(ami.name_format or "", ami.base_os or DEFAULT_BASE_OS, version)
    return Lookup(ami.owner or CAPA_OWNER, tuple(patterns))


def _machine(spec: ClusterSpec, machine: ControlPlane | MachineDeployment, where: str, group: str) -> Machines:
    key, key_field = _key(spec, machine.ssh_key_name, where)
    return Machines(
        field=where,
        group=group,
        kind="machine",
        instance_types=(machine.instance_type,),
        types_field=f"{where}.instance_type",
        failure_domains=tuple(getattr(machine, "failure_domains", ())),
        ami_id=machine.ami.id,
        ami_field=f"{where}.ami.id",
        lookup=_lookup(spec, machine, spec.kubernetes_version),
        ssh_key_name=key,
        key_field=key_field,
        instance_profile=machine.iam_instance_profile,
        profile_field=f"{where}.iam_instance_profile",
        security_group_ids=tuple(machine.additional_security_group_ids),
        size=machine.replicas,
        spot=machine.replicas if machine.spot_market_options is not None else 0,
    )


def _bastion(spec: ClusterSpec) -> Machines:
    where = f"{SPEC}.bastion"
    key, key_field = _key(spec, spec.bastion.ssh_key_name, where)
    # The bastion's Canonical image is looked up by description (capa_instance): only an image given by id is
    # checked here.
    return Machines(
        field=where,
        group=BASTION_GROUP,
        kind="machine",
        instance_types=(spec.bastion.instance_type,),
        types_field=f"{where}.instance_type",
        ami_id=spec.bastion.ami_id,
        ami_field=f"{where}.ami_id",
        ssh_key_name=key,
        key_field=key_field,
        size=1,
    )


def pool_capacity(pool: MachinePool) -> tuple[int, int]:
    """(machines, of which spot) a pool runs at its desired capacity (else its minimum)."""
    size = pool.desired_capacity if pool.desired_capacity is not None else pool.min_size
    policy = pool.mixed_instances_policy
    if policy is None:
        return size, size if pool.spot_market_options is not None else 0
    distribution = policy.instances_distribution
    base = min(size, distribution.on_demand_base_capacity)
    if pool.kind == "fleet":
        return size, size - base
    above = size - base
    on_demand_above = math.ceil(above * distribution.on_demand_percentage_above_base_capacity / 100)
    return size, above - on_demand_above


def _pool(spec: ClusterSpec, pool: MachinePool, where: str) -> Machines:
    key, key_field = _key(spec, pool.ssh_key_name, where)
    policy = pool.mixed_instances_policy
    if policy and policy.overrides:
        types = tuple(o.instance_type for o in policy.overrides)
        types_field = f"{where}.mixed_instances_policy.overrides"
    else:
        types, types_field = (pool.instance_type,), f"{where}.instance_type"
    size, spot = pool_capacity(pool)
    eks_image = spec.kind == "eks" and not (pool.ami.id or pool.ami.base_os or pool.ami.owner or pool.ami.name_format)
    return Machines(
        field=where,
        group=pool.name,
        kind="pool",
        instance_types=types,
        types_field=types_field,
        failure_domains=tuple(pool.failure_domains),
        ami_id=pool.ami.id,
        ami_field=f"{where}.ami.id",
        # An EKS pool's image is AWS's EKS-optimised one (a public SSM parameter per architecture), read by the
        # pool's tier: nothing to look up here.
        lookup=None
        if eks_image
        else _lookup(spec, pool, spec.eks.version if spec.kind == "eks" else spec.kubernetes_version),
        ssh_key_name=key,
        key_field=key_field,
        instance_profile=pool.iam_instance_profile,
        profile_field=f"{where}.iam_instance_profile",
        security_group_ids=tuple(pool.additional_security_group_ids),
        size=size,
        spot=spot,
        launcher="fleet" if pool.kind == "fleet" else "asg",
    )


def ami_type_architecture(ami_type: str) -> str | None:
    """The architecture an EKS node group's AMI type runs (``AL2023_ARM_64_STANDARD`` -> arm64), None if neither."""
    upper = ami_type.upper()
    if "ARM_64" in upper:
        return "arm64"
    if "X86_64" in upper:
        return "x86_64"
    return None


def _node_group(group: NodeGroup, where: str) -> Machines:
    size = group.scaling.desired_size
    return Machines(
        field=where,
        group=group.name,
        kind="node_group",
        instance_types=tuple(group.instance_types),
        types_field=f"{where}.instance_types",
        architecture=ami_type_architecture(group.ami_type),
        ami_field=f"{where}.ami_type",
        size=size,
        spot=size if group.capacity_type == "SPOT" else 0,
        launcher="eks_nodegroup",
    )


# ---------------------------------------------------------------------------------------------------------------
# What the cluster already has (one request) and what the run would create (pure)
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Existing:
    """What the one tagging-API read found the cluster owning."""

    vpcs: int = 0
    subnets: int = 0
    nat_gateways: int = 0
    machines: Mapping[str, int] = field(default_factory=dict)  # machine group or pool -> instances
    eks_clusters: frozenset[str] = frozenset()
    node_groups: frozenset[str] = frozenset()


_ARN = re.compile(r"^arn:[^:]+:(?P<service>[^:]+):[^:]*:[^:]*:(?P<resource>.+)$")


def existing_from(resources: Iterable[Mapping[str, Any]]) -> Existing:
    """:class:`Existing` of the tagging API's ``ResourceTagMappingList`` (pure)."""
    counts = {"vpc": 0, "subnet": 0, "natgateway": 0}
    machines: dict[str, int] = {}
    clusters: set[str] = set()
    node_groups: set[str] = set()
    for resource in resources:
        match = _ARN.match(resource.get("ResourceARN", ""))
        if not match:
            continue
        service: str = match["service"]
        kind, _sep, rest = str(match["resource"]).partition("/")
        tags = tags_to_dict(resource.get("Tags"))
        if service == "ec2" and kind in counts:
            counts[kind] += 1
        elif service == "ec2" and kind == "instance":
            group = tags.get(MACHINE_GROUP_TAG) or tags.get(ASG_NAME_TAG) or tags.get(POOL_TAG)
            if group:
                machines[group] = machines.get(group, 0) + 1
        elif service == "eks" and kind == "cluster":
            clusters.add(rest.split("/", 1)[0])
        elif service == "eks" and kind == "nodegroup":
            # nodegroup/<eks cluster>/<node group>/<uuid>; the node group's spec name is its tag (replacements get
            # new names).
            parts = rest.split("/")
            node_groups.add(tags.get(NODE_GROUP_TAG) or (parts[1] if len(parts) > 1 else rest))
    return Existing(
        vpcs=counts["vpc"],
        subnets=counts["subnet"],
        nat_gateways=counts["natgateway"],
        machines=machines,
        eks_clusters=frozenset(clusters),
        node_groups=frozenset(node_groups),
    )


@dataclass(frozen=True)
class Launch:
    """Machines the run would launch for one group: ``count`` of ``machines.size``."""

    machines: Machines
    count: int

    @property
    def spot(self) -> int:
        return min(self.count, self.machines.spot)

    @property
    def on_demand(self) -> int:
        return self.count - self.spot


@dataclass(frozen=True)
class Checks:
    """What the run would create, so what must be checked. ``nothing`` when the run creates nothing."""

    needs: Needs
    creates_network: bool
    creates_vpc: bool
    creates_lb: bool
    creates_eks: bool
    launches: tuple[Launch, ...]

    @property
    def nothing(self) -> bool:
        return not (self.creates_network or self.creates_lb or self.creates_eks or self.launches)

    @property
    def managed_vpc(self) -> bool:
        return self.needs.byo_vpc is None

    def instance_types(self) -> list[str]:
        return sorted({t for launch in self.launches for t in launch.machines.instance_types})


def plan_checks(spec: Needs, existing: Existing) -> Checks:
    """Keep what the run would create (pure).

    The network is created when the cluster owns no VPC (a managed one) or no subnet (managed subnets); a group
    launches what it lacks of its size (a pool or node group: all of it when it has nothing yet); the control-plane
    load balancer comes with the first control-plane machine; the EKS cluster when it does not exist. A spec change
    on what exists (another instance type for a group at its size) is not seen by this read: the group's own tier
    checks its type and image before it launches (docs/docsite/rst/plan_and_preflight.rst, "Preflight").
    """
    managed_subnets = any(not s.id for s in spec.subnets) or not spec.subnets
    creates_vpc = spec.byo_vpc is None and existing.vpcs == 0
    creates_network = creates_vpc or (managed_subnets and spec.byo_vpc is None and existing.subnets == 0)
    launches = []
    for machines in spec.machines:
        if machines.kind == "node_group":
            count = machines.size if machines.group not in existing.node_groups else 0
        elif machines.kind == "pool":
            count = machines.size if existing.machines.get(machines.group, 0) == 0 else 0
        else:
            count = max(0, machines.size - existing.machines.get(machines.group, 0))
        if count:
            launches.append(Launch(machines, count))
    creates_lb = (
        spec.kind == "unmanaged"
        and spec.lb_type in ("classic", "nlb")
        and existing.machines.get(CONTROL_PLANE_GROUP, 0) == 0
    )
    creates_eks = spec.kind == "eks" and spec.eks_name not in existing.eks_clusters
    return Checks(spec, creates_network, creates_vpc, creates_lb, creates_eks, tuple(launches))


# ---------------------------------------------------------------------------------------------------------------
# The facts (typed observations)
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Zone:
    name: str
    state: str
    opt_in_required: bool = False


@dataclass(frozen=True)
class InstanceType:
    architectures: tuple[str, ...]
    vcpus: int


@dataclass(frozen=True)
class KmsKey:
    enabled: bool
    state: str
    usage: str


@dataclass(frozen=True)
class Usage:
    """What the account (not only the cluster) already uses of each quota; None: not read."""

    vpcs: int | None = None
    elastic_ips: int | None = None
    nat_gateways: Mapping[str, int] | None = None  # zone -> NAT gateways
    classic_lbs: int | None = None
    nlbs: int | None = None
    on_demand_vcpus: int | None = None
    spot_vcpus: int | None = None


@dataclass(frozen=True)
class Facts:
    """What the reads found. A field left None was not read (nothing in the run needed it); a check in ``skipped``
    could not be made (its read was denied or not served), so nothing it would have found refuses the run."""

    zones: tuple[Zone, ...] = ()
    offerings: Mapping[str, frozenset[str]] = field(default_factory=dict)  # type -> zones offering it
    instance_types: Mapping[str, InstanceType] = field(default_factory=dict)
    images: Mapping[str, str] = field(default_factory=dict)  # AMI id -> architecture, found ones
    lookups: Mapping[tuple[Lookup, str], bool] = field(default_factory=dict)  # (lookup, arch) -> found
    key_pairs: frozenset[str] = frozenset()
    instance_profiles: frozenset[str] = frozenset()  # the ones that exist
    vpc_found: bool | None = None
    subnets: Mapping[str, str] = field(default_factory=dict)  # id -> zone, found ones
    security_groups: frozenset[str] = frozenset()
    load_balancer_found: bool | None = None
    kms_key: KmsKey | None = None
    eks_versions: tuple[str, ...] | None = None
    quotas: Mapping[str, float | None] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    # check -> the permission whose read was denied or not served: the check was not made
    skipped: Mapping[str, str] = field(default_factory=dict)
    # the permissions IAM's policy simulation says the caller lacks (None: not simulated)
    denied: tuple[str, ...] | None = None
    caller: str = ""

    def made(self, check: str) -> bool:
        return check not in self.skipped


# ---------------------------------------------------------------------------------------------------------------
# Where things go (pure, from the facts)
# ---------------------------------------------------------------------------------------------------------------
def zone_names(facts: Facts) -> list[str]:
    return sorted(z.name for z in facts.zones)


def default_zones(checks: Checks, facts: Facts) -> list[str]:
    """The zones the default layout takes (capa_subnet's choice: available, no opt-in, in the selection's order)."""
    usable = [z.name for z in facts.zones if z.state == "available" and not z.opt_in_required]
    needs_ = checks.needs
    return choose_zones(sorted(usable), needs_.zone_limit, needs_.zone_selection, needs_.cluster)


def cluster_zones(checks: Checks, facts: Facts) -> list[str]:
    """The zones of the subnets machines go to: the private ones (else all), BYO ones as AWS places them."""
    subnets = checks.needs.subnets
    if not subnets:
        return default_zones(checks, facts)
    private = [s for s in subnets if not s.is_public] or list(subnets)
    zones = []
    for subnet in private:
        zone = facts.subnets.get(subnet.id) if subnet.id else subnet.availability_zone
        if zone:
            zones.append(zone)
    return sorted(set(zones))


def nat_zones(checks: Checks, facts: Facts) -> list[str]:
    """The zones that get a NAT gateway when the network is created (one per zone with private subnets, or one)."""
    needs_ = checks.needs
    if not checks.creates_network or needs_.nat_gateways == NAT_NONE or not checks.managed_vpc:
        return []
    if needs_.subnets and all(s.id for s in needs_.subnets):
        return []
    if needs_.subnets:
        private = sorted({s.availability_zone for s in needs_.subnets if not s.is_public and s.availability_zone})
        public = sorted({s.availability_zone for s in needs_.subnets if s.is_public and s.availability_zone})
        zones = private if private else []
        if needs_.nat_gateways == NAT_SINGLE:
            return public[:1] if zones else []
        return zones
    zones = default_zones(checks, facts)
    return zones[:1] if needs_.nat_gateways == NAT_SINGLE else zones


def machine_zones(launch: Launch, checks: Checks, facts: Facts) -> list[str]:
    return sorted(launch.machines.failure_domains) or cluster_zones(checks, facts)


def is_standard(instance_type: str) -> bool:
    """A type of the standard families the Running On-Demand / Spot vCPU quotas count."""
    family = instance_type.split(".", 1)[0]
    return family[:1] in STANDARD_FAMILIES and not family.startswith(NOT_STANDARD)


def added_vcpus(checks: Checks, facts: Facts) -> tuple[dict[str, int], dict[str, int]]:
    """vCPUs of standard types the run would add, on-demand and spot, per field; the smallest type of a group counts
    (a mixed group may launch any of its types: this is what it needs at least)."""
    on_demand: dict[str, int] = {}
    spot: dict[str, int] = {}
    for launch in checks.launches:
        known = [facts.instance_types[t].vcpus for t in launch.machines.instance_types if t in facts.instance_types]
        standard = all(is_standard(t) for t in launch.machines.instance_types)
        if not known or not standard:
            continue
        vcpus = min(known)
        if launch.on_demand:
            on_demand[launch.machines.field] = launch.on_demand * vcpus
        if launch.spot:
            spot[launch.machines.field] = launch.spot * vcpus
    return on_demand, spot


# ---------------------------------------------------------------------------------------------------------------
# Decide (pure): every failure at once
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Failure:
    field: str
    fact: str

    def __str__(self) -> str:
        return f"{self.field}: {self.fact}"


def failures(checks: Checks, facts: Facts) -> list[Failure]:
    """Every problem the facts show for what the run would create, in spec order (pure)."""
    if checks.nothing:
        return []
    found: list[Failure] = []
    found += _permission_failures(facts)
    found += _zone_failures(checks, facts)
    found += _network_failures(checks, facts)
    found += _machine_failures(checks, facts)
    found += _eks_failures(checks, facts)
    found += _quota_failures(checks, facts)
    return found


def _zone_list(facts: Facts) -> str:
    return ", ".join(zone_names(facts)) or "none"


def _zone_problem(zone: str, facts: Facts, region: str) -> str | None:
    known = {z.name: z for z in facts.zones}
    if zone not in known:
        return f"{zone} does not exist in {region} (zones: {_zone_list(facts)})"
    if known[zone].state != "available":
        return f"{zone} is {known[zone].state}, not available"
    return None


def _permission_failures(facts: Facts) -> list[Failure]:
    if not facts.denied:
        return []
    return [
        Failure(
            "permissions",
            f"{facts.caller} may not call {', '.join(facts.denied)} (IAM's policy simulation of its policies); the run "
            "needs them for what it would create",
        )
    ]


def _zone_failures(checks: Checks, facts: Facts) -> list[Failure]:
    needs_ = checks.needs
    found: list[Failure] = []
    if not facts.made(AVAILABILITY_ZONES):
        return found
    if checks.creates_network:
        for subnet in needs_.subnets:
            if subnet.id or not subnet.availability_zone:
                continue
            problem = _zone_problem(subnet.availability_zone, facts, needs_.region)
            if problem:
                found.append(Failure(f"{SPEC}.network.subnets[{subnet.index}].availability_zone", problem))
        if not needs_.subnets and checks.managed_vpc and not default_zones(checks, facts):
            found.append(
                Failure(f"{SPEC}.network.vpc.availability_zone_usage_limit", f"no zone of {needs_.region} is available")
            )
    for launch in checks.launches:
        for index, zone in enumerate(launch.machines.failure_domains):
            problem = _zone_problem(zone, facts, needs_.region)
            if problem:
                found.append(Failure(f"{launch.machines.field}.failure_domains[{index}]", problem))
    return found


def _network_failures(checks: Checks, facts: Facts) -> list[Failure]:
    needs_ = checks.needs
    region = needs_.region
    found = []
    if needs_.byo_vpc and facts.vpc_found is False:
        found.append(Failure(f"{SPEC}.network.vpc.id", f"{needs_.byo_vpc} does not exist in {region}"))
    for subnet in needs_.subnets if facts.made(SUBNETS) else ():
        if subnet.id and subnet.id not in facts.subnets:
            found.append(
                Failure(f"{SPEC}.network.subnets[{subnet.index}].id", f"{subnet.id} does not exist in {region}")
            )
    for role, group in sorted(needs_.security_group_overrides.items() if facts.made(SECURITY_GROUPS) else ()):
        if group not in facts.security_groups:
            found.append(
                Failure(f"{SPEC}.network.security_group_overrides.{role}", f"{group} does not exist in {region}")
            )
    if needs_.lb_type == "external" and facts.load_balancer_found is False:
        found.append(
            Failure(
                f"{SPEC}.control_plane_load_balancer.name",
                f"no load balancer named {needs_.lb_name} exists in {region}",
            )
        )
    return found


def _machine_failures(checks: Checks, facts: Facts) -> list[Failure]:
    region = checks.needs.region
    found: list[Failure] = []
    for launch in checks.launches:
        machines = launch.machines
        if facts.made(OFFERINGS):
            found += _offering_failures(launch, checks, facts)
        found += _image_failures(machines, facts, region)
        if facts.made(KEY_PAIRS) and machines.ssh_key_name and machines.ssh_key_name not in facts.key_pairs:
            found.append(Failure(machines.key_field, f"key pair {machines.ssh_key_name} does not exist in {region}"))
        profile = machines.instance_profile
        if facts.made(INSTANCE_PROFILES) and profile and profile not in facts.instance_profiles:
            found.append(Failure(machines.profile_field, f"instance profile {profile} does not exist"))
        for index, group in enumerate(machines.security_group_ids if facts.made(SECURITY_GROUPS) else ()):
            if group not in facts.security_groups:
                found.append(
                    Failure(
                        f"{machines.field}.additional_security_group_ids[{index}]",
                        f"{group} does not exist in {region}",
                    )
                )
    return found


def _offering_failures(launch: Launch, checks: Checks, facts: Facts) -> list[Failure]:
    machines = launch.machines
    region = checks.needs.region
    known_zones = {z.name for z in facts.zones}
    zones = [z for z in machine_zones(launch, checks, facts) if z in known_zones]
    found = []
    for instance_type in machines.instance_types:
        offered = facts.offerings.get(instance_type, frozenset())
        if not offered:
            found.append(Failure(machines.types_field, f"{instance_type} is not offered in {region}"))
            continue
        missing = [z for z in zones if z not in offered]
        if missing:
            found.append(
                Failure(
                    machines.types_field,
                    f"{instance_type} is not offered in {', '.join(missing)} (offered in {', '.join(sorted(offered))})",
                )
            )
    return found


def _architectures(machines: Machines, facts: Facts) -> dict[str, tuple[str, ...]]:
    return {t: facts.instance_types[t].architectures for t in machines.instance_types if t in facts.instance_types}


def _image_failures(machines: Machines, facts: Facts, region: str) -> list[Failure]:
    found = []
    wanted = machines.architecture
    source = f"its AMI type ({machines.ami_field})"
    if machines.ami_id:
        if not facts.made(IMAGES):
            return []
        if machines.ami_id not in facts.images:
            return [Failure(machines.ami_field, f"{machines.ami_id} not found in {region}")]
        wanted = facts.images[machines.ami_id]
        source = f"AMI {machines.ami_id} ({machines.ami_field})"
    if wanted:
        for instance_type, architectures in _architectures(machines, facts).items():
            if wanted not in architectures:
                found.append(
                    Failure(
                        machines.types_field,
                        f"{instance_type} runs {'/'.join(architectures)}, but {source} is {wanted}",
                    )
                )
    elif machines.lookup:
        for arch in sorted({pick_architecture(a) for a in _architectures(machines, facts).values()}):
            if facts.lookups.get((machines.lookup, arch)) is False:
                found.append(
                    Failure(
                        f"{machines.field}.ami",
                        f"no {arch} image of owner {machines.lookup.owner} named "
                        f"{' or '.join(machines.lookup.patterns)} in {region}",
                    )
                )
    return found


def pick_architecture(supported: Sequence[str]) -> str:
    """The architecture CAPA's lookup takes for a type (machines.ami.architecture_of's rule)."""
    return "arm64" if "arm64" in supported and "x86_64" not in supported else "x86_64"


def _eks_failures(checks: Checks, facts: Facts) -> list[Failure]:
    needs_ = checks.needs
    if not checks.creates_eks:
        return []
    found = []
    if facts.eks_versions is not None and needs_.eks_version not in facts.eks_versions:
        found.append(
            Failure(
                f"{SPEC}.eks.version",
                f"EKS does not offer Kubernetes {needs_.eks_version} in {needs_.region} "
                f"(offered: {', '.join(facts.eks_versions) or 'none'})",
            )
        )
    if needs_.kms_key and facts.made(KMS_KEY):
        where = f"{SPEC}.eks.encryption_config.provider"
        key = facts.kms_key
        if key is None:
            found.append(Failure(where, f"KMS key {needs_.kms_key} does not exist in {needs_.region}"))
        elif not key.enabled:
            found.append(Failure(where, f"KMS key {needs_.kms_key} is not enabled (state {key.state})"))
        elif key.usage != KMS_USAGE:
            found.append(Failure(where, f"KMS key {needs_.kms_key} is for {key.usage}, EKS needs {KMS_USAGE}"))
    return found


def _quota_text(name: str, used: int, adds: int, limit: float) -> str:
    quota = QUOTAS[name]
    return (
        f"the run adds {adds} to the {used} already in use, above the quota of {limit:g} "
        f"({quota.name}, {quota.service} {quota.code})"
    )


def _over(limit: float | None, used: int | None, adds: int) -> bool:
    return limit is not None and used is not None and adds > 0 and used + adds > limit


def _quota_failures(checks: Checks, facts: Facts) -> list[Failure]:
    usage, quotas = facts.usage, facts.quotas
    found = []
    if checks.creates_vpc and _over(quotas.get("vpcs"), usage.vpcs, 1):
        found.append(Failure(f"{SPEC}.network.vpc", _quota_text("vpcs", usage.vpcs or 0, 1, quotas["vpcs"] or 0)))
    nats = nat_zones(checks, facts)
    if _over(quotas.get("elastic_ips"), usage.elastic_ips, len(nats)):
        found.append(
            Failure(
                f"{SPEC}.network.nat_gateways",
                _quota_text("elastic_ips", usage.elastic_ips or 0, len(nats), quotas["elastic_ips"] or 0)
                + " (one Elastic IP per NAT gateway)",
            )
        )
    per_zone = usage.nat_gateways or {}
    for zone in nats:
        if _over(quotas.get("nat_gateways"), per_zone.get(zone, 0) if usage.nat_gateways is not None else None, 1):
            text = _quota_text("nat_gateways", per_zone.get(zone, 0), 1, quotas["nat_gateways"] or 0)
            found.append(Failure(f"{SPEC}.network.nat_gateways", f"{zone}: {text}"))
    if checks.creates_lb:
        name, used = ("classic_lbs", usage.classic_lbs) if checks.needs.lb_type == "classic" else ("nlbs", usage.nlbs)
        if _over(quotas.get(name), used, 1):
            found.append(
                Failure(f"{SPEC}.control_plane_load_balancer.type", _quota_text(name, used or 0, 1, quotas[name] or 0))
            )
    on_demand, spot = added_vcpus(checks, facts)
    for name, adds, used in (
        ("on_demand_vcpus", on_demand, usage.on_demand_vcpus),
        ("spot_vcpus", spot, usage.spot_vcpus),
    ):
        total = sum(adds.values())
        if _over(quotas.get(name), used, total):
            quota = QUOTAS[name]
            by_field = ", ".join(f"{f}: {n}" for f, n in adds.items())
            found.append(
                Failure(
                    # The field the user most likely has to change: the group adding the most.
                    max(adds, key=lambda f: adds[f]),
                    f"the run adds {total} vCPUs ({by_field}) to the {used} in use, above the quota of "
                    f"{quotas[name]:g} ({quota.name}, {quota.service} {quota.code})",
                )
            )
    return found


# ---------------------------------------------------------------------------------------------------------------
# Observe: one request per resource type, only for what the run would create
# ---------------------------------------------------------------------------------------------------------------
# The checks, by the name a warning gives when one is skipped, and the permission each read needs.
EXISTING = "existing_resources"
AVAILABILITY_ZONES = "availability_zones"
SUBNETS = "subnets"
OFFERINGS = "instance_type_offerings"
INSTANCE_TYPES = "instance_types"
IMAGES = "images"
AMI_LOOKUPS = "ami_lookups"
KEY_PAIRS = "key_pairs"
INSTANCE_PROFILES = "instance_profiles"
SECURITY_GROUPS = "security_groups"
VPCS = "vpcs"
LOAD_BALANCER = "load_balancer"
EKS_VERSION = "eks_version"
KMS_KEY = "kms_key"
QUOTAS_CHECK = "quotas"
PERMISSIONS = "permissions"
PERMISSION_OF = {
    EXISTING: "tag:GetResources",
    AVAILABILITY_ZONES: "ec2:DescribeAvailabilityZones",
    SUBNETS: "ec2:DescribeSubnets",
    OFFERINGS: "ec2:DescribeInstanceTypeOfferings",
    INSTANCE_TYPES: "ec2:DescribeInstanceTypes",
    IMAGES: "ec2:DescribeImages",
    AMI_LOOKUPS: "ec2:DescribeImages",
    KEY_PAIRS: "ec2:DescribeKeyPairs",
    INSTANCE_PROFILES: "iam:GetInstanceProfile",
    SECURITY_GROUPS: "ec2:DescribeSecurityGroups",
    VPCS: "ec2:DescribeVpcs",
    LOAD_BALANCER: "elasticloadbalancing:DescribeLoadBalancers",
    EKS_VERSION: "eks:DescribeClusterVersions",
    KMS_KEY: "kms:DescribeKey",
    PERMISSIONS: "iam:SimulatePrincipalPolicy",
}
# What each controller tier (a key of iam.policies' tables) is needed for, as the permission check asks it.
NETWORK_TIERS = ("subnets", "security_groups", "ec2")
LAUNCH_TIERS = {
    "instances": ("instances", "ami", "bootstrap_data"),
    "asg": ("asg", "launch_template", "ami", "bootstrap_data"),
    "fleet": ("fleet", "launch_template", "ami", "bootstrap_data"),
    "eks_nodegroup": ("eks_nodegroup",),
}


class Reads:
    """The preflight's reads, each for a named check. A read the caller may not make, or the endpoint does not serve,
    skips its check with a warning that names the permission which would enable it, and answers None."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.skipped: dict[str, str] = {}

    def __call__(self, check: str, read: Callable[..., Any], *args: Any, permission: str = "", **kwargs: Any) -> Any:
        if check in self.skipped:
            return None
        try:
            return read(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - re-raised unless it says the read cannot be made at all
            why = cannot_read(e)
            if why is None:
                raise
            self.skip(check, permission or PERMISSION_OF[check], why, error_code(e))
            return None

    def skip(self, check: str, permission: str, why: str, code: str) -> None:
        self.skipped[check] = permission
        answer = {
            "denied": "was denied",
            "unsupported": "is not served by the endpoint",
            "sdk": "is not known to the installed botocore (a newer one has it)",
        }[why]
        said = f"HTTP {code}" if code.isdigit() else code or why
        self.ctx.warn(
            f"preflight: the {check} check was skipped: {permission} {answer} ({said}); grant {permission} to enable it"
        )


# ---------------------------------------------------------------------------------------------------------------
# Observe: one request per resource type, only for what the run would create
# ---------------------------------------------------------------------------------------------------------------
def observe_existing(ctx: Context, reads: Reads | None = None) -> Existing | None:
    """The one read every run makes: what the cluster owns, by kind (tagging API, all pages: the status read-back's
    request, ``aws.tagging.cluster_owned``; the VPC, subnets, NAT gateways, instances and EKS resources say which
    sections exist); None when it cannot be read (then nothing says what the run would create, no check is made)."""
    reads = reads or Reads(ctx)
    found = reads(EXISTING, cluster_owned, ctx)
    return None if found is None else existing_from(found)


def observe_facts(ctx: Context, checks: Checks, reads: Reads | None = None) -> tuple[Facts, list[str]]:
    """The reads the checks need (none when the run creates nothing), and the names of the checks made."""
    if checks.nothing:
        return Facts(), []
    reads = reads or Reads(ctx)
    values: dict[str, Any] = {"zones": reads(AVAILABILITY_ZONES, _zones, ctx) or ()}
    partial = Facts(zones=values["zones"])
    byo_subnets = [s.id for s in checks.needs.subnets if s.id]
    nat_gateways = (
        reads("nat_gateway_usage", _nat_gateways, ctx, permission="ec2:DescribeNatGateways")
        if nat_zones(checks, partial)
        else None
    )
    subnet_ids = byo_subnets + [n["SubnetId"] for n in nat_gateways or [] if n.get("SubnetId")]
    if subnet_ids:
        values["subnets"] = reads(SUBNETS, _subnets, ctx, subnet_ids) or {}
    if checks.launches:
        values.update(_machine_facts(ctx, checks, reads))
    groups = sorted(
        set(checks.needs.security_group_overrides.values())
        | {g for launch in checks.launches for g in launch.machines.security_group_ids}
    )
    if groups:
        values["security_groups"] = reads(SECURITY_GROUPS, _security_groups, ctx, groups) or frozenset()
    if checks.needs.byo_vpc or checks.creates_vpc:
        vpcs = reads(VPCS, describe, ctx, "describe_vpcs", "Vpcs")
        if vpcs is not None:
            values["vpc_found"] = (
                any(v["VpcId"] == checks.needs.byo_vpc for v in vpcs) if checks.needs.byo_vpc else None
            )
            values["vpc_count"] = len(vpcs)
    if checks.needs.lb_type == "external" and checks.needs.lb_name:
        values["load_balancer_found"] = reads(LOAD_BALANCER, _external_lb_exists, ctx, checks.needs.lb_name)
    if checks.creates_eks:
        values["eks_versions"] = reads(EKS_VERSION, _eks_versions, ctx)
        if checks.needs.kms_key:
            values["kms_key"] = reads(KMS_KEY, _kms_key, ctx, checks.needs.kms_key)
    facts = _with_quotas(ctx, checks, values, nat_gateways, reads)
    denied, caller = _permissions(ctx, checks, reads)
    facts = replace(facts, skipped=dict(reads.skipped), denied=denied, caller=caller)
    return facts, _made(checks, values, facts)


def _made(checks: Checks, values: Mapping[str, Any], facts: Facts) -> list[str]:
    """The names of the checks made (read, not skipped), for the result."""
    wanted = [AVAILABILITY_ZONES]
    if "subnets" in values:
        wanted.append(SUBNETS)
    if checks.launches:
        wanted += [INSTANCE_TYPES, OFFERINGS, IMAGES, KEY_PAIRS, INSTANCE_PROFILES]
    if "security_groups" in values:
        wanted.append(SECURITY_GROUPS)
    if checks.needs.byo_vpc or checks.creates_vpc:
        wanted.append(VPCS)
    if "load_balancer_found" in values:
        wanted.append(LOAD_BALANCER)
    if checks.creates_eks:
        wanted.append(EKS_VERSION)
        if checks.needs.kms_key:
            wanted.append(KMS_KEY)
    if facts.lookups:
        wanted.append(AMI_LOOKUPS)
    if any(v is not None for v in facts.quotas.values()):
        wanted.append(QUOTAS_CHECK)
    if facts.denied is not None:
        wanted.append(PERMISSIONS)
    return [check for check in wanted if facts.made(check)]


def needed_tiers(checks: Checks) -> list[str]:
    """The controller tiers (keys of iam.policies' tables) the run uses for what it would create (pure)."""
    tiers = ["cluster_info"]
    if checks.creates_network:
        tiers += [*NETWORK_TIERS, *(["vpc"] if checks.creates_vpc else [])]
    if checks.creates_lb:
        tiers.append("elb")
    for launch in checks.launches:
        tiers += LAUNCH_TIERS[launch.machines.launcher]
    if checks.creates_eks:
        tiers += ["eks", *(["eks_fargate"] if checks.needs.fargate else [])]
    return sorted(set(tiers))


def _permissions(ctx: Context, checks: Checks, reads: Reads) -> tuple[tuple[str, ...] | None, str]:
    """(the permissions the caller lacks for what the run creates, the caller); None when not simulated.

    A decision IAM could not make without context (a statement with a condition) is not a refusal: only what the
    simulation says for sure refuses the run.
    """
    caller = caller_arn(ctx)
    principal = principal_of(caller)
    actions = unscoped_needed(needed_tiers(checks))
    if principal is None or not actions:
        return None, caller
    try:
        results = reads(PERMISSIONS, simulate_principal, ctx, principal, actions)
    except Exception as e:  # noqa: BLE001 - a principal IAM does not know (a role with a path) cannot be simulated
        if not is_not_found(e):
            raise
        ctx.warn(f"preflight: the permissions check was skipped: IAM does not know the principal {principal}")
        return None, caller
    if results is None:
        return None, caller
    denied = sorted(
        r["EvalActionName"] for r in results if r.get("EvalDecision") != "allowed" and not r.get("MissingContextValues")
    )
    return tuple(denied), caller


def _zones(ctx: Context) -> tuple[Zone, ...]:
    # Every zone, not only the available ones: "does not exist" and "is impaired" are different answers.
    found = describe(ctx, "describe_availability_zones", "AvailabilityZones")
    return tuple(
        Zone(z["ZoneName"], z.get("State", ""), z.get("OptInStatus", "opt-in-not-required") != "opt-in-not-required")
        for z in found
    )


def _subnets(ctx: Context, ids: Sequence[str]) -> dict[str, str]:
    # A filter, not SubnetIds: one missing id must not fail the read of the others.
    found = describe(ctx, "describe_subnets", "Subnets", Filters=[{"Name": "subnet-id", "Values": sorted(set(ids))}])
    return {s["SubnetId"]: s["AvailabilityZone"] for s in found}


def _nat_gateways(ctx: Context) -> list[dict[str, Any]]:
    return describe(ctx, "describe_nat_gateways", "NatGateways", Filter=[{"Name": "state", "Values": LIVE_NAT_STATES}])


def _security_groups(ctx: Context, ids: Sequence[str]) -> frozenset[str]:
    found = describe(
        ctx, "describe_security_groups", "SecurityGroups", Filters=[{"Name": "group-id", "Values": list(ids)}]
    )
    return frozenset(g["GroupId"] for g in found)


def _external_lb_exists(ctx: Context, name: str) -> bool:
    return _elb.describe_load_balancer(ctx, name) is not None or bool(
        _elbv2.describe_load_balancers_by_name(ctx, [name])
    )


def _eks_versions(ctx: Context) -> tuple[str, ...]:
    return tuple(sorted({v["clusterVersion"] for v in _eks.cluster_versions(ctx)}, key=_version_key))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def _kms_key(ctx: Context, key_id: str) -> KmsKey | None:
    found = describe_key(ctx, key_id)
    if found is None:
        return None
    return KmsKey(bool(found.get("Enabled")), found.get("KeyState", ""), found.get("KeyUsage", ""))


def _machine_facts(ctx: Context, checks: Checks, reads: Reads) -> dict[str, Any]:
    launches = [launch.machines for launch in checks.launches]
    image_ids = sorted({m.ami_id for m in launches if m.ami_id})
    keys = sorted({m.ssh_key_name for m in launches if m.ssh_key_name})
    profiles = sorted({m.instance_profile for m in launches if m.instance_profile})
    offerings = reads(OFFERINGS, _offerings, ctx, checks.instance_types()) or {}
    return {
        "offerings": offerings,
        "offered_types": sorted(offerings) if reads.skipped.get(OFFERINGS) is None else checks.instance_types(),
        "images": reads(IMAGES, _images, ctx, image_ids) or {},
        "lookups": [m.lookup for m in launches if m.lookup and not m.ami_id],
        "key_pairs": reads(KEY_PAIRS, _key_pairs, ctx, keys) or frozenset(),
        # IAM has no batch read of instance profiles: one GetInstanceProfile per distinct name.
        "instance_profiles": frozenset(
            p for p in profiles if reads(INSTANCE_PROFILES, get_instance_profile, ctx, p) is not None
        ),
    }


def _offerings(ctx: Context, types: Sequence[str]) -> dict[str, frozenset[str]]:
    offerings: dict[str, set[str]] = {}
    for offer in describe(
        ctx,
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": list(types)}],
    ):
        offerings.setdefault(offer["InstanceType"], set()).add(offer["Location"])
    return {t: frozenset(z) for t, z in offerings.items()}


def _images(ctx: Context, ids: Sequence[str]) -> dict[str, str]:
    if not ids:
        return {}
    # A filter, not ImageIds: an id unknown here (another region's) must not fail the read of the others.
    found = describe(ctx, "describe_images", "Images", Filters=[{"Name": "image-id", "Values": list(ids)}])
    return {i["ImageId"]: i.get("Architecture", "") for i in found}


def _key_pairs(ctx: Context, names: Sequence[str]) -> frozenset[str]:
    if not names:
        return frozenset()
    found = describe(ctx, "describe_key_pairs", "KeyPairs", Filters=[{"Name": "key-name", "Values": list(names)}])
    return frozenset(k["KeyName"] for k in found)


def _instance_types(ctx: Context, types: Sequence[str]) -> dict[str, InstanceType]:
    if not types:
        return {}
    found = describe(ctx, "describe_instance_types", "InstanceTypes", InstanceTypes=list(types))
    return {
        t["InstanceType"]: InstanceType(
            tuple(t.get("ProcessorInfo", {}).get("SupportedArchitectures", [])),
            int(t.get("VCpuInfo", {}).get("DefaultVCpus", 0)),
        )
        for t in found
    }


def _lookups(
    ctx: Context, lookups: Sequence[Lookup], wanted: Mapping[Lookup, set[str]]
) -> dict[tuple[Lookup, str], bool]:
    """ONE DescribeImages for every lookup of the run: all owners, names and architectures, matched here."""
    if not lookups:
        return {}
    owners = sorted({lookup.owner for lookup in lookups})
    patterns = sorted({p for lookup in lookups for p in lookup.patterns})
    archs = sorted({a for arches in wanted.values() for a in arches})
    images = describe(
        ctx,
        "describe_images",
        "Images",
        Owners=owners,
        Filters=[
            {"Name": "name", "Values": patterns},
            {"Name": "architecture", "Values": archs},
            {"Name": "state", "Values": ["available"]},
            {"Name": "virtualization-type", "Values": ["hvm"]},
        ],
    )
    return {
        (lookup, arch): any(_image_matches(image, lookup, arch) for image in images)
        for lookup in lookups
        for arch in wanted.get(lookup, ())
    }


def _image_matches(image: Mapping[str, Any], lookup: Lookup, arch: str) -> bool:
    return (
        image.get("OwnerId") == lookup.owner
        and image.get("Architecture") == arch
        and any(fnmatch.fnmatchcase(image.get("Name", ""), pattern) for pattern in lookup.patterns)
    )


def _running_instances(ctx: Context) -> list[dict[str, Any]]:
    reservations = describe(
        ctx,
        "describe_instances",
        "Reservations",
        Filters=[{"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}],
    )
    return [i for r in reservations for i in r.get("Instances", [])]


def _count(found: Sequence[Any] | None) -> int | None:
    return None if found is None else len(found)


def _with_quotas(
    ctx: Context,
    checks: Checks,
    values: dict[str, Any],
    nat_gateways: list[dict[str, Any]] | None,
    reads: Reads,
) -> Facts:
    """The instance types (of the spec and of what runs), the lookups, the quotas that matter and their usage."""
    zones = values["zones"]
    partial = Facts(zones=zones, subnets=values.get("subnets", {}))
    running = (
        reads("vcpu_usage", _running_instances, ctx, permission="ec2:DescribeInstances") if checks.launches else []
    )
    types = sorted(set(values.get("offered_types", [])) | {i["InstanceType"] for i in running or []})
    instance_types = reads(INSTANCE_TYPES, _instance_types, ctx, types) or {}
    wanted: dict[Lookup, set[str]] = {}
    for launch in checks.launches:
        machines = launch.machines
        if machines.lookup and not machines.ami_id:
            archs = {
                pick_architecture(instance_types[t].architectures)
                for t in machines.instance_types
                if t in instance_types
            }
            wanted.setdefault(machines.lookup, set()).update(archs)
    lookups = reads(AMI_LOOKUPS, _lookups, ctx, list(wanted), wanted) or {}
    usage: dict[str, Any] = {}
    quotas: dict[str, float | None] = {}
    nats = nat_zones(checks, partial)

    def quota(name: str) -> None:
        spec = QUOTAS[name]
        quotas[name] = reads(QUOTAS_CHECK, quota_value, ctx, spec.service, spec.code, permission=QUOTA_PERMISSION)
        if quotas[name] is None and QUOTAS_CHECK not in reads.skipped:
            ctx.warn(f"preflight: the quota {spec.code} ({spec.name}) could not be read; not checked")

    if checks.creates_vpc:
        quota("vpcs")
        usage["vpcs"] = values.get("vpc_count")
    if nats:
        quota("elastic_ips")
        quota("nat_gateways")
        addresses = reads("elastic_ip_usage", describe, ctx, "describe_addresses", "Addresses", permission=EIP_READ)
        usage["elastic_ips"] = _count(addresses)
        if nat_gateways is not None:
            by_zone: dict[str, int] = {}
            for nat in nat_gateways:
                zone = partial.subnets.get(nat.get("SubnetId", ""))
                if zone:
                    by_zone[zone] = by_zone.get(zone, 0) + 1
            usage["nat_gateways"] = by_zone
    if checks.creates_lb:
        if checks.needs.lb_type == "classic":
            quota("classic_lbs")
            usage["classic_lbs"] = _count(
                reads("load_balancer_usage", _elb.describe_load_balancers, ctx, permission=LB_READ)
            )
        else:
            quota("nlbs")
            found = reads("load_balancer_usage", _elbv2.describe_load_balancers, ctx, permission=LB_READ)
            usage["nlbs"] = None if found is None else sum(1 for lb in found if lb.get("Type") == "network")
    if checks.launches:
        if running is not None:
            usage.update(_vcpus_in_use(running, instance_types))
        on_demand, spot = added_vcpus(checks, Facts(instance_types=instance_types))
        if on_demand:
            quota("on_demand_vcpus")
        if spot:
            quota("spot_vcpus")
    return Facts(
        zones=zones,
        offerings=values.get("offerings", {}),
        instance_types=instance_types,
        images=values.get("images", {}),
        lookups=lookups,
        key_pairs=values.get("key_pairs", frozenset()),
        instance_profiles=values.get("instance_profiles", frozenset()),
        vpc_found=values.get("vpc_found"),
        subnets=values.get("subnets", {}),
        security_groups=values.get("security_groups", frozenset()),
        load_balancer_found=values.get("load_balancer_found"),
        kms_key=values.get("kms_key"),
        eks_versions=values.get("eks_versions"),
        quotas=quotas,
        usage=Usage(**usage),
    )


def _vcpus_in_use(running: Sequence[Mapping[str, Any]], types: Mapping[str, InstanceType]) -> dict[str, int]:
    on_demand = spot = 0
    for instance in running:
        instance_type = instance.get("InstanceType", "")
        if not is_standard(instance_type) or instance_type not in types:
            continue
        if instance.get("InstanceLifecycle") == "spot":
            spot += types[instance_type].vcpus
        else:
            on_demand += types[instance_type].vcpus
    return {"on_demand_vcpus": on_demand, "spot_vcpus": spot}


# ---------------------------------------------------------------------------------------------------------------
# The tier
# ---------------------------------------------------------------------------------------------------------------
def message(problems: Sequence[Failure], check_mode: bool) -> str:
    listed = "; ".join(str(p) for p in problems)
    if check_mode:
        return f"would fail: {listed}"
    return f"preflight: {len(problems)} problem(s), nothing was changed: {listed}"


def view(checks: Checks, facts: Facts, made: Sequence[str]) -> dict[str, Any]:
    on_demand, spot = added_vcpus(checks, facts)
    return {
        "skipped": checks.nothing,
        "checked": list(made),
        "creates": {
            "network": checks.creates_network,
            "vpc": checks.creates_vpc,
            "load_balancer": checks.creates_lb,
            "eks_cluster": checks.creates_eks,
            "nat_gateways": nat_zones(checks, facts) if not checks.nothing else [],
            "machines": {launch.machines.field: launch.count for launch in checks.launches},
            "on_demand_vcpus": sum(on_demand.values()),
            "spot_vcpus": sum(spot.values()),
        },
        "quotas": dict(facts.quotas),
        "not_checked": dict(facts.skipped),
        "failures": [],
    }


class PreflightTier:
    def parse(self, params: Mapping[str, Any]) -> ClusterSpec:
        spec = read_spec(params["spec"])
        if spec.name != params["cluster_name"]:
            raise SpecError("spec.name", f"'{spec.name}' is not cluster_name '{params['cluster_name']}'")
        return spec

    def validate(self, spec: ClusterSpec, region: str | None) -> None:
        pass  # capa_cluster_spec checked every rule of the spec when it compiled this step

    def reconcile(self, ctx: Context, spec: ClusterSpec) -> Outcome:
        reads = Reads(ctx)
        existing = observe_existing(ctx, reads)
        if existing is None:  # what the run would create is unknown: no check can be judged
            unknown = Checks(needs(spec, ctx.region or ""), False, False, False, False, ())
            return Outcome(None, view(unknown, Facts(skipped=reads.skipped), []))
        checks = plan_checks(needs(spec, ctx.region or ""), existing)
        facts, made = observe_facts(ctx, checks, reads)
        problems = failures(checks, facts)
        if problems:
            raise ReconcileError(message(problems, ctx.check_mode))
        return Outcome(None, view(checks, facts, made))
