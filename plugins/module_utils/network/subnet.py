# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster's subnets, NAT gateways, Elastic IPs and route tables.

CAPA pkg/cloud/services/network/{subnets,natgateways,eips,routetables}.go. The tier skeleton: :class:`SubnetSpec`
(the options, once) -> :func:`observe` (one filtered describe per resource type, into the typed values
:class:`Subnet`, :class:`RouteTable`, :class:`NatGateway`, :class:`Address`) -> the pure decisions of
``subnet_plan`` (zones, CIDRs, NAT placement, route targets) -> apply through ``ctx.ops`` in CAPA's order, and
delete in dependency order -> :func:`summary` (the one view of the tier).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from ..aws.ec2 import delete_when_free, describe, require_by_ids, tags_of, wait_for_states
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.idempotency import new_client_token
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import (
    ELB_ROLE_TAG,
    INTERNAL_ELB_ROLE_TAG,
    OWNED,
    ROLE_COMMON,
    ROLE_PRIVATE,
    ROLE_PUBLIC,
    ROLE_TAG,
    SHARED,
    cloud_provider_tag_key,
    cluster_tag_key,
    eip_name,
    is_owned,
    nat_gateway_name,
    repair_tags,
    route_table_name,
    subnet_name,
    tag_specifications,
)
from ..kernel.tier import Outcome
from ..kernel.validation import (
    check_availability_zone,
    check_resource_id,
    check_subnet_cidrs,
    check_tags,
    check_vpc_cidr,
)
from .blockers import finder
from .subnet_plan import (
    DEFAULT_ROUTE,
    DesiredSubnet,
    NatSlot,
    choose_zones,
    current_default_route,
    default_subnets,
    explicit_subnets,
    is_public_target,
    place_nat_gateways,
    route_target,
)
from .vpc import associated_cidrs

GONE_NAT_STATES = ("deleted", "deleting", "failed")
AZ_FILTERS = [
    {"Name": "state", "Values": ["available"]},
    # Local and Wavelength zones need an opt-in; CAPA leaves them out of the default layout.
    {"Name": "opt-in-status", "Values": ["opt-in-not-required"]},
]


# spec ------------------------------------------------------------------------------------------------------------
@dataclass
class SubnetSpec:
    """The module's options as plain values."""

    state: str
    vpc_id: str | None
    vpc_cidr_block: str | None
    subnets: list[DesiredSubnet]
    zone_limit: int
    zone_selection: str
    nat_mode: str
    internet_gateway_id: str | None
    nat_wait: bool = True

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SubnetSpec:
        return cls(
            state=params["state"],
            vpc_id=params["vpc_id"],
            vpc_cidr_block=params["vpc_cidr_block"],
            subnets=explicit_subnets(params["subnets"]),
            zone_limit=params["availability_zone_usage_limit"],
            zone_selection=params["availability_zone_selection"],
            nat_mode=params["nat_gateways"],
            internet_gateway_id=params["internet_gateway_id"],
            nat_wait=params["nat_gateway_wait"],
        )


# observed state (typed, built once from AWS's answers) -----------------------------------------------------------
@dataclass(frozen=True)
class VpcView:
    id: str
    cidrs: list[str]
    managed: bool

    @property
    def planned(self) -> bool:
        return is_placeholder(self.id)


@dataclass(frozen=True)
class Subnet:
    id: str
    zone: str
    cidr: str
    tags: dict[str, str]
    map_public_ip: bool

    @classmethod
    def from_aws(cls, subnet: Mapping[str, Any]) -> Subnet:
        return cls(
            subnet["SubnetId"],
            subnet["AvailabilityZone"],
            subnet["CidrBlock"],
            tags_of(subnet),
            bool(subnet.get("MapPublicIpOnLaunch")),
        )

    @property
    def label(self) -> str:
        return self.tags.get("Name") or self.id


@dataclass(frozen=True)
class Association:
    id: str | None
    subnet_id: str | None
    main: bool = False


@dataclass(frozen=True)
class RouteTable:
    id: str
    tags: dict[str, str]
    associations: tuple[Association, ...]
    default_route: tuple[str, str] | None  # (CreateRoute parameter, target id) of its 0.0.0.0/0 route

    @classmethod
    def from_aws(cls, table: Mapping[str, Any]) -> RouteTable:
        associations = tuple(
            Association(a.get("RouteTableAssociationId"), a.get("SubnetId"), bool(a.get("Main")))
            for a in table.get("Associations", [])
        )
        return cls(table["RouteTableId"], tags_of(table), associations, current_default_route(table))

    @property
    def main(self) -> bool:
        return any(a.main for a in self.associations)

    @property
    def subnet_ids(self) -> list[str]:
        return [a.subnet_id for a in self.associations if a.subnet_id]

    def explicitly_associated_with(self, subnet_id: str) -> bool:
        return any(a.subnet_id == subnet_id and not a.main for a in self.associations)

    @property
    def public(self) -> bool:
        """CAPA: 0.0.0.0/0 to an internet (or carrier) gateway makes the table's subnets public."""
        return is_public_target(self.default_route)


@dataclass(frozen=True)
class NatAddress:
    allocation_id: str | None
    public_ip: str | None


@dataclass(frozen=True)
class NatGateway:
    id: str
    subnet_id: str | None
    state: str | None
    tags: dict[str, str]
    addresses: tuple[NatAddress, ...]

    @classmethod
    def from_aws(cls, nat: Mapping[str, Any]) -> NatGateway:
        addresses = tuple(
            NatAddress(a.get("AllocationId"), a.get("PublicIp")) for a in nat.get("NatGatewayAddresses") or []
        )
        return cls(nat["NatGatewayId"], nat.get("SubnetId"), nat.get("State"), tags_of(nat), addresses)

    @property
    def live(self) -> bool:
        return self.state not in GONE_NAT_STATES


@dataclass(frozen=True)
class Address:
    allocation_id: str
    public_ip: str | None
    association_id: str | None
    tags: dict[str, str]

    @classmethod
    def from_aws(cls, address: Mapping[str, Any]) -> Address:
        return cls(address["AllocationId"], address.get("PublicIp"), address.get("AssociationId"), tags_of(address))


@dataclass
class SubnetState:
    """A desired subnet joined with what AWS has (``observed``); the run fills in what it makes."""

    desired: DesiredSubnet
    observed: Subnet | None = None
    is_public: bool = False
    managed: bool = True
    route_table: RouteTable | None = None
    nat_gateway_id: str | None = None

    @property
    def id(self) -> str:
        return self.observed.id if self.observed else ""

    @property
    def zone(self) -> str:
        return self.observed.zone if self.observed else self.desired.availability_zone or ""

    @property
    def cidr(self) -> str:
        return self.observed.cidr if self.observed else self.desired.cidr_block or ""

    @property
    def label(self) -> str:
        return (self.observed.tags.get("Name") if self.observed else None) or self.id or self.cidr


@dataclass
class Observed:
    """What a ``state=present`` run found, with the desired subnets joined to it."""

    vpc: VpcView
    states: list[SubnetState]
    unassociated_tables: list[RouteTable] = field(default_factory=list)  # ours, left by an interrupted run
    nats: list[NatGateway] = field(default_factory=list)  # live ones
    addresses: list[Address] | None = None  # the cluster's Elastic IPs, read only when a run needs them

    @property
    def zones(self) -> list[str]:
        return sorted({s.zone for s in self.states if s.zone})

    def zone_of_subnet(self) -> dict[str, str]:
        return {s.id: s.zone for s in self.states if s.observed}


# observe ---------------------------------------------------------------------------------------------------------
def observe(ctx: Context, spec: SubnetSpec) -> Observed:
    """The VPC, its subnets, the zones (only when a subnet must be placed or created and the cluster's subnets do not
    tell them: :func:`zones_known`) and the route tables, each with one describe, and the desired subnets joined to
    what exists (:func:`observe_egress` adds the rest)."""
    vpc = _vpc(ctx, spec)
    existing = (
        []
        if vpc.planned
        else [Subnet.from_aws(s) for s in describe(ctx, "describe_subnets", "Subnets", Filters=_vpc_filter(vpc.id))]
    )
    zones = zones_known(ctx.cluster, spec, vpc, existing)
    if zones is None:
        zones = _available_zones(ctx)
    states = join(ctx.cluster, vpc, existing, desired_subnets(ctx.cluster, spec, vpc, existing, zones), zones)
    tables = [RouteTable.from_aws(t) for t in _route_tables(ctx, vpc, states)]
    return Observed(vpc, states, classify(ctx.cluster, states, tables))


def observe_egress(ctx: Context, observed: Observed) -> None:
    """The NAT gateways of a managed VPC, read once the network's shape passed its checks. The Elastic IPs are read
    when a run needs them (:func:`cluster_addresses`): as CAPA, to create a NAT gateway; and to carry a tag change
    of the cluster's to its gateways' addresses. A gateway's own answer has its address and public IP."""
    vpc = observed.vpc
    if not vpc.managed or vpc.planned:
        observed.addresses = []  # a planned VPC's gateways take new addresses; an unmanaged one gets none
        return
    # The cluster's NAT gateways wherever they are, this VPC's picked here: the status read-back's request, so a
    # run that changes nothing asks it once (kernel/shared_reads.py).
    nats = describe(ctx, "describe_nat_gateways", "NatGateways", Filter=ctx.owner_filters())
    here = [NatGateway.from_aws(n) for n in nats if n.get("VpcId") == vpc.id]
    observed.nats = [n for n in here if n.live]


def cluster_addresses(ctx: Context, observed: Observed) -> list[Address]:
    """The cluster's Elastic IPs (one describe, on the first need of the run)."""
    if observed.addresses is None:
        addresses = describe(ctx, "describe_addresses", "Addresses", Filters=ctx.owner_filters())
        observed.addresses = [Address.from_aws(a) for a in addresses]
    return observed.addresses


def _vpc(ctx: Context, spec: SubnetSpec) -> VpcView:
    if is_placeholder(spec.vpc_id):
        return VpcView(spec.vpc_id or "", [spec.vpc_cidr_block or ""], managed=True)
    vpc = require_by_ids(ctx, "describe_vpcs", "Vpcs", "VpcIds", [spec.vpc_id or ""])[0]
    cidrs = associated_cidrs(vpc) or [vpc["CidrBlock"]]
    if spec.vpc_cidr_block and spec.vpc_cidr_block not in cidrs:
        raise SpecError("vpc_cidr_block", f"'{spec.vpc_cidr_block}' is not a CIDR block of {vpc['VpcId']} ({cidrs})")
    check_subnet_cidrs([{"cidr_block": s.cidr_block} for s in spec.subnets], cidrs)
    return VpcView(vpc["VpcId"], cidrs, is_owned(tags_of(vpc), ctx.cluster))


def zones_known(cluster: str, spec: SubnetSpec, vpc: VpcView, existing: Sequence[Subnet]) -> list[str] | None:
    """The zones a subnet may go to when no read is needed (``[]``: none is placed or created, or the VPC is not
    the cluster's), ``None`` when they must be read (one describe). The default layout keeps the zones the
    cluster's subnets use once they are as many as it allows: the layout over them is the one it had
    (:func:`choose_zones` keeps the zones in use first). CAPA writes the zones it picked into the cluster spec and
    does not read them again either."""
    if not vpc.managed:
        return []
    if not spec.subnets:
        in_use = zones_in_use(cluster, existing)
        return sorted(in_use) if len(in_use) == spec.zone_limit else None
    cidrs = {s.cidr for s in existing}
    return None if any(not d.id and d.cidr_block not in cidrs for d in spec.subnets) else []


def zones_in_use(cluster: str, existing: Sequence[Subnet]) -> set[str]:
    """The zones of the subnets the cluster owns: the default layout keeps them."""
    return {s.zone for s in existing if is_owned(s.tags, cluster)}


def _available_zones(ctx: Context) -> list[str]:
    found = describe(ctx, "describe_availability_zones", "AvailabilityZones", Filters=AZ_FILTERS)
    return sorted(z["ZoneName"] for z in found)


def desired_subnets(
    cluster: str, spec: SubnetSpec, vpc: VpcView, existing: Sequence[Subnet], zones: Sequence[str]
) -> list[DesiredSubnet]:
    if spec.subnets:
        return spec.subnets
    if not vpc.managed:
        raise SpecError("subnets", f"VPC {vpc.id} is not owned by cluster {cluster}: list its subnets by id")
    in_use = zones_in_use(cluster, existing)
    chosen = choose_zones(zones, spec.zone_limit, spec.zone_selection, cluster, in_use)
    if not chosen:
        raise ReconcileError("no availability zone of the region is available for the default subnet layout")
    return default_subnets(vpc.cidrs[0], chosen)


def join(
    cluster: str,
    vpc: VpcView,
    existing: Sequence[Subnet],
    desired: Sequence[DesiredSubnet],
    zones: Sequence[str],
) -> list[SubnetState]:
    """Match each desired subnet to an existing one: by id (bring your own) or by CIDR (as CAPA does)."""
    by_id = {s.id: s for s in existing}
    by_cidr = {s.cidr: s for s in existing}
    states = []
    for want in desired:
        if want.id:
            found = by_id.get(want.id)
            if found is None:
                raise SpecError(f"{want.field}.id", f"subnet {want.id} does not exist in VPC {vpc.id}")
            _check_matches(want, found)
        else:
            found = by_cidr.get(want.cidr_block or "")
            if found and found.zone != want.availability_zone:
                raise SpecError(
                    f"{want.field}.availability_zone",
                    f"{found.id} with CIDR {want.cidr_block} exists in {found.zone}",
                )
            if found is None:
                _check_creatable(cluster, vpc, want, existing, zones)
        managed = found is None or is_owned(found.tags, cluster)
        states.append(SubnetState(want, found, want.is_public, managed))
    return states


def _check_creatable(
    cluster: str, vpc: VpcView, want: DesiredSubnet, existing: Sequence[Subnet], zones: Sequence[str]
) -> None:
    if not vpc.managed:
        raise SpecError(
            want.field, f"VPC {vpc.id} is not owned by cluster {cluster}; subnets are only created in a managed VPC"
        )
    # A subnet's CIDR cannot change: a new block overlapping one in use is that change (AWS would refuse the
    # create halfway through the run), so it is refused here, after the reads and before any change.
    network = ipaddress.ip_network(want.cidr_block or "")
    for subnet in existing:
        if network.overlaps(ipaddress.ip_network(subnet.cidr)):
            raise SpecError(
                f"{want.field}.cidr_block",
                f"'{want.cidr_block}' overlaps {subnet.id} ({subnet.cidr}) in {vpc.id}; "
                "a subnet's CIDR block cannot change",
            )
    if want.availability_zone not in zones:
        raise SpecError(
            f"{want.field}.availability_zone",
            f"'{want.availability_zone}' is not an available zone here ({', '.join(zones)})",
        )


def _route_tables(ctx: Context, vpc: VpcView, states: Sequence[SubnetState]) -> list[dict[str, Any]]:
    """Route tables, one describe: ours in a managed VPC; the ones that classify unowned subnets otherwise."""
    if vpc.planned:
        return []
    unowned = [s.id for s in states if not s.managed and s.observed and s.observed.tags.get(ROLE_TAG) != ROLE_PUBLIC]
    if vpc.managed and not unowned:
        # The cluster's tables, this VPC's picked here: the status read-back's request (kernel/shared_reads.py).
        owned = describe(ctx, "describe_route_tables", "RouteTables", Filters=ctx.owner_filters())
        return [t for t in owned if t.get("VpcId") == vpc.id]
    if vpc.managed:
        filters = _vpc_filter(vpc.id)  # also the tables of subnets we do not own, for public detection
    elif unowned:
        filters = _vpc_filter(vpc.id) + [{"Name": "association.subnet-id", "Values": unowned}]
    else:
        return []
    return describe(ctx, "describe_route_tables", "RouteTables", Filters=filters)


def classify(cluster: str, states: Sequence[SubnetState], tables: Sequence[RouteTable]) -> list[RouteTable]:
    """Give each managed subnet its own route table and tell unowned subnets' public from private; returns our
    tables associated with no subnet (an interrupted run created them)."""
    explicit = explicit_route_tables(tables)
    for state in states:
        table = explicit.get(state.id) if state.observed else None
        if state.managed:
            state.route_table = table if table and is_owned(table.tags, cluster) else None
            continue
        # CAPA: a subnet is public by its role tag or by its own route table's 0.0.0.0/0 -> internet gateway.
        role = state.observed.tags.get(ROLE_TAG) if state.observed else None
        state.is_public = role == ROLE_PUBLIC or bool(table and table.public)
    return [t for t in tables if is_owned(t.tags, cluster) and not t.subnet_ids]


def explicit_route_tables(tables: Iterable[RouteTable]) -> dict[str, RouteTable]:
    """Subnet id -> the route table explicitly associated with it (the main table counts for nobody)."""
    found: dict[str, RouteTable] = {}
    for table in tables:
        for association in table.associations:
            if association.subnet_id and not association.main:
                found[association.subnet_id] = table
    return found


def check_shape(vpc: VpcView, states: Sequence[SubnetState], spec: SubnetSpec) -> list[NatSlot]:
    """CAPA's rules on a managed network, checked before the first mutating call; the NAT gateways' places."""
    if not vpc.managed:
        return []
    if not any(s.is_public for s in states):
        raise SpecError("subnets", "a managed VPC needs at least one public subnet")
    managed = [s for s in states if s.managed]
    if any(s.is_public for s in managed) and not spec.internet_gateway_id:
        raise SpecError("internet_gateway_id", "is required for the route tables of public subnets in a managed VPC")
    shapes = [DesiredSubnet(s.zone, s.cidr, s.is_public) for s in managed]
    return place_nat_gateways(shapes, spec.nat_mode)


def _check_matches(desired: DesiredSubnet, found: Subnet) -> None:
    if desired.availability_zone and desired.availability_zone != found.zone:
        raise SpecError(f"{desired.field}.availability_zone", f"{found.id} is in {found.zone}")
    if desired.cidr_block and desired.cidr_block != found.cidr:
        raise SpecError(f"{desired.field}.cidr_block", f"{found.id} has CIDR {found.cidr}")


def pick_nat(
    nats: Sequence[NatGateway], subnet_id: str, zone: str, zone_of_subnet: Mapping[str, str]
) -> NatGateway | None:
    """An existing NAT for a slot: the one in the slot's subnet, else one elsewhere in the same AZ."""
    for nat in nats:
        if nat.subnet_id == subnet_id:
            return nat
    for nat in nats:
        if zone_of_subnet.get(nat.subnet_id or "") == zone:
            return nat
    return None


def free_address(addresses: Sequence[Address], nats: Sequence[NatGateway]) -> Address | None:
    """An owned, unassociated ``common`` EIP no NAT gateway holds (CAPA reuses these)."""
    used = {a.allocation_id for n in nats for a in n.addresses}
    for address in addresses:
        if (
            address.tags.get(ROLE_TAG) == ROLE_COMMON
            and not address.association_id
            and address.allocation_id not in used
        ):
            return address
    return None


# the tier --------------------------------------------------------------------------------------------------------
class SubnetTier:
    def parse(self, params: Mapping[str, Any]) -> SubnetSpec:
        return SubnetSpec.from_params(params)

    # validate (before any AWS call) --------------------------------------------------------------------------
    def validate(self, spec: SubnetSpec, region: str | None) -> None:
        vpc_id, vpc_cidr = spec.vpc_id, spec.vpc_cidr_block
        check_resource_id(vpc_id, "vpc", "vpc_id")
        check_resource_id(spec.internet_gateway_id, "igw", "internet_gateway_id")
        if spec.state == "present" and not vpc_id:
            raise SpecError("vpc_id", "is required when state=present")
        if is_placeholder(vpc_id) and not vpc_cidr:
            raise SpecError("vpc_cidr_block", "is required when vpc_id is a check-mode placeholder")
        if vpc_cidr:
            check_vpc_cidr(vpc_cidr, "vpc_cidr_block")
        if spec.zone_limit < 1:
            raise SpecError("availability_zone_usage_limit", "must be at least 1")
        for subnet in spec.subnets:
            where = f"subnets[{subnet.index}]"
            check_resource_id(subnet.id, "subnet", f"{where}.id")
            if not subnet.id and not (subnet.availability_zone and subnet.cidr_block):
                raise SpecError(where, "needs either id (an existing subnet) or availability_zone and cidr_block")
            if subnet.id and is_placeholder(vpc_id):
                raise SpecError(f"{where}.id", "an existing subnet cannot be in a VPC that does not exist yet")
            if subnet.availability_zone:
                check_availability_zone(subnet.availability_zone, region, f"{where}.availability_zone")
            check_tags(subnet.tags, f"{where}.tags")
        check_subnet_cidrs([{"cidr_block": s.cidr_block} for s in spec.subnets], [vpc_cidr] if vpc_cidr else [])

    # reconcile -----------------------------------------------------------------------------------------------
    def reconcile(self, ctx: Context, spec: SubnetSpec) -> Outcome:
        if spec.state == "absent":
            return Outcome(*_Deletion(ctx, spec).run())
        return Outcome(*_Build(ctx, spec).run())


# apply: state=present --------------------------------------------------------------------------------------------
class _Build:
    """One ``state=present`` run: observe, decide, then create/repair in CAPA's order."""

    def __init__(self, ctx: Context, spec: SubnetSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.ec2 = ctx.client("ec2")

    def run(self) -> tuple[Any, Any]:
        observed = observe(self.ctx, self.spec)
        slots = check_shape(observed.vpc, observed.states, self.spec)
        observe_egress(self.ctx, observed)
        before = summary(self.ctx.cluster, observed, observed_only=True)
        self._ensure_subnets(observed)
        if observed.vpc.managed:
            nat_by_zone = self._ensure_nat_gateways(observed, slots)
            self._ensure_route_tables(observed, nat_by_zone)
        return before, summary(self.ctx.cluster, observed)

    # subnets ---------------------------------------------------------------------------------------------------
    def _ensure_subnets(self, observed: Observed) -> None:
        created = []
        for state in observed.states:
            if not state.managed:
                self._tag_unowned_subnet(state)
            elif state.observed is None:
                state.observed = self._create_subnet(observed.vpc, state)
                created.append(state.id)
            else:
                wanted = self._subnet_tags(state)
                tags = repair_tags(self.ctx, "ec2", state.id, state.label, state.observed.tags, wanted)
                state.observed = replace(state.observed, tags=tags)
        if created and self.ctx.wait and not self.ctx.check_mode:
            wait_for_states(
                self.ctx,
                "describe_subnets",
                "Subnets",
                "subnet-id",
                created,
                ["available"],
                f"subnets {', '.join(created)}",
            )
        for state in observed.states:
            if state.managed and state.is_public and state.observed and not state.observed.map_public_ip:
                self.ctx.ops.call(
                    self.ec2,
                    "modify_subnet_attribute",
                    resource=state.label,
                    reason="public subnet does not map public IPs on launch",
                    SubnetId=state.id,
                    MapPublicIpOnLaunch={"Value": True},
                )
                state.observed = replace(state.observed, map_public_ip=True)

    def _subnet_tags(self, state: SubnetState) -> dict[str, str]:
        public = state.is_public
        extra = {
            cloud_provider_tag_key(self.ctx.cluster): OWNED,
            ELB_ROLE_TAG if public else INTERNAL_ELB_ROLE_TAG: "1",
            **state.desired.tags,
        }
        name = subnet_name(self.ctx.cluster, public, state.zone)
        return self.ctx.tags(ROLE_PUBLIC if public else ROLE_PRIVATE, name, extra)

    def _create_subnet(self, vpc: VpcView, state: SubnetState) -> Subnet:
        tags = self._subnet_tags(state)
        label = tags.get("Name") or state.cidr
        created = self.ctx.ops.call(
            self.ec2,
            "create_subnet",
            resource=label,
            reason="missing",
            predicted={"Subnet": {"SubnetId": placeholder("subnet", label), "MapPublicIpOnLaunch": False}},
            VpcId=vpc.id,
            AvailabilityZone=state.desired.availability_zone,
            CidrBlock=state.desired.cidr_block,
            TagSpecifications=tag_specifications("subnet", tags),
        )["Subnet"]
        return Subnet(
            created["SubnetId"],
            state.desired.availability_zone or "",
            state.desired.cidr_block or "",
            dict(tags),
            bool(created.get("MapPublicIpOnLaunch", False)),
        )

    def _tag_unowned_subnet(self, state: SubnetState) -> None:
        """CAPA's TagUnmanagedNetworkResources: the cloud provider's discovery tags, nothing else."""
        if state.observed is None:
            return
        key = cloud_provider_tag_key(self.ctx.cluster)
        wanted = {key: SHARED, ELB_ROLE_TAG if state.is_public else INTERNAL_ELB_ROLE_TAG: "1"}
        # Someone else's cluster-owned tag stays as it is.
        frozen = (key,) if state.observed.tags.get(key) == OWNED else ()
        tags = repair_tags(self.ctx, "ec2", state.id, state.id, state.observed.tags, wanted, frozen=frozen)
        state.observed = replace(state.observed, tags=tags)

    # NAT gateways and Elastic IPs ------------------------------------------------------------------------------
    def _ensure_nat_gateways(self, observed: Observed, slots: Sequence[NatSlot]) -> dict[str, str]:
        by_cidr = {s.cidr: s for s in observed.states if s.managed}
        free = list(observed.nats)
        nat_by_zone: dict[str, str] = {}
        waiting: list[str] = []
        name = nat_gateway_name(self.ctx.cluster)
        for slot in slots:
            subnet = by_cidr[slot.subnet_cidr]
            nat = pick_nat(free, subnet.id, slot.availability_zone, observed.zone_of_subnet())
            if nat is None:
                nat = self._create_nat(observed, subnet)
                observed.nats.append(nat)
            else:
                free.remove(nat)
                tags = repair_tags(self.ctx, "ec2", nat.id, name, nat.tags, self.ctx.tags(ROLE_COMMON, name))
                if tags != nat.tags:
                    # The cluster's tags changed (additional_tags): its gateway's addresses follow. CAPA repairs
                    # the gateway's tags alone; an address's own drift is left, so a run that changes nothing
                    # reads no Elastic IPs.
                    self._repair_address_tags(observed, nat)
            if nat.state != "available" and not is_placeholder(nat.id):
                waiting.append(nat.id)
            nat_by_zone[slot.availability_zone] = nat.id
        if free:
            ids = ", ".join(n.id for n in free)
            self.ctx.warn(f"NAT gateway(s) {ids} are owned by the cluster but no longer needed; they are kept")
        if waiting and self.ctx.wait and self.spec.nat_wait and not self.ctx.check_mode:
            wait_for_states(
                self.ctx,
                "describe_nat_gateways",
                "NatGateways",
                "nat-gateway-id",
                waiting,
                ["available"],
                f"NAT gateways {', '.join(waiting)} to be available",
                failed=["failed", "deleting", "deleted"],
            )
            observed.nats = [replace(n, state="available") if n.id in waiting else n for n in observed.nats]
        return nat_by_zone

    def _repair_address_tags(self, observed: Observed, nat: NatGateway) -> None:
        """The Elastic IPs of a kept NAT gateway are the cluster's too: their tags follow the spec."""
        name = eip_name(self.ctx.cluster)
        in_use = {a.allocation_id for a in nat.addresses}
        addresses = cluster_addresses(self.ctx, observed)
        for index, address in enumerate(addresses):
            if address.allocation_id in in_use:
                tags = repair_tags(
                    self.ctx, "ec2", address.allocation_id, name, address.tags, self.ctx.tags(ROLE_COMMON, name)
                )
                addresses[index] = replace(address, tags=tags)

    def _create_nat(self, observed: Observed, subnet: SubnetState) -> NatGateway:
        address = free_address(cluster_addresses(self.ctx, observed), observed.nats) or self._allocate_address(
            observed, subnet.zone
        )
        name = nat_gateway_name(self.ctx.cluster)
        tags = self.ctx.tags(ROLE_COMMON, name)
        created = self.ctx.ops.call(
            self.ec2,
            "create_nat_gateway",
            resource=f"{name} ({subnet.zone})",
            reason="missing",
            predicted={"NatGateway": {"NatGatewayId": placeholder("nat", subnet.zone), "State": "pending"}},
            SubnetId=subnet.id,
            AllocationId=address.allocation_id,
            ClientToken=new_client_token(),
            TagSpecifications=tag_specifications("natgateway", tags),
        )["NatGateway"]
        addresses = (NatAddress(address.allocation_id, address.public_ip),)
        return NatGateway(created["NatGatewayId"], subnet.id, created.get("State"), dict(tags), addresses)

    def _allocate_address(self, observed: Observed, zone: str) -> Address:
        name = eip_name(self.ctx.cluster)
        tags = self.ctx.tags(ROLE_COMMON, name)
        planned = f"{name}-{zone}"
        allocated = self.ctx.ops.call(
            self.ec2,
            "allocate_address",
            resource=name,
            reason=f"NAT gateway in {zone} needs a public IP",
            predicted={"AllocationId": placeholder("eip", planned), "PublicIp": placeholder("eip-ip", planned)},
            Domain="vpc",
            TagSpecifications=tag_specifications("elastic-ip", tags),
        )
        address = Address(allocated["AllocationId"], allocated.get("PublicIp"), None, dict(tags))
        cluster_addresses(self.ctx, observed).append(address)
        return address

    # route tables ----------------------------------------------------------------------------------------------
    def _ensure_route_tables(self, observed: Observed, nat_by_zone: Mapping[str, str]) -> None:
        # CAPA routes private subnets through NAT gateways that are available (it waits for them first). A gateway
        # left pending (wait or nat_gateway_wait false) gets its routes from the run that finds it available.
        # A check does not wait: it plans the routes of the gateways it plans (or finds pending) as the apply makes
        # them.
        pending = [] if self.ctx.check_mode else [nat for nat in observed.nats if nat.state != "available"]
        unsettled = {("NatGatewayId", nat.id) for nat in pending}
        for state in observed.states:
            if not state.managed:
                continue
            name = route_table_name(self.ctx.cluster, state.is_public, state.zone)
            tags = self.ctx.tags(ROLE_COMMON, name, {cloud_provider_tag_key(self.ctx.cluster): OWNED})
            table = state.route_table or _adopt_unassociated(observed, name)
            if table is None:
                table = self._create_route_table(observed.vpc, name, tags)
            else:
                table = replace(table, tags=repair_tags(self.ctx, "ec2", table.id, name, table.tags, tags))
            target = route_target(
                state.is_public, state.zone, self.spec.nat_mode, self.spec.internet_gateway_id, nat_by_zone
            )
            if target != table.default_route and target in unsettled:
                target = table.default_route  # routed once its NAT gateway is available (a later run)
            table = self._ensure_default_route(table, name, target)
            if not any(a.subnet_id == state.id for a in table.associations):
                answer = self.ctx.ops.call(
                    self.ec2,
                    "associate_route_table",
                    resource=name,
                    reason=f"not associated with {state.id}",
                    predicted={"AssociationId": placeholder("rtbassoc", name)},
                    RouteTableId=table.id,
                    SubnetId=state.id,
                )
                association = Association(answer.get("AssociationId"), state.id)
                table = replace(table, associations=table.associations + (association,))
            state.route_table = table
            if not state.is_public and target:
                state.nat_gateway_id = target[1]

    def _create_route_table(self, vpc: VpcView, name: str, tags: Mapping[str, str]) -> RouteTable:
        created = self.ctx.ops.call(
            self.ec2,
            "create_route_table",
            resource=name,
            reason="missing",
            predicted={"RouteTable": {"RouteTableId": placeholder("rtb", name)}},
            VpcId=vpc.id,
            TagSpecifications=tag_specifications("route-table", tags),
        )["RouteTable"]
        routes = [r for r in created.get("Routes", []) if r]
        return RouteTable(created["RouteTableId"], dict(tags), (), current_default_route({"Routes": routes}))

    def _ensure_default_route(self, table: RouteTable, name: str, target: tuple[str, str] | None) -> RouteTable:
        current = table.default_route
        if current == target:
            return table
        if target is None:
            self.ctx.ops.call(
                self.ec2,
                "delete_route",
                resource=name,
                reason="no default route wanted (nat_gateways=none)",
                RouteTableId=table.id,
                DestinationCidrBlock=DEFAULT_ROUTE,
            )
            return replace(table, default_route=None)
        method, reason = (
            ("create_route", "missing") if current is None else ("replace_route", f"points at {current[1]}")
        )
        route_to: dict[str, Any] = {target[0]: target[1]}
        self.ctx.ops.call(
            self.ec2,
            method,
            resource=name,
            reason=f"{DEFAULT_ROUTE} -> {target[1]} {reason}",
            RouteTableId=table.id,
            DestinationCidrBlock=DEFAULT_ROUTE,
            **route_to,
        )
        return replace(table, default_route=target)


def _adopt_unassociated(observed: Observed, name: str) -> RouteTable | None:
    # A table an interrupted run created but did not associate: reuse it rather than leave an orphan.
    for table in observed.unassociated_tables:
        if table.tags.get("Name") == name:
            observed.unassociated_tables.remove(table)
            return table
    return None


# apply: state=absent ---------------------------------------------------------------------------------------------
class _Deletion:
    """``state=absent``: route tables, NAT gateways (in parallel, then wait), EIPs, subnets - owned ones only."""

    def __init__(self, ctx: Context, spec: SubnetSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.ec2 = ctx.client("ec2")
        self.vpc_id = spec.vpc_id if spec.vpc_id and not is_placeholder(spec.vpc_id) else None

    def run(self) -> tuple[Any, Any]:
        if is_placeholder(self.spec.vpc_id):
            return None, _empty()  # nothing of a VPC that does not exist yet can exist
        ctx = self.ctx
        subnets = [Subnet.from_aws(s) for s in self._subnets()]
        scope = _vpc_filter(self.vpc_id) if self.vpc_id else []
        tables = describe(ctx, "describe_route_tables", "RouteTables", Filters=scope + ctx.owner_filters())
        nats = describe(ctx, "describe_nat_gateways", "NatGateways", Filter=scope + ctx.owner_filters())
        addresses = describe(ctx, "describe_addresses", "Addresses", Filters=ctx.owner_filters())
        nat_gateways = [NatGateway.from_aws(n) for n in nats]
        eips = [Address.from_aws(a) for a in addresses]
        before = {
            "subnets": [subnet_view(ctx.cluster, s) for s in subnets],
            "nat_gateways": [nat_view(n, eips, {}) for n in nat_gateways if n.live],
        }
        self._delete_route_tables([RouteTable.from_aws(t) for t in tables])
        self._delete_nat_gateways(nat_gateways)
        if not ctx.wait and not ctx.check_mode:
            # The Elastic IPs and subnets are only free once the gateways are gone: a run that waits deletes them
            # (the cluster role releases the egress this way while the control plane goes).
            return before, {**_empty(), "subnets": before["subnets"]}
        self._release_addresses(eips)
        self._delete_subnets([s for s in subnets if is_owned(s.tags, ctx.cluster)])
        self._untag_shared([s for s in subnets if not is_owned(s.tags, ctx.cluster)])
        return before, _empty()

    def _subnets(self) -> list[dict[str, Any]]:
        if self.vpc_id:
            return describe(self.ctx, "describe_subnets", "Subnets", Filters=_vpc_filter(self.vpc_id))
        # Without a VPC: subnets that carry either cluster key (values in one filter are OR-ed).
        keys = [cluster_tag_key(self.ctx.cluster), cloud_provider_tag_key(self.ctx.cluster)]
        return describe(self.ctx, "describe_subnets", "Subnets", Filters=[{"Name": "tag-key", "Values": keys}])

    def _delete_route_tables(self, tables: Sequence[RouteTable]) -> None:
        for table in tables:
            name = table.tags.get("Name") or table.id
            if table.main:
                self.ctx.warn(f"route table {name} is the VPC's main route table; it goes with the VPC")
                continue
            for association in table.associations:
                self.ctx.ops.call(
                    self.ec2,
                    "disassociate_route_table",
                    resource=name,
                    reason=f"cluster deleted (associated with {association.subnet_id})",
                    AssociationId=association.id,
                )
            self.ctx.ops.call(
                self.ec2, "delete_route_table", resource=name, reason="cluster deleted", RouteTableId=table.id
            )

    def _delete_nat_gateways(self, nats: Sequence[NatGateway]) -> None:
        pending = [n.id for n in nats if n.state == "deleting"]
        for nat in nats:
            if not nat.live:
                continue
            self.ctx.ops.call(
                self.ec2,
                "delete_nat_gateway",
                resource=f"{nat_gateway_name(self.ctx.cluster)} ({nat.id})",
                reason="cluster deleted",
                NatGatewayId=nat.id,
            )
            pending.append(nat.id)
        # Deleted in parallel, then one wait: their EIPs and ENIs are only released once they are gone.
        if pending and self.ctx.wait and not self.ctx.check_mode:
            wait_for_states(
                self.ctx,
                "describe_nat_gateways",
                "NatGateways",
                "nat-gateway-id",
                pending,
                ["deleted"],
                f"NAT gateways {', '.join(pending)} to be deleted",
            )

    def _release_addresses(self, addresses: Sequence[Address]) -> None:
        # InvalidIPAddress.InUse / AuthFailure while AWS releases the NAT's ENI are retried by the client.
        for address in addresses:
            self.ctx.ops.call(
                self.ec2,
                "release_address",
                resource=address.tags.get("Name") or address.public_ip or address.allocation_id,
                reason="cluster deleted",
                AllocationId=address.allocation_id,
            )

    def _delete_subnets(self, subnets: Sequence[Subnet]) -> None:
        for subnet in subnets:

            def attempt(subnet: Subnet = subnet) -> Any:
                return self.ctx.ops.call(
                    self.ec2, "delete_subnet", resource=subnet.label, reason="cluster deleted", SubnetId=subnet.id
                )

            if self.ctx.check_mode:
                attempt()
                continue
            delete_when_free(self.ctx, attempt, f"subnet {subnet.id}", blockers=finder(self.ctx, subnet_id=subnet.id))

    def _untag_shared(self, subnets: Sequence[Subnet]) -> None:
        key = cloud_provider_tag_key(self.ctx.cluster)
        for subnet in subnets:
            if subnet.tags.get(key) == SHARED:
                self.ctx.ops.call(
                    self.ec2,
                    "delete_tags",
                    resource=subnet.id,
                    reason="cluster deleted; the subnet is not the cluster's and stays",
                    Resources=[subnet.id],
                    Tags=[{"Key": key, "Value": SHARED}],
                )


# helpers ---------------------------------------------------------------------------------------------------------
def _vpc_filter(vpc_id: str | None) -> list[dict[str, Any]]:
    return [{"Name": "vpc-id", "Values": [vpc_id]}]


# view ------------------------------------------------------------------------------------------------------------
def subnet_view(cluster: str, subnet: Subnet, state: SubnetState | None = None) -> dict[str, Any]:
    public = state.is_public if state else subnet.tags.get(ROLE_TAG) == ROLE_PUBLIC
    table = state.route_table if state else None
    return {
        "id": subnet.id,
        "name": subnet.tags.get("Name"),
        "availability_zone": subnet.zone,
        "cidr_block": subnet.cidr,
        "is_public": public,
        "managed": state.managed if state else is_owned(subnet.tags, cluster),
        "route_table_id": table.id if table else None,
        "nat_gateway_id": None if public or not state else state.nat_gateway_id,
        "map_public_ip_on_launch": subnet.map_public_ip,
        "tags": subnet.tags,
    }


def nat_view(nat: NatGateway, addresses: Sequence[Address], zone_of_subnet: Mapping[str, str]) -> dict[str, Any]:
    first = nat.addresses[0] if nat.addresses else NatAddress(None, None)
    ip = first.public_ip or next((a.public_ip for a in addresses if a.allocation_id == first.allocation_id), None)
    return {
        "id": nat.id,
        "availability_zone": zone_of_subnet.get(nat.subnet_id or ""),
        "subnet_id": nat.subnet_id,
        "allocation_id": first.allocation_id,
        "public_ip": ip,
        "state": nat.state,
    }


def summary(cluster: str, observed: Observed, observed_only: bool = False) -> dict[str, Any]:
    """The tier's result: subnets (as observed, or as the run left them), NAT gateways and their IPs, the zones."""
    subnets = [subnet_view(cluster, s.observed, None if observed_only else s) for s in observed.states if s.observed]
    nat_list = [nat_view(n, observed.addresses or [], observed.zone_of_subnet()) for n in observed.nats]
    return {
        "subnets": subnets,
        "nat_gateways": nat_list,
        "nat_gateway_ips": [n["public_ip"] for n in nat_list if n["public_ip"]],
        "availability_zones": observed.zones,
    }


def _empty() -> dict[str, Any]:
    return {"subnets": [], "nat_gateways": [], "nat_gateway_ips": [], "availability_zones": []}


def module_argument_spec() -> dict[str, Any]:
    """capa_subnet's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        vpc_id=dict(type="str"),
        vpc_cidr_block=dict(type="str"),
        subnets=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(
                id=dict(type="str"),
                availability_zone=dict(type="str"),
                cidr_block=dict(type="str"),
                is_public=dict(type="bool", default=False),
                tags=dict(type="dict"),
            ),
        ),
        availability_zone_usage_limit=dict(type="int", default=3),
        availability_zone_selection=dict(type="str", default="Ordered", choices=["Ordered", "Random"]),
        nat_gateways=dict(type="str", default="per_az", choices=["per_az", "single", "none"]),
        nat_gateway_wait=dict(type="bool", default=True),
        internet_gateway_id=dict(type="str"),
    )
