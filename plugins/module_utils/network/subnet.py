# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster's subnets, NAT gateways, Elastic IPs and route tables.

CAPA pkg/cloud/services/network/{subnets,natgateways,eips,routetables}.go. The shape of the network (zones,
CIDRs, NAT placement, route targets) is decided by the pure functions of ``_subnet_plan``; this file observes
AWS with one filtered describe per resource type, applies the decisions through ``ctx.ops.call`` and deletes in
dependency order.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.ec2 import delete_when_free, describe, describe_by_ids, ensure_tags, tags_of
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
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
    dict_to_tags,
    eip_name,
    is_owned,
    missing_tags,
    nat_gateway_name,
    route_table_name,
    subnet_name,
    tag_specifications,
)
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
    explicit_route_tables,
    explicit_subnets,
    has_public_route,
    nat_client_token,
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

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SubnetSpec:
        return cls(
            state=params["state"],
            vpc_id=params.get("vpc_id"),
            vpc_cidr_block=params.get("vpc_cidr_block"),
            subnets=explicit_subnets(params.get("subnets") or []),
            zone_limit=params["availability_zone_usage_limit"],
            zone_selection=params["availability_zone_selection"],
            nat_mode=params["nat_gateways"],
            internet_gateway_id=params.get("internet_gateway_id"),
        )


@dataclass
class VpcView:
    id: str
    cidrs: list[str]
    managed: bool

    @property
    def planned(self) -> bool:
        return is_placeholder(self.id)


@dataclass
class SubnetState:
    """A desired subnet joined with what AWS has (``observed``), filled in as the run goes."""

    desired: DesiredSubnet
    observed: dict[str, Any] | None = None
    is_public: bool = False
    managed: bool = True
    route_table: dict[str, Any] | None = None
    nat_gateway_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.observed["SubnetId"] if self.observed else ""

    @property
    def zone(self) -> str:
        return self.observed["AvailabilityZone"] if self.observed else self.desired.availability_zone or ""

    @property
    def cidr(self) -> str:
        return self.observed["CidrBlock"] if self.observed else self.desired.cidr_block or ""


class SubnetTier:
    # validate (before any AWS call) --------------------------------------------------------------------------
    def validate(self, params: dict[str, Any], region: str | None) -> None:
        vpc_id, vpc_cidr = params.get("vpc_id"), params.get("vpc_cidr_block")
        check_resource_id(vpc_id, "vpc", "vpc_id")
        check_resource_id(params.get("internet_gateway_id"), "igw", "internet_gateway_id")
        if params["state"] == "present" and not vpc_id:
            raise SpecError("vpc_id", "is required when state=present")
        if is_placeholder(vpc_id) and not vpc_cidr:
            raise SpecError("vpc_cidr_block", "is required when vpc_id is a check-mode placeholder")
        if vpc_cidr:
            check_vpc_cidr(vpc_cidr, "vpc_cidr_block")
        if params["availability_zone_usage_limit"] < 1:
            raise SpecError("availability_zone_usage_limit", "must be at least 1")
        entries = params.get("subnets") or []
        for index, entry in enumerate(entries):
            where = f"subnets[{index}]"
            check_resource_id(entry.get("id"), "subnet", f"{where}.id")
            if not entry.get("id") and not (entry.get("availability_zone") and entry.get("cidr_block")):
                raise SpecError(where, "needs either id (an existing subnet) or availability_zone and cidr_block")
            if entry.get("id") and is_placeholder(vpc_id):
                raise SpecError(f"{where}.id", "an existing subnet cannot be in a VPC that does not exist yet")
            if entry.get("availability_zone"):
                check_availability_zone(entry["availability_zone"], region, f"{where}.availability_zone")
            check_tags(entry.get("tags"), f"{where}.tags")
        check_subnet_cidrs(entries, [vpc_cidr] if vpc_cidr else [])

    # reconcile -----------------------------------------------------------------------------------------------
    def reconcile(self, ctx: Context, params: dict[str, Any]) -> tuple[Any, Any]:
        spec = SubnetSpec.from_params(params)
        if spec.state == "absent":
            return _Deletion(ctx, spec).run()
        return _Build(ctx, spec).run()


class _Build:
    """One ``state=present`` run: observe, decide, then create/repair in CAPA's order."""

    def __init__(self, ctx: Context, spec: SubnetSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.ec2 = ctx.client("ec2")
        self._zones: list[str] | None = None
        self.nats: list[dict[str, Any]] = []
        self.addresses: list[dict[str, Any]] = []

    def run(self) -> tuple[Any, Any]:
        vpc = self._vpc()
        existing = [] if vpc.planned else describe(self.ctx, "describe_subnets", "Subnets", Filters=_vpc_filter(vpc.id))
        states = self._join(vpc, existing)
        tables = self._observe_route_tables(vpc, states)
        self._classify(states, tables)
        slots = self._check_shape(vpc, states)
        if vpc.managed and not vpc.planned:
            self.nats = _live_nats(self._describe_nats(vpc.id))
            self.addresses = describe(self.ctx, "describe_addresses", "Addresses", Filters=self.ctx.owner_filters())
        before = _summary(
            self.ctx.cluster, states, self.nats, self.addresses, self._observed_zones(states), observed_only=True
        )

        self._ensure_subnets(vpc, states)
        if vpc.managed:
            nat_by_zone = self._ensure_nat_gateways(vpc, states, slots)
            self._ensure_route_tables(vpc, states, nat_by_zone)
        return before, _summary(self.ctx.cluster, states, self.nats, self.addresses, self._observed_zones(states))

    # observe ---------------------------------------------------------------------------------------------------
    def _vpc(self) -> VpcView:
        spec = self.spec
        if is_placeholder(spec.vpc_id):
            return VpcView(spec.vpc_id or "", [spec.vpc_cidr_block or ""], managed=True)
        vpc = describe_by_ids(self.ctx, "describe_vpcs", "Vpcs", "VpcIds", [spec.vpc_id or ""])[0]
        cidrs = associated_cidrs(vpc) or [vpc["CidrBlock"]]
        if spec.vpc_cidr_block and spec.vpc_cidr_block not in cidrs:
            raise SpecError(
                "vpc_cidr_block", f"'{spec.vpc_cidr_block}' is not a CIDR block of {vpc['VpcId']} ({cidrs})"
            )
        entries = [{"cidr_block": s.cidr_block} for s in spec.subnets]
        check_subnet_cidrs(entries, cidrs)
        return VpcView(vpc["VpcId"], cidrs, is_owned(tags_of(vpc), self.ctx.cluster))

    def _available_zones(self) -> list[str]:
        if self._zones is None:
            found = describe(self.ctx, "describe_availability_zones", "AvailabilityZones", Filters=AZ_FILTERS)
            self._zones = sorted(z["ZoneName"] for z in found)
        return self._zones

    def _desired(self, vpc: VpcView, existing: list[dict[str, Any]]) -> list[DesiredSubnet]:
        if self.spec.subnets:
            return self.spec.subnets
        if not vpc.managed:
            raise SpecError(
                "subnets", f"VPC {vpc.id} is not owned by cluster {self.ctx.cluster}: list its subnets by id"
            )
        in_use = {s["AvailabilityZone"] for s in existing if is_owned(tags_of(s), self.ctx.cluster)}
        zones = choose_zones(
            self._available_zones(), self.spec.zone_limit, self.spec.zone_selection, self.ctx.cluster, in_use
        )
        if not zones:
            raise ReconcileError("no availability zone of the region is available for the default subnet layout")
        return default_subnets(vpc.cidrs[0], zones)

    def _join(self, vpc: VpcView, existing: list[dict[str, Any]]) -> list[SubnetState]:
        """Match each desired subnet to an existing one: by id (bring your own) or by CIDR (as CAPA does)."""
        by_id = {s["SubnetId"]: s for s in existing}
        by_cidr = {s["CidrBlock"]: s for s in existing}
        states = []
        for desired in self._desired(vpc, existing):
            if desired.id:
                found = by_id.get(desired.id)
                if found is None:
                    raise SpecError(f"{desired.field}.id", f"subnet {desired.id} does not exist in VPC {vpc.id}")
                _check_matches(desired, found)
            else:
                found = by_cidr.get(desired.cidr_block or "")
                if found and found["AvailabilityZone"] != desired.availability_zone:
                    raise SpecError(
                        f"{desired.field}.availability_zone",
                        f"{found['SubnetId']} with CIDR {desired.cidr_block} exists in {found['AvailabilityZone']}",
                    )
                if found is None:
                    self._check_creatable(vpc, desired, existing)
            managed = found is None or is_owned(tags_of(found), self.ctx.cluster)
            states.append(SubnetState(desired, found, desired.is_public, managed))
        return states

    def _check_creatable(self, vpc: VpcView, desired: DesiredSubnet, existing: list[dict[str, Any]]) -> None:
        if not vpc.managed:
            raise SpecError(
                desired.field,
                f"VPC {vpc.id} is not owned by cluster {self.ctx.cluster}; subnets are only created in a managed VPC",
            )
        # A subnet's CIDR cannot change: a new block overlapping one in use is that change (AWS would refuse the
        # create halfway through the run), so it is refused here, after the reads and before any change.
        network = ipaddress.ip_network(desired.cidr_block or "")
        for subnet in existing:
            if network.overlaps(ipaddress.ip_network(subnet["CidrBlock"])):
                raise SpecError(
                    f"{desired.field}.cidr_block",
                    f"'{desired.cidr_block}' overlaps {subnet['SubnetId']} ({subnet['CidrBlock']}) in {vpc.id}; "
                    "a subnet's CIDR block cannot change",
                )
        if desired.availability_zone not in self._available_zones():
            raise SpecError(
                f"{desired.field}.availability_zone",
                f"'{desired.availability_zone}' is not an available zone here ({', '.join(self._available_zones())})",
            )

    def _observe_route_tables(self, vpc: VpcView, states: list[SubnetState]) -> list[dict[str, Any]]:
        """Route tables, one describe: ours in a managed VPC; the ones that classify unowned subnets otherwise."""
        if vpc.planned:
            return []
        unowned = [s.id for s in states if not s.managed and tags_of(s.observed or {}).get(ROLE_TAG) != ROLE_PUBLIC]
        if vpc.managed and not unowned:
            filters = _vpc_filter(vpc.id) + self.ctx.owner_filters()
        elif vpc.managed:
            filters = _vpc_filter(vpc.id)  # also the tables of subnets we do not own, for public detection
        elif unowned:
            filters = _vpc_filter(vpc.id) + [{"Name": "association.subnet-id", "Values": unowned}]
        else:
            return []
        return describe(self.ctx, "describe_route_tables", "RouteTables", Filters=filters)

    def _classify(self, states: list[SubnetState], tables: list[dict[str, Any]]) -> None:
        explicit = explicit_route_tables(tables)
        for state in states:
            table = explicit.get(state.id) if state.observed else None
            if state.managed:
                state.route_table = table if table and is_owned(tags_of(table), self.ctx.cluster) else None
                continue
            # CAPA: a subnet is public by its role tag or by its own route table's 0.0.0.0/0 -> internet gateway.
            state.is_public = tags_of(state.observed or {}).get(ROLE_TAG) == ROLE_PUBLIC or has_public_route(table)
        self._unassociated_tables = [
            t
            for t in tables
            if is_owned(tags_of(t), self.ctx.cluster) and not any(a.get("SubnetId") for a in t.get("Associations", []))
        ]

    def _check_shape(self, vpc: VpcView, states: list[SubnetState]) -> list[NatSlot]:
        """CAPA's rules on a managed network, checked before the first mutating call."""
        if not vpc.managed:
            return []
        if not any(s.is_public for s in states):
            raise SpecError("subnets", "a managed VPC needs at least one public subnet")
        managed = [s for s in states if s.managed]
        if any(s.is_public for s in managed) and not self.spec.internet_gateway_id:
            raise SpecError(
                "internet_gateway_id", "is required for the route tables of public subnets in a managed VPC"
            )
        shapes = [DesiredSubnet(s.zone, s.cidr, s.is_public) for s in managed]
        return place_nat_gateways(shapes, self.spec.nat_mode)

    def _describe_nats(self, vpc_id: str) -> list[dict[str, Any]]:
        return describe(
            self.ctx, "describe_nat_gateways", "NatGateways", Filter=_vpc_filter(vpc_id) + self.ctx.owner_filters()
        )

    def _observed_zones(self, states: list[SubnetState]) -> list[str]:
        return sorted({s.zone for s in states if s.zone})

    # subnets ---------------------------------------------------------------------------------------------------
    def _ensure_subnets(self, vpc: VpcView, states: list[SubnetState]) -> None:
        created = []
        for state in states:
            if not state.managed:
                self._tag_unowned_subnet(state)
            elif state.observed is None:
                state.observed = self._create_subnet(vpc, state)
                created.append(state.id)
            else:
                ensure_tags(self.ctx, state.id, _label(state), tags_of(state.observed), self._subnet_tags(state))
        if created and self.ctx.wait and not self.ctx.check_mode:
            _wait(self.ctx, self.ec2, "subnet_available", f"subnets {', '.join(created)}", SubnetIds=created)
        for state in states:
            if state.managed and state.is_public and not state.observed.get("MapPublicIpOnLaunch"):
                self.ctx.ops.call(
                    self.ec2,
                    "modify_subnet_attribute",
                    resource=_label(state),
                    reason="public subnet does not map public IPs on launch",
                    SubnetId=state.id,
                    MapPublicIpOnLaunch={"Value": True},
                )
                state.observed["MapPublicIpOnLaunch"] = True

    def _subnet_tags(self, state: SubnetState) -> dict[str, str]:
        public = state.is_public
        extra = {
            cloud_provider_tag_key(self.ctx.cluster): OWNED,
            ELB_ROLE_TAG if public else INTERNAL_ELB_ROLE_TAG: "1",
            **state.desired.tags,
        }
        name = subnet_name(self.ctx.cluster, public, state.zone)
        return self.ctx.tags(ROLE_PUBLIC if public else ROLE_PRIVATE, name, extra)

    def _create_subnet(self, vpc: VpcView, state: SubnetState) -> dict[str, Any]:
        tags = self._subnet_tags(state)
        label = tags.get("Name") or state.cidr
        subnet = self.ctx.ops.call(
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
        subnet.update(
            AvailabilityZone=state.desired.availability_zone,
            CidrBlock=state.desired.cidr_block,
            Tags=dict_to_tags(tags),
            MapPublicIpOnLaunch=subnet.get("MapPublicIpOnLaunch", False),
        )
        return subnet

    def _tag_unowned_subnet(self, state: SubnetState) -> None:
        """CAPA's TagUnmanagedNetworkResources: the cloud provider's discovery tags, nothing else."""
        wanted = {
            cloud_provider_tag_key(self.ctx.cluster): SHARED,
            ELB_ROLE_TAG if state.is_public else INTERNAL_ELB_ROLE_TAG: "1",
        }
        current = tags_of(state.observed or {})
        todo = missing_tags(current, wanted)
        if current.get(cloud_provider_tag_key(self.ctx.cluster)) == OWNED:
            todo.pop(cloud_provider_tag_key(self.ctx.cluster), None)  # someone else's cluster-owned tag stays
        if todo:
            self.ctx.ops.call(
                self.ec2,
                "create_tags",
                resource=state.id,
                reason=f"cloud-provider tags missing: {', '.join(sorted(todo))}",
                Resources=[state.id],
                Tags=dict_to_tags(todo),
            )
            state.observed.setdefault("Tags", []).extend(dict_to_tags(todo))

    # NAT gateways and Elastic IPs ------------------------------------------------------------------------------
    def _ensure_nat_gateways(self, vpc: VpcView, states: list[SubnetState], slots: list[NatSlot]) -> dict[str, str]:
        by_cidr = {s.cidr: s for s in states if s.managed}
        free = list(self.nats)
        nat_by_zone: dict[str, str] = {}
        waiting: list[str] = []
        for slot in slots:
            subnet = by_cidr[slot.subnet_cidr]
            nat = _pick_nat(free, subnet.id, slot.availability_zone, self._zone_of_subnet(states))
            if nat is None:
                nat = self._create_nat(vpc, subnet)
                self.nats.append(nat)
            else:
                free.remove(nat)
                tags = self.ctx.tags(ROLE_COMMON, nat_gateway_name(self.ctx.cluster))
                ensure_tags(self.ctx, nat["NatGatewayId"], nat_gateway_name(self.ctx.cluster), tags_of(nat), tags)
            if nat.get("State") != "available" and not is_placeholder(nat["NatGatewayId"]):
                waiting.append(nat["NatGatewayId"])
            nat_by_zone[slot.availability_zone] = nat["NatGatewayId"]
        if free:
            ids = ", ".join(n["NatGatewayId"] for n in free)
            self.ctx.warn(f"NAT gateway(s) {ids} are owned by the cluster but no longer needed; they are kept")
        if waiting and self.ctx.wait and not self.ctx.check_mode:
            _wait(
                self.ctx, self.ec2, "nat_gateway_available", f"NAT gateways {', '.join(waiting)}", NatGatewayIds=waiting
            )
            for nat in self.nats:
                if nat["NatGatewayId"] in waiting:
                    nat["State"] = "available"
        return nat_by_zone

    def _zone_of_subnet(self, states: list[SubnetState]) -> dict[str, str]:
        return {s.id: s.zone for s in states if s.observed}

    def _create_nat(self, vpc: VpcView, subnet: SubnetState) -> dict[str, Any]:
        address = self._free_address(subnet.zone)
        name = nat_gateway_name(self.ctx.cluster)
        tags = self.ctx.tags(ROLE_COMMON, name)
        nat = self.ctx.ops.call(
            self.ec2,
            "create_nat_gateway",
            resource=f"{name} ({subnet.zone})",
            reason="missing",
            predicted={"NatGateway": {"NatGatewayId": placeholder("nat", subnet.zone), "State": "pending"}},
            SubnetId=subnet.id,
            AllocationId=address["AllocationId"],
            ClientToken=nat_client_token(),
            TagSpecifications=tag_specifications("natgateway", tags),
        )["NatGateway"]
        nat.update(
            SubnetId=subnet.id,
            VpcId=vpc.id,
            Tags=dict_to_tags(tags),
            NatGatewayAddresses=[{"AllocationId": address["AllocationId"], "PublicIp": address.get("PublicIp")}],
        )
        return nat

    def _free_address(self, zone: str) -> dict[str, Any]:
        """An owned, unassociated ``common`` EIP (CAPA reuses these), else a new one."""
        used = {a.get("AllocationId") for n in self.nats for a in n.get("NatGatewayAddresses", [])}
        for address in self.addresses:
            if (
                tags_of(address).get(ROLE_TAG) == ROLE_COMMON
                and not address.get("AssociationId")
                and address["AllocationId"] not in used
            ):
                return address
        name = eip_name(self.ctx.cluster)
        tags = self.ctx.tags(ROLE_COMMON, name)
        planned = f"{name}-{zone}"
        address = self.ctx.ops.call(
            self.ec2,
            "allocate_address",
            resource=name,
            reason=f"NAT gateway in {zone} needs a public IP",
            predicted={"AllocationId": placeholder("eip", planned), "PublicIp": placeholder("eip-ip", planned)},
            Domain="vpc",
            TagSpecifications=tag_specifications("elastic-ip", tags),
        )
        address = {k: v for k, v in address.items() if k in ("AllocationId", "PublicIp", "Domain")}
        address["Tags"] = dict_to_tags(tags)
        self.addresses.append(address)
        return address

    # route tables ----------------------------------------------------------------------------------------------
    def _ensure_route_tables(self, vpc: VpcView, states: list[SubnetState], nat_by_zone: dict[str, str]) -> None:
        for state in states:
            if not state.managed:
                continue
            name = route_table_name(self.ctx.cluster, state.is_public, state.zone)
            tags = self.ctx.tags(ROLE_COMMON, name, {cloud_provider_tag_key(self.ctx.cluster): OWNED})
            table = state.route_table or self._adopt_unassociated(name)
            if table is None:
                table = self._create_route_table(vpc, name, tags)
            else:
                ensure_tags(self.ctx, table["RouteTableId"], name, tags_of(table), tags)
            target = route_target(
                state.is_public, state.zone, self.spec.nat_mode, self.spec.internet_gateway_id, nat_by_zone
            )
            self._ensure_default_route(table, name, target)
            if not any(a.get("SubnetId") == state.id for a in table.get("Associations", [])):
                self.ctx.ops.call(
                    self.ec2,
                    "associate_route_table",
                    resource=name,
                    reason=f"not associated with {state.id}",
                    predicted={"AssociationId": placeholder("rtbassoc", name)},
                    RouteTableId=table["RouteTableId"],
                    SubnetId=state.id,
                )
                table.setdefault("Associations", []).append({"SubnetId": state.id, "Main": False})
            state.route_table = table
            if not state.is_public and target:
                state.nat_gateway_id = target[1]

    def _adopt_unassociated(self, name: str) -> dict[str, Any] | None:
        # A table an interrupted run created but did not associate: reuse it rather than leave an orphan.
        for table in self._unassociated_tables:
            if tags_of(table).get("Name") == name:
                self._unassociated_tables.remove(table)
                return table
        return None

    def _create_route_table(self, vpc: VpcView, name: str, tags: dict[str, str]) -> dict[str, Any]:
        table = self.ctx.ops.call(
            self.ec2,
            "create_route_table",
            resource=name,
            reason="missing",
            predicted={"RouteTable": {"RouteTableId": placeholder("rtb", name)}},
            VpcId=vpc.id,
            TagSpecifications=tag_specifications("route-table", tags),
        )["RouteTable"]
        table.update(Tags=dict_to_tags(tags), Associations=[], Routes=[r for r in table.get("Routes", []) if r])
        return table

    def _ensure_default_route(self, table: dict[str, Any], name: str, target: tuple[str, str] | None) -> None:
        current = current_default_route(table)
        if current == target:
            return
        table_id = table["RouteTableId"]
        if target is None:
            self.ctx.ops.call(
                self.ec2,
                "delete_route",
                resource=name,
                reason="no default route wanted (nat_gateways=none)",
                RouteTableId=table_id,
                DestinationCidrBlock=DEFAULT_ROUTE,
            )
            table["Routes"] = [r for r in table.get("Routes", []) if r.get("DestinationCidrBlock") != DEFAULT_ROUTE]
            return
        method, reason = (
            ("create_route", "missing") if current is None else ("replace_route", f"points at {current[1]}")
        )
        self.ctx.ops.call(
            self.ec2,
            method,
            resource=name,
            reason=f"{DEFAULT_ROUTE} -> {target[1]} {reason}",
            RouteTableId=table_id,
            DestinationCidrBlock=DEFAULT_ROUTE,
            **{target[0]: target[1]},
        )
        routes = [r for r in table.get("Routes", []) if r.get("DestinationCidrBlock") != DEFAULT_ROUTE]
        table["Routes"] = routes + [{"DestinationCidrBlock": DEFAULT_ROUTE, target[0]: target[1], "State": "active"}]


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
        subnets = self._subnets()
        scope = _vpc_filter(self.vpc_id) if self.vpc_id else []
        tables = describe(self.ctx, "describe_route_tables", "RouteTables", Filters=scope + self.ctx.owner_filters())
        nats = describe(self.ctx, "describe_nat_gateways", "NatGateways", Filter=scope + self.ctx.owner_filters())
        addresses = describe(self.ctx, "describe_addresses", "Addresses", Filters=self.ctx.owner_filters())
        owned = [s for s in subnets if is_owned(tags_of(s), self.ctx.cluster)]
        before = {
            "subnets": [_subnet_summary(self.ctx.cluster, s) for s in subnets],
            "nat_gateways": [_nat_summary(n, addresses, {}) for n in _live_nats(nats)],
        }
        self._delete_route_tables(tables)
        self._delete_nat_gateways(nats)
        self._release_addresses(addresses)
        self._delete_subnets(owned)
        self._untag_shared([s for s in subnets if not is_owned(tags_of(s), self.ctx.cluster)])
        return before, _empty()

    def _subnets(self) -> list[dict[str, Any]]:
        if self.vpc_id:
            return describe(self.ctx, "describe_subnets", "Subnets", Filters=_vpc_filter(self.vpc_id))
        # Without a VPC: subnets that carry either cluster key (values in one filter are OR-ed).
        keys = [cluster_tag_key(self.ctx.cluster), cloud_provider_tag_key(self.ctx.cluster)]
        return describe(self.ctx, "describe_subnets", "Subnets", Filters=[{"Name": "tag-key", "Values": keys}])

    def _delete_route_tables(self, tables: list[dict[str, Any]]) -> None:
        for table in tables:
            name = tags_of(table).get("Name") or table["RouteTableId"]
            if any(a.get("Main") for a in table.get("Associations", [])):
                self.ctx.warn(f"route table {name} is the VPC's main route table; it goes with the VPC")
                continue
            for association in table.get("Associations", []):
                self.ctx.ops.call(
                    self.ec2,
                    "disassociate_route_table",
                    resource=name,
                    reason=f"cluster deleted (associated with {association.get('SubnetId')})",
                    AssociationId=association["RouteTableAssociationId"],
                )
            self.ctx.ops.call(
                self.ec2,
                "delete_route_table",
                resource=name,
                reason="cluster deleted",
                RouteTableId=table["RouteTableId"],
            )

    def _delete_nat_gateways(self, nats: list[dict[str, Any]]) -> None:
        pending = [n["NatGatewayId"] for n in nats if n.get("State") == "deleting"]
        for nat in _live_nats(nats):
            self.ctx.ops.call(
                self.ec2,
                "delete_nat_gateway",
                resource=f"{nat_gateway_name(self.ctx.cluster)} ({nat['NatGatewayId']})",
                reason="cluster deleted",
                NatGatewayId=nat["NatGatewayId"],
            )
            pending.append(nat["NatGatewayId"])
        # Deleted in parallel, then one wait: their EIPs and ENIs are only released once they are gone.
        if pending and self.ctx.wait and not self.ctx.check_mode:
            _wait(
                self.ctx, self.ec2, "nat_gateway_deleted", f"NAT gateways {', '.join(pending)}", NatGatewayIds=pending
            )

    def _release_addresses(self, addresses: list[dict[str, Any]]) -> None:
        # InvalidIPAddress.InUse / AuthFailure while AWS releases the NAT's ENI are retried by the client.
        for address in addresses:
            self.ctx.ops.call(
                self.ec2,
                "release_address",
                resource=tags_of(address).get("Name") or address.get("PublicIp", address["AllocationId"]),
                reason="cluster deleted",
                AllocationId=address["AllocationId"],
            )

    def _delete_subnets(self, subnets: list[dict[str, Any]]) -> None:
        for subnet in subnets:
            subnet_id = subnet["SubnetId"]
            label = tags_of(subnet).get("Name") or subnet_id

            def attempt(subnet_id: str = subnet_id, label: str = label) -> Any:
                return self.ctx.ops.call(
                    self.ec2, "delete_subnet", resource=label, reason="cluster deleted", SubnetId=subnet_id
                )

            if self.ctx.check_mode:
                attempt()
                continue
            delete_when_free(
                self.ctx,
                attempt,
                f"subnet {subnet_id}",
                blockers=finder(self.ctx, subnet_id=subnet_id),
            )

    def _untag_shared(self, subnets: list[dict[str, Any]]) -> None:
        key = cloud_provider_tag_key(self.ctx.cluster)
        for subnet in subnets:
            if tags_of(subnet).get(key) == SHARED:
                self.ctx.ops.call(
                    self.ec2,
                    "delete_tags",
                    resource=subnet["SubnetId"],
                    reason="cluster deleted; the subnet is not the cluster's and stays",
                    Resources=[subnet["SubnetId"]],
                    Tags=[{"Key": key, "Value": SHARED}],
                )


# helpers -----------------------------------------------------------------------------------------------------------
def _vpc_filter(vpc_id: str | None) -> list[dict[str, Any]]:
    return [{"Name": "vpc-id", "Values": [vpc_id]}]


def _live_nats(nats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in nats if n.get("State") not in GONE_NAT_STATES]


def _pick_nat(
    nats: list[dict[str, Any]], subnet_id: str, zone: str, zone_of_subnet: dict[str, str]
) -> dict[str, Any] | None:
    """An existing NAT for a slot: the one in the slot's subnet, else one elsewhere in the same AZ."""
    for nat in nats:
        if nat.get("SubnetId") == subnet_id:
            return nat
    for nat in nats:
        if zone_of_subnet.get(nat.get("SubnetId", "")) == zone:
            return nat
    return None


def _check_matches(desired: DesiredSubnet, found: dict[str, Any]) -> None:
    if desired.availability_zone and desired.availability_zone != found["AvailabilityZone"]:
        raise SpecError(f"{desired.field}.availability_zone", f"{found['SubnetId']} is in {found['AvailabilityZone']}")
    if desired.cidr_block and desired.cidr_block != found["CidrBlock"]:
        raise SpecError(f"{desired.field}.cidr_block", f"{found['SubnetId']} has CIDR {found['CidrBlock']}")


def _wait(ctx: Context, client: Any, waiter: str, what: str, delay: int = 2, **params: Any) -> None:
    """A botocore waiter bounded by the run's shared wait budget."""
    attempts = max(1, int(ctx.remaining() // delay))
    try:
        client.waiter(waiter).wait(WaiterConfig={"Delay": delay, "MaxAttempts": attempts}, **params)
    except botocore.exceptions.WaiterError as e:
        raise ReconcileError(f"{what}: {waiter} not reached within {ctx.wait_timeout}s ({e.last_response})") from e


def _label(state: SubnetState) -> str:
    return tags_of(state.observed or {}).get("Name") or state.id or state.cidr


def _subnet_summary(cluster: str, subnet: dict[str, Any], state: SubnetState | None = None) -> dict[str, Any]:
    tags = tags_of(subnet)
    public = state.is_public if state else tags.get(ROLE_TAG) == ROLE_PUBLIC
    table = state.route_table if state else None
    return {
        "id": subnet["SubnetId"],
        "name": tags.get("Name"),
        "availability_zone": subnet.get("AvailabilityZone"),
        "cidr_block": subnet.get("CidrBlock"),
        "is_public": public,
        "managed": state.managed if state else is_owned(tags, cluster),
        "route_table_id": table["RouteTableId"] if table else None,
        "nat_gateway_id": None if public or not state else state.nat_gateway_id,
        "map_public_ip_on_launch": bool(subnet.get("MapPublicIpOnLaunch")),
        "tags": tags,
    }


def _nat_summary(
    nat: dict[str, Any], addresses: list[dict[str, Any]], zone_of_subnet: dict[str, str]
) -> dict[str, Any]:
    first = (nat.get("NatGatewayAddresses") or [{}])[0]
    ip = first.get("PublicIp") or next(
        (a.get("PublicIp") for a in addresses if a.get("AllocationId") == first.get("AllocationId")), None
    )
    return {
        "id": nat["NatGatewayId"],
        "availability_zone": zone_of_subnet.get(nat.get("SubnetId", "")),
        "subnet_id": nat.get("SubnetId"),
        "allocation_id": first.get("AllocationId"),
        "public_ip": ip,
        "state": nat.get("State"),
    }


def _summary(
    cluster: str,
    states: list[SubnetState],
    nats: list[dict[str, Any]],
    addresses: list[dict[str, Any]],
    zones: list[str],
    observed_only: bool = False,
) -> dict[str, Any]:
    subnets = [_subnet_summary(cluster, s.observed, None if observed_only else s) for s in states if s.observed]
    zone_of_subnet = {s.id: s.zone for s in states if s.observed}
    nat_list = [_nat_summary(n, addresses, zone_of_subnet) for n in nats]
    return {
        "subnets": subnets,
        "nat_gateways": nat_list,
        "nat_gateway_ips": [n["public_ip"] for n in nat_list if n["public_ip"]],
        "availability_zones": zones,
    }


def _empty() -> dict[str, Any]:
    return {"subnets": [], "nat_gateways": [], "nat_gateway_ips": [], "availability_zones": []}
