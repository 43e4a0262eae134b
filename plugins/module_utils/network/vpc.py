# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster VPC and its internet gateway (CAPA pkg/cloud/services/network/{vpc,gateways}.go)."""

from __future__ import annotations

from typing import Any

from ..aws.ec2 import delete_when_free, describe, describe_by_ids, ensure_tags, tags_of
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.operations import placeholder
from ..kernel.tags import ROLE_COMMON, igw_name, is_owned, tag_specifications, vpc_name
from ..kernel.validation import check_resource_id, check_vpc_cidr
from .blockers import finder

DEFAULT_CIDR = "10.0.0.0/16"
# A new VPC has DNS support on and DNS hostnames off; CAPA wants both on.
NEW_VPC_DNS = {"enableDnsSupport": True, "enableDnsHostnames": False}
DNS_ATTRIBUTES = ("enableDnsSupport", "enableDnsHostnames")


class VpcTier:
    def validate(self, params: dict[str, Any], region: str | None) -> None:
        check_resource_id(params.get("id"), "vpc", "id")
        primary = check_vpc_cidr(params["cidr_block"], "cidr_block")
        for index, cidr in enumerate(params["secondary_cidr_blocks"]):
            block = check_vpc_cidr(cidr, f"secondary_cidr_blocks[{index}]")
            if block.overlaps(primary):
                raise SpecError(f"secondary_cidr_blocks[{index}]", f"'{cidr}' overlaps cidr_block '{primary}'")

    def reconcile(self, ctx: Context, params: dict[str, Any]) -> tuple[Any, Any]:
        vpc = self._find(ctx, params.get("id"))
        if vpc is not None and is_owned(tags_of(vpc), ctx.cluster) and params["state"] == "present":
            self._dns_attributes(ctx, vpc)
        before = summarise(ctx, vpc, self._igw_of(ctx, vpc)) if vpc else None
        if params["state"] == "absent":
            self._delete(ctx, vpc)
            return before, None
        if vpc is not None and not is_owned(tags_of(vpc), ctx.cluster):
            return before, before  # bring your own: used as it is, never changed
        if vpc is not None and vpc.get("CidrBlock") != params["cidr_block"]:
            # AWS cannot change a VPC's primary block; refused after the read, before any change.
            raise SpecError(
                "cidr_block",
                f"'{params['cidr_block']}': {vpc['VpcId']} was created with {vpc.get('CidrBlock')} and the primary "
                "CIDR block of a VPC cannot change (add secondary_cidr_blocks instead)",
            )
        vpc = self._ensure_vpc(ctx, vpc, params)
        igw = self._ensure_internet_gateway(ctx, vpc)
        return before, summarise(ctx, vpc, igw)

    # observe -----------------------------------------------------------------------------------------------
    def _find(self, ctx: Context, vpc_id: str | None) -> dict[str, Any] | None:
        if vpc_id:
            return describe_by_ids(ctx, "describe_vpcs", "Vpcs", "VpcIds", [vpc_id])[0]
        owned = describe(ctx, "describe_vpcs", "Vpcs", Filters=ctx.owner_filters())
        if len(owned) > 1:
            ids = ", ".join(sorted(v["VpcId"] for v in owned))
            raise ReconcileError(f"more than one VPC is owned by cluster {ctx.cluster}: {ids}; delete the extra ones")
        return owned[0] if owned else None

    def _igw_of(self, ctx: Context, vpc: dict[str, Any]) -> dict[str, Any] | None:
        """The VPC's gateway with one describe on the steady path.

        For our VPC, look for our own gateway first (attached, or left detached by an interrupted run); only
        when there is none, look for one someone else attached (CAPA adopts it). For a VPC we do not own,
        just report what is attached.
        """
        if "_igw" in vpc:
            return vpc["_igw"]
        found = None
        if is_owned(tags_of(vpc), ctx.cluster):
            owned = self._owned_igws(ctx)
            here = [g for g in owned if any(a.get("VpcId") == vpc["VpcId"] for a in g.get("Attachments", []))]
            free = [g for g in owned if not g.get("Attachments")]
            found = (here or free or [None])[0]
        if found is None:
            attached = describe(
                ctx,
                "describe_internet_gateways",
                "InternetGateways",
                Filters=[{"Name": "attachment.vpc-id", "Values": [vpc["VpcId"]]}],
            )
            found = attached[0] if attached else None
        vpc["_igw"] = found
        return found

    def _owned_igws(self, ctx: Context) -> list[dict[str, Any]]:
        if not hasattr(self, "_owned_igw_list"):
            self._owned_igw_list = describe(
                ctx, "describe_internet_gateways", "InternetGateways", Filters=ctx.owner_filters()
            )
        return self._owned_igw_list

    def _dns_attributes(self, ctx: Context, vpc: dict[str, Any]) -> dict[str, bool]:
        # AWS answers one attribute per DescribeVpcAttribute call.
        if "_dns" not in vpc:
            ec2 = ctx.client("ec2")
            vpc["_dns"] = {
                name: ec2.describe_vpc_attribute(VpcId=vpc["VpcId"], Attribute=name)[name[0].upper() + name[1:]][
                    "Value"
                ]
                for name in DNS_ATTRIBUTES
            }
        return vpc["_dns"]

    # converge ----------------------------------------------------------------------------------------------
    def _ensure_vpc(self, ctx: Context, vpc: dict[str, Any] | None, params: dict[str, Any]) -> dict[str, Any]:
        ec2 = ctx.client("ec2")
        name = vpc_name(ctx.cluster)
        tags = ctx.tags(ROLE_COMMON, name)
        if vpc is None:
            vpc = ctx.ops.call(
                ec2,
                "create_vpc",
                resource=name,
                reason="missing",
                predicted={"Vpc": {"VpcId": placeholder("vpc", name), "CidrBlock": params["cidr_block"]}},
                CidrBlock=params["cidr_block"],
                TagSpecifications=tag_specifications("vpc", tags),
            )["Vpc"]
            vpc.update(Tags=[{"Key": k, "Value": v} for k, v in tags.items()], _dns=dict(NEW_VPC_DNS), _igw=None)
            if ctx.wait and not ctx.check_mode:
                ec2.waiter("vpc_available").wait(VpcIds=[vpc["VpcId"]], WaiterConfig={"Delay": 2, "MaxAttempts": 60})
        else:
            ensure_tags(ctx, vpc["VpcId"], name, tags_of(vpc), tags)
        self._ensure_dns(ctx, vpc, name)
        self._ensure_secondary_cidrs(ctx, vpc, params["secondary_cidr_blocks"], name)
        return vpc

    def _ensure_dns(self, ctx: Context, vpc: dict[str, Any], name: str) -> None:
        current = self._dns_attributes(ctx, vpc)
        for attribute in DNS_ATTRIBUTES:
            if not current[attribute]:
                ctx.ops.call(
                    ctx.client("ec2"),
                    "modify_vpc_attribute",
                    resource=name,
                    reason=f"{attribute} is off",
                    VpcId=vpc["VpcId"],
                    **{attribute[0].upper() + attribute[1:]: {"Value": True}},
                )
                current[attribute] = True

    def _ensure_secondary_cidrs(self, ctx: Context, vpc: dict[str, Any], wanted: list[str], name: str) -> None:
        present = associated_cidrs(vpc)
        for cidr in wanted:
            if cidr in present:
                continue
            ctx.ops.call(
                ctx.client("ec2"),
                "associate_vpc_cidr_block",
                resource=name,
                reason=f"secondary CIDR {cidr} missing",
                VpcId=vpc["VpcId"],
                CidrBlock=cidr,
            )
            vpc.setdefault("CidrBlockAssociationSet", []).append(
                {"CidrBlock": cidr, "CidrBlockState": {"State": "associated"}}
            )
        extra = [c for c in present if c not in wanted and c != vpc.get("CidrBlock")]
        if extra:
            ctx.warn(f"secondary CIDR block(s) {', '.join(extra)} are not in the spec; they are kept (add-only)")

    def _ensure_internet_gateway(self, ctx: Context, vpc: dict[str, Any]) -> dict[str, Any]:
        ec2 = ctx.client("ec2")
        name = igw_name(ctx.cluster)
        tags = ctx.tags(ROLE_COMMON, name)
        igw = self._igw_of(ctx, vpc)
        if igw is None:
            igw = ctx.ops.call(
                ec2,
                "create_internet_gateway",
                resource=name,
                reason="missing",
                predicted={"InternetGateway": {"InternetGatewayId": placeholder("igw", name)}},
                TagSpecifications=tag_specifications("internet-gateway", tags),
            )["InternetGateway"]
            igw.update(Tags=[{"Key": k, "Value": v} for k, v in tags.items()], Attachments=[])
        elif is_owned(tags_of(igw), ctx.cluster):
            ensure_tags(ctx, igw["InternetGatewayId"], name, tags_of(igw), tags)
        if not any(a.get("VpcId") == vpc["VpcId"] for a in igw.get("Attachments", [])):
            ctx.ops.call(
                ec2,
                "attach_internet_gateway",
                resource=name,
                reason=f"not attached to {vpc['VpcId']}",
                InternetGatewayId=igw["InternetGatewayId"],
                VpcId=vpc["VpcId"],
            )
            igw["Attachments"] = [{"VpcId": vpc["VpcId"], "State": "available"}]
        return igw

    # delete ------------------------------------------------------------------------------------------------
    def _delete(self, ctx: Context, vpc: dict[str, Any] | None) -> None:
        ec2 = ctx.client("ec2")
        for igw in self._owned_igws(ctx):
            for attachment in igw.get("Attachments", []):
                ctx.ops.call(
                    ec2,
                    "detach_internet_gateway",
                    resource=igw_name(ctx.cluster),
                    reason="cluster deleted",
                    InternetGatewayId=igw["InternetGatewayId"],
                    VpcId=attachment["VpcId"],
                )
            ctx.ops.call(
                ec2,
                "delete_internet_gateway",
                resource=igw_name(ctx.cluster),
                reason="cluster deleted",
                InternetGatewayId=igw["InternetGatewayId"],
            )
        if vpc is None or not is_owned(tags_of(vpc), ctx.cluster):
            return
        vpc_id = vpc["VpcId"]
        if ctx.check_mode:
            ctx.ops.call(ec2, "delete_vpc", resource=vpc_name(ctx.cluster), reason="cluster deleted", VpcId=vpc_id)
            return
        delete_when_free(
            ctx,
            lambda: ctx.ops.call(
                ec2, "delete_vpc", resource=vpc_name(ctx.cluster), reason="cluster deleted", VpcId=vpc_id
            ),
            f"VPC {vpc_id}",
            blockers=finder(ctx, vpc_id=vpc_id),
        )


def associated_cidrs(vpc: dict[str, Any]) -> list[str]:
    return [
        a["CidrBlock"]
        for a in vpc.get("CidrBlockAssociationSet", [])
        if a.get("CidrBlockState", {}).get("State") in ("associated", "associating")
    ]


def summarise(ctx: Context, vpc: dict[str, Any], igw: dict[str, Any] | None) -> dict[str, Any]:
    cidrs = associated_cidrs(vpc) or [vpc.get("CidrBlock")]
    dns = vpc.get("_dns") or {}
    return {
        "id": vpc["VpcId"],
        "name": tags_of(vpc).get("Name"),
        "cidr_block": vpc.get("CidrBlock"),
        "secondary_cidr_blocks": [c for c in cidrs if c != vpc.get("CidrBlock")],
        "managed": is_owned(tags_of(vpc), ctx.cluster),
        "enable_dns_support": dns.get("enableDnsSupport"),
        "enable_dns_hostnames": dns.get("enableDnsHostnames"),
        "internet_gateway_id": igw["InternetGatewayId"] if igw else None,
        "tags": tags_of(vpc),
    }
