# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The subnet tier's typed observed state and the pure steps between observing and applying: joining desired
subnets to existing ones, classifying route tables, when the zones are read, which NAT gateway and EIP are reused,
and the view."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.network.subnet import (
    Address,
    NatAddress,
    NatGateway,
    Observed,
    RouteTable,
    Subnet,
    SubnetSpec,
    SubnetState,
    VpcView,
    classify,
    explicit_route_tables,
    free_address,
    join,
    nat_view,
    pick_nat,
    subnet_view,
    summary,
    zones_known,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.network.subnet_plan import DesiredSubnet

C = "demo"
OWNER = {f"sigs.k8s.io/cluster-api-provider-aws/cluster/{C}": "owned"}
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
VPC = VpcView("vpc-1", ["10.0.0.0/16"], managed=True)
ZONES = ["us-east-1a", "us-east-1b"]


def subnet(sid: str, zone: str, cidr: str, **tags: str) -> Subnet:
    return Subnet(sid, zone, cidr, dict(tags), False)


def table(tid: str, *subnets: str, route: str | None = None, main: bool = False, owned: bool = True) -> RouteTable:
    raw = {
        "RouteTableId": tid,
        "Tags": [{"Key": k, "Value": v} for k, v in (OWNER if owned else {}).items()],
        "Associations": [{"RouteTableAssociationId": f"a-{s}", "SubnetId": s} for s in subnets]
        + ([{"RouteTableAssociationId": "a-main", "Main": True}] if main else []),
        "Routes": [{"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": route}] if route else [],
    }
    return RouteTable.from_aws(raw)


def spec(subnets: list[DesiredSubnet] | None = None) -> SubnetSpec:
    return SubnetSpec("present", VPC.id, None, subnets or [], 3, "Ordered", "per_az", "igw-1")


def test_route_table_from_aws():
    rt = table("rtb-1", "subnet-1", route="igw-1", main=True)
    assert rt.main and rt.public and rt.subnet_ids == ["subnet-1"] and rt.default_route == ("GatewayId", "igw-1")
    assert rt.explicitly_associated_with("subnet-1") and not table("rtb-2", route="nat-1").public


def test_only_explicit_associations_count():
    tables = [table("rtb-main", main=True), table("rtb-1", "subnet-1")]
    assert {k: v.id for k, v in explicit_route_tables(tables).items()} == {"subnet-1": "rtb-1"}


def test_join_matches_by_cidr_and_by_id_and_refuses_what_cannot_be():
    existing = [
        subnet("subnet-1", "us-east-1a", "10.0.0.0/24", **OWNER),
        subnet("subnet-9", "us-east-1b", "10.0.9.0/24"),
    ]
    desired = [
        DesiredSubnet("us-east-1a", "10.0.0.0/24", True, index=0),
        DesiredSubnet(None, None, False, id="subnet-9", index=1),
        DesiredSubnet("us-east-1b", "10.0.1.0/24", False, index=2),
    ]
    states = join(C, VPC, existing, desired, ZONES)
    assert [(s.id, s.managed) for s in states] == [("subnet-1", True), ("subnet-9", False), ("", True)]
    moved = [DesiredSubnet("us-east-1b", "10.0.0.0/24", True, index=0)]
    with pytest.raises(SpecError) as error:
        join(C, VPC, existing, moved, ZONES)
    assert error.value.field == "subnets[0].availability_zone"
    overlapping = [DesiredSubnet("us-east-1a", "10.0.0.0/23", True, index=0)]
    with pytest.raises(SpecError, match="a subnet's CIDR block cannot change"):
        join(C, VPC, existing, overlapping, ZONES)
    with pytest.raises(SpecError, match="is not an available zone"):
        join(C, VPC, existing, [DesiredSubnet("us-east-1z", "10.0.5.0/24", True, index=0)], ZONES)
    with pytest.raises(SpecError, match="only created in a managed VPC"):
        join(C, VpcView("vpc-2", ["10.0.0.0/16"], False), [], desired[2:], ZONES)


LAYOUT = [subnet(f"s-{z}", f"us-east-1{z}", f"10.0.{i}.0/24", **OWNER) for i, z in enumerate("abc")]


@pytest.mark.parametrize(
    "vpc, subnets, existing, known",
    [
        (VPC, [], [], None),  # the default layout chooses zones
        (VPC, [], LAYOUT, ["us-east-1a", "us-east-1b", "us-east-1c"]),  # ... until its subnets use all it allows
        (VPC, [], LAYOUT[:2], None),  # one zone short
        (VPC, [], [subnet(s.id, s.zone, s.cidr) for s in LAYOUT], None),  # subnets of the VPC, not the cluster's
        (VpcView("vpc-2", ["10.0.0.0/16"], False), [], [], []),  # refused before: not ours
        (VPC, [DesiredSubnet("us-east-1a", "10.0.0.0/24", True)], [subnet("s-1", "us-east-1a", "10.0.0.0/24")], []),
        (VPC, [DesiredSubnet("us-east-1a", "10.0.0.0/24", True)], [], None),  # a create checks its zone
        (VPC, [DesiredSubnet(None, None, True, id="s-1")], [], []),
    ],
)
def test_zones_are_read_only_when_a_subnet_is_placed_or_created(vpc, subnets, existing, known):
    assert zones_known(C, spec(subnets), vpc, existing) == known


def test_classify_gives_managed_subnets_their_own_table_and_detects_public_unowned_ones():
    ours = SubnetState(DesiredSubnet("us-east-1a", "10.0.0.0/24", True), subnet("s-1", "us-east-1a", "10.0.0.0/24"))
    byo_public = SubnetState(
        DesiredSubnet(None, None, False, id="s-2"), subnet("s-2", "a", "10.0.1.0/24"), managed=False
    )
    byo_tagged = SubnetState(
        DesiredSubnet(None, None, False, id="s-3"), subnet("s-3", "a", "10.0.2.0/24", **{ROLE: "public"}), managed=False
    )
    tables = [table("rtb-1", "s-1"), table("rtb-2", "s-2", route="igw-1", owned=False), table("rtb-left")]
    left = classify(C, [ours, byo_public, byo_tagged], tables)
    assert ours.route_table is not None and ours.route_table.id == "rtb-1"
    assert byo_public.is_public and byo_tagged.is_public
    assert [t.id for t in left] == ["rtb-left"]


def test_a_nat_in_the_slots_subnet_wins_then_one_in_the_same_zone():
    in_subnet, in_zone = (
        NatGateway("nat-1", "s-1", "available", {}, ()),
        NatGateway("nat-2", "s-2", "available", {}, ()),
    )
    zones = {"s-1": "us-east-1a", "s-2": "us-east-1a"}
    assert pick_nat([in_zone, in_subnet], "s-1", "us-east-1a", zones) is in_subnet
    assert pick_nat([in_zone], "s-1", "us-east-1a", zones) is in_zone
    assert pick_nat([in_zone], "s-1", "us-east-1b", zones) is None


def test_a_free_common_address_is_reused_unless_held_or_associated():
    common = {ROLE: "common"}
    held, associated, free = (
        Address("eipalloc-1", "1.1.1.1", None, common),
        Address("eipalloc-2", "2.2.2.2", "eipassoc-2", common),
        Address("eipalloc-3", "3.3.3.3", None, common),
    )
    nats = [NatGateway("nat-1", "s-1", "available", {}, (NatAddress("eipalloc-1", "1.1.1.1"),))]
    assert free_address([held, associated, free], nats) is free
    assert free_address([held, associated, Address("eipalloc-4", None, None, {})], nats) is None


def test_views():
    s = Subnet("s-1", "us-east-1a", "10.0.0.0/24", {"Name": "demo-subnet-private-us-east-1a", **OWNER}, False)
    state = SubnetState(DesiredSubnet("us-east-1a", "10.0.0.0/24", False), s, nat_gateway_id="nat-1")
    state.route_table = table("rtb-1", "s-1")
    nat = NatGateway("nat-1", "s-9", "available", {}, (NatAddress("eipalloc-1", None),))
    addresses = [Address("eipalloc-1", "1.1.1.1", None, {})]
    assert subnet_view(C, s)["managed"] is True and subnet_view(C, s)["route_table_id"] is None
    assert (
        subnet_view(C, s, state)["route_table_id"] == "rtb-1" and subnet_view(C, s, state)["nat_gateway_id"] == "nat-1"
    )
    assert nat_view(nat, addresses, {"s-9": "us-east-1a"})["public_ip"] == "1.1.1.1"
    result = summary(C, Observed(VPC, [state], nats=[nat], addresses=addresses))
    assert result["nat_gateway_ips"] == ["1.1.1.1"] and result["availability_zones"] == ["us-east-1a"]
    assert summary(C, Observed(VPC, [state]), observed_only=True)["subnets"][0]["nat_gateway_id"] is None
