# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster VPC and its internet gateway (CAPA pkg/cloud/services/network/{vpc,gateways}.go).

The tier skeleton: :class:`VpcSpec` (the options, once) -> :func:`observe` (one describe per resource type, into
:class:`ObservedVpc` / :class:`Gateway` values) -> :func:`plan` (pure: what to create, enable, associate, attach)
-> :class:`VpcTier` applies it through ``ctx.ops`` -> :func:`summarise` (the one view of a VPC).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..aws.ec2 import delete_when_free, describe, require_by_ids, tags_of, wait_for_states
from ..kernel.compare import Field, differences, set_changes
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.operations import placeholder
from ..kernel.options import Option, argument_spec
from ..kernel.tags import ROLE_COMMON, igw_name, is_owned, repair_tags, tag_specifications, vpc_name
from ..kernel.tier import Outcome
from ..kernel.validation import check_resource_id, check_vpc_cidr
from .blockers import finder

DEFAULT_CIDR = "10.0.0.0/16"
PRESENT, ABSENT = "present", "absent"

# capa_vpc's options, declared once: the module's argument spec, the plan's comparisons (a primary block AWS cannot
# change; secondary blocks as a set, added only) and the cluster spec's network.vpc fields all come from here.
ID = Option("id", "An existing VPC to use (bring your own): used, never changed or deleted.", immutable=True)
CIDR_BLOCK = Option("cidr_block", "Primary CIDR block of a managed VPC.", default=DEFAULT_CIDR, immutable=True)
SECONDARY_CIDR_BLOCKS = Option(
    "secondary_cidr_blocks",
    "Secondary CIDR blocks (add-only).",
    type="list",
    elements="str",
    default=[],
    comparison="set",
)
VPC_OPTIONS: tuple[Option, ...] = (ID, CIDR_BLOCK, SECONDARY_CIDR_BLOCKS)
# The two DNS attributes CAPA wants on, as DescribeVpcAttribute names them.
DNS_SUPPORT, DNS_HOSTNAMES = "enableDnsSupport", "enableDnsHostnames"
DNS_ATTRIBUTES = (DNS_SUPPORT, DNS_HOSTNAMES)


# spec ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VpcSpec:
    """The module's options as plain values."""

    state: str
    vpc_id: str | None
    cidr_block: str
    secondary_cidr_blocks: tuple[str, ...] = ()

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> VpcSpec:
        return cls(
            state=params["state"],
            vpc_id=params["id"],
            cidr_block=params["cidr_block"],
            secondary_cidr_blocks=tuple(params["secondary_cidr_blocks"]),
        )


# observed state --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dns:
    """The VPC's DNS attributes (AWS answers one per DescribeVpcAttribute call)."""

    support: bool
    hostnames: bool

    def off(self) -> tuple[str, ...]:
        """The attributes still off, in the order CAPA turns them on."""
        return tuple(name for name, on in ((DNS_SUPPORT, self.support), (DNS_HOSTNAMES, self.hostnames)) if not on)


# A new VPC has DNS support on and DNS hostnames off.
NEW_VPC_DNS = Dns(support=True, hostnames=False)


@dataclass(frozen=True)
class ObservedVpc:
    id: str
    cidr_block: str | None
    cidrs: tuple[str, ...]  # associated (or associating) blocks, the primary one included
    tags: dict[str, str]
    owned: bool
    dns: Dns | None = None  # read for an owned VPC kept present only

    @classmethod
    def from_aws(cls, vpc: Mapping[str, Any], cluster: str, dns: Dns | None = None) -> ObservedVpc:
        tags = tags_of(vpc)
        return cls(vpc["VpcId"], vpc.get("CidrBlock"), tuple(associated_cidrs(vpc)), tags, is_owned(tags, cluster), dns)

    @property
    def secondary_cidrs(self) -> list[str]:
        cidrs = self.cidrs or ((self.cidr_block,) if self.cidr_block else ())
        return [c for c in cidrs if c != self.cidr_block]


@dataclass(frozen=True)
class Gateway:
    id: str
    tags: dict[str, str]
    attached_to: tuple[str, ...]  # VPC ids

    @classmethod
    def from_aws(cls, gateway: Mapping[str, Any]) -> Gateway:
        vpcs = tuple(a["VpcId"] for a in gateway.get("Attachments", []) if a.get("VpcId"))
        return cls(gateway["InternetGatewayId"], tags_of(gateway), vpcs)


@dataclass(frozen=True)
class Observed:
    """What AWS has: the VPC, its internet gateway, and the cluster's own gateways (when they were read)."""

    vpc: ObservedVpc | None
    gateway: Gateway | None = None
    owned_gateways: tuple[Gateway, ...] = field(default_factory=tuple)


def associated_cidrs(vpc: Mapping[str, Any]) -> list[str]:
    return [
        a["CidrBlock"]
        for a in vpc.get("CidrBlockAssociationSet", [])
        if a.get("CidrBlockState", {}).get("State") in ("associated", "associating")
    ]


def observe(ctx: Context, spec: VpcSpec) -> Observed:
    """The VPC (by id, or the one the cluster owns), then its gateway, with one describe per question.

    For our VPC, our own gateway is looked for first (attached, or left detached by an interrupted run); only when
    there is none, one someone else attached (CAPA adopts it). For a VPC we do not own, what is attached is
    reported. The cluster's gateways are also what a deletion removes.
    """
    vpc = _find(ctx, spec.vpc_id)
    if vpc is None:
        return Observed(None, None, _owned_gateways(ctx) if spec.state == ABSENT else ())
    if vpc.owned and spec.state == PRESENT:
        vpc = replace(vpc, dns=_dns(ctx, vpc.id))
    if vpc.owned:
        owned = _owned_gateways(ctx)
        return Observed(vpc, pick_gateway(vpc.id, owned) or _attached_gateway(ctx, vpc.id), owned)
    gateway = _attached_gateway(ctx, vpc.id)
    return Observed(vpc, gateway, _owned_gateways(ctx) if spec.state == ABSENT else ())


def _find(ctx: Context, vpc_id: str | None) -> ObservedVpc | None:
    if vpc_id:
        return ObservedVpc.from_aws(require_by_ids(ctx, "describe_vpcs", "Vpcs", "VpcIds", [vpc_id])[0], ctx.cluster)
    owned = describe(ctx, "describe_vpcs", "Vpcs", Filters=ctx.owner_filters())
    if len(owned) > 1:
        ids = ", ".join(sorted(v["VpcId"] for v in owned))
        raise ReconcileError(f"more than one VPC is owned by cluster {ctx.cluster}: {ids}; delete the extra ones")
    return ObservedVpc.from_aws(owned[0], ctx.cluster) if owned else None


def _dns(ctx: Context, vpc_id: str) -> Dns:
    ec2 = ctx.client("ec2")
    value = {
        name: ec2.describe_vpc_attribute(VpcId=vpc_id, Attribute=name)[_capitalised(name)]["Value"]
        for name in DNS_ATTRIBUTES
    }
    return Dns(support=value[DNS_SUPPORT], hostnames=value[DNS_HOSTNAMES])


def _owned_gateways(ctx: Context) -> tuple[Gateway, ...]:
    found = describe(ctx, "describe_internet_gateways", "InternetGateways", Filters=ctx.owner_filters())
    return tuple(Gateway.from_aws(g) for g in found)


def _attached_gateway(ctx: Context, vpc_id: str) -> Gateway | None:
    attached = describe(
        ctx,
        "describe_internet_gateways",
        "InternetGateways",
        Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}],
    )
    return Gateway.from_aws(attached[0]) if attached else None


def pick_gateway(vpc_id: str, owned: Sequence[Gateway]) -> Gateway | None:
    """Of the cluster's gateways: the one attached to the VPC, else one attached nowhere."""
    here = [g for g in owned if vpc_id in g.attached_to]
    free = [g for g in owned if not g.attached_to]
    return next(iter(here or free), None)


# plan (pure) -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VpcPlan:
    """What a ``state=present`` run does to an owned (or missing) VPC."""

    create_vpc: bool
    enable_dns: tuple[str, ...]
    associate_cidrs: tuple[str, ...]
    unwanted_cidrs: tuple[str, ...]  # in AWS, not in the spec: kept (add-only), warned about
    create_gateway: bool
    attach_gateway: bool


def plan(spec: VpcSpec, observed: Observed) -> VpcPlan:
    vpc = observed.vpc
    present = list(vpc.cidrs) if vpc else []
    primary = vpc.cidr_block if vpc else spec.cidr_block
    dns = (vpc.dns if vpc else None) or NEW_VPC_DNS
    gateway = observed.gateway if vpc else None
    # Compared as the option declares it (a set); add-only: a block missing from the spec is kept and warned about.
    unwanted, associate = set_changes([c for c in present if c != primary], spec.secondary_cidr_blocks)
    return VpcPlan(
        create_vpc=vpc is None,
        enable_dns=dns.off(),
        associate_cidrs=tuple(associate),
        unwanted_cidrs=tuple(unwanted),
        create_gateway=gateway is None,
        attach_gateway=gateway is None or vpc is None or vpc.id not in gateway.attached_to,
    )


def refuse_cidr_change(spec: VpcSpec, vpc: ObservedVpc) -> None:
    # AWS cannot change a VPC's primary block (the option is immutable); refused after the read, before any change.
    changed = differences([Field.of(CIDR_BLOCK)], {"cidr_block": spec.cidr_block}, {"cidr_block": vpc.cidr_block})
    if changed.immutable:
        raise SpecError(
            "cidr_block",
            f"'{spec.cidr_block}': {vpc.id} was created with {vpc.cidr_block} and the primary "
            "CIDR block of a VPC cannot change (add secondary_cidr_blocks instead)",
        )


# the tier --------------------------------------------------------------------------------------------------------
class VpcTier:
    def parse(self, params: Mapping[str, Any]) -> VpcSpec:
        return VpcSpec.from_params(params)

    def validate(self, spec: VpcSpec, region: str | None) -> None:
        check_resource_id(spec.vpc_id, "vpc", "id")
        primary = check_vpc_cidr(spec.cidr_block, "cidr_block")
        for index, cidr in enumerate(spec.secondary_cidr_blocks):
            block = check_vpc_cidr(cidr, f"secondary_cidr_blocks[{index}]")
            if block.overlaps(primary):
                raise SpecError(f"secondary_cidr_blocks[{index}]", f"'{cidr}' overlaps cidr_block '{primary}'")

    def reconcile(self, ctx: Context, spec: VpcSpec) -> Outcome:
        observed = observe(ctx, spec)
        before = summarise(observed.vpc, observed.gateway) if observed.vpc else None
        if spec.state == ABSENT:
            _delete(ctx, observed)
            return Outcome(before, None)
        if observed.vpc is not None and not observed.vpc.owned:
            return Outcome(before, before)  # bring your own: used as it is, never changed
        if observed.vpc is not None:
            refuse_cidr_change(spec, observed.vpc)
        steps = plan(spec, observed)
        vpc = _apply_vpc(ctx, spec, observed.vpc, steps)
        gateway = _apply_gateway(ctx, vpc, observed.gateway if observed.vpc else None, steps)
        return Outcome(before, summarise(vpc, gateway))


# apply -----------------------------------------------------------------------------------------------------------
def _apply_vpc(ctx: Context, spec: VpcSpec, vpc: ObservedVpc | None, steps: VpcPlan) -> ObservedVpc:
    ec2 = ctx.client("ec2")
    name = vpc_name(ctx.cluster)
    tags = ctx.tags(ROLE_COMMON, name)
    if vpc is None:
        created = ctx.ops.call(
            ec2,
            "create_vpc",
            resource=name,
            reason="missing",
            predicted={"Vpc": {"VpcId": placeholder("vpc", name), "CidrBlock": spec.cidr_block}},
            CidrBlock=spec.cidr_block,
            TagSpecifications=tag_specifications("vpc", tags),
        )["Vpc"]
        vpc = replace(ObservedVpc.from_aws(created, ctx.cluster), tags=dict(tags), owned=True, dns=NEW_VPC_DNS)
        if ctx.wait and not ctx.check_mode:
            wait_for_states(
                ctx, "describe_vpcs", "Vpcs", "vpc-id", [vpc.id], ["available"], f"VPC {name} to be available"
            )
    else:
        vpc = replace(vpc, tags=repair_tags(ctx, "ec2", vpc.id, name, vpc.tags, tags))
    for attribute in steps.enable_dns:
        turn_on: dict[str, Any] = {_capitalised(attribute): {"Value": True}}
        ctx.ops.call(ec2, "modify_vpc_attribute", resource=name, reason=f"{attribute} is off", VpcId=vpc.id, **turn_on)
    for cidr in steps.associate_cidrs:
        ctx.ops.call(
            ec2,
            "associate_vpc_cidr_block",
            resource=name,
            reason=f"secondary CIDR {cidr} missing",
            VpcId=vpc.id,
            CidrBlock=cidr,
        )
    if steps.unwanted_cidrs:
        ctx.warn(
            f"secondary CIDR block(s) {', '.join(steps.unwanted_cidrs)} are not in the spec; they are kept (add-only)"
        )
    return replace(vpc, dns=Dns(True, True), cidrs=vpc.cidrs + steps.associate_cidrs)


def _apply_gateway(ctx: Context, vpc: ObservedVpc, gateway: Gateway | None, steps: VpcPlan) -> Gateway:
    ec2 = ctx.client("ec2")
    name = igw_name(ctx.cluster)
    tags = ctx.tags(ROLE_COMMON, name)
    if gateway is None:
        created = ctx.ops.call(
            ec2,
            "create_internet_gateway",
            resource=name,
            reason="missing",
            predicted={"InternetGateway": {"InternetGatewayId": placeholder("igw", name)}},
            TagSpecifications=tag_specifications("internet-gateway", tags),
        )["InternetGateway"]
        gateway = Gateway(created["InternetGatewayId"], dict(tags), ())
    elif is_owned(gateway.tags, ctx.cluster):
        gateway = replace(gateway, tags=repair_tags(ctx, "ec2", gateway.id, name, gateway.tags, tags))
    if steps.attach_gateway:
        ctx.ops.call(
            ec2,
            "attach_internet_gateway",
            resource=name,
            reason=f"not attached to {vpc.id}",
            InternetGatewayId=gateway.id,
            VpcId=vpc.id,
        )
        gateway = replace(gateway, attached_to=(vpc.id,))
    return gateway


def _delete(ctx: Context, observed: Observed) -> None:
    ec2 = ctx.client("ec2")
    for gateway in observed.owned_gateways:
        for vpc_id in gateway.attached_to:
            ctx.ops.call(
                ec2,
                "detach_internet_gateway",
                resource=igw_name(ctx.cluster),
                reason="cluster deleted",
                InternetGatewayId=gateway.id,
                VpcId=vpc_id,
            )
        ctx.ops.call(
            ec2,
            "delete_internet_gateway",
            resource=igw_name(ctx.cluster),
            reason="cluster deleted",
            InternetGatewayId=gateway.id,
        )
    vpc = observed.vpc
    if vpc is None or not vpc.owned:
        return

    def attempt() -> Any:
        return ctx.ops.call(ec2, "delete_vpc", resource=vpc_name(ctx.cluster), reason="cluster deleted", VpcId=vpc.id)

    if ctx.check_mode:
        attempt()
        return
    delete_when_free(ctx, attempt, f"VPC {vpc.id}", blockers=finder(ctx, vpc_id=vpc.id))


def _capitalised(attribute: str) -> str:
    # DescribeVpcAttribute answers and ModifyVpcAttribute takes ``EnableDnsSupport`` for ``enableDnsSupport``.
    return attribute[0].upper() + attribute[1:]


# view ------------------------------------------------------------------------------------------------------------
def summarise(vpc: ObservedVpc, gateway: Gateway | None) -> dict[str, Any]:
    return {
        "id": vpc.id,
        "name": vpc.tags.get("Name"),
        "cidr_block": vpc.cidr_block,
        "secondary_cidr_blocks": vpc.secondary_cidrs,
        "managed": vpc.owned,
        "enable_dns_support": vpc.dns.support if vpc.dns else None,
        "enable_dns_hostnames": vpc.dns.hostnames if vpc.dns else None,
        "internet_gateway_id": gateway.id if gateway else None,
        "tags": vpc.tags,
    }


def module_argument_spec() -> dict[str, Any]:
    """capa_vpc's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two)."""
    return argument_spec(VPC_OPTIONS)
