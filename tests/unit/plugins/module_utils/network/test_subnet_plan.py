# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The subnet tier's pure decisions: zones, default layout, NAT placement, route targets, public detection."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.network.subnet_plan import (
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

ZONES = ["us-east-1f", "us-east-1a", "us-east-1c", "us-east-1b", "us-east-1e", "us-east-1d"]


# zones -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "limit, in_use, expected",
    [
        (3, [], ["us-east-1a", "us-east-1b", "us-east-1c"]),
        (1, [], ["us-east-1a"]),
        (10, [], sorted(ZONES)),
        (3, ["us-east-1e"], ["us-east-1a", "us-east-1b", "us-east-1e"]),  # zones in use are kept
        (2, ["us-east-1d", "us-east-1f", "us-east-1e"], ["us-east-1d", "us-east-1e"]),
    ],
)
def test_ordered_takes_zones_alphabetically(limit, in_use, expected):
    assert choose_zones(ZONES, limit, "Ordered", "demo", in_use) == expected


def test_random_is_seeded_by_cluster_name_and_stable():
    first = choose_zones(ZONES, 3, "Random", "demo")
    assert len(first) == 3 and set(first) <= set(ZONES) and first == sorted(first)
    # Same cluster, any input order, any number of runs: same zones.
    assert all(choose_zones(list(reversed(ZONES)), 3, "Random", "demo") == first for _attempt in range(5))
    # Different clusters do not all land on the same zones (the seed matters).
    picks = {tuple(choose_zones(ZONES, 3, "Random", f"c{i}")) for i in range(20)}
    assert len(picks) > 1
    assert any(p != ("us-east-1a", "us-east-1b", "us-east-1c") for p in picks)


def test_random_keeps_zones_in_use_and_fills_in_seeded_order():
    full = choose_zones(ZONES, 3, "Random", "demo")
    # An interrupted first run left subnets in one of the chosen zones: the rerun completes the same set.
    assert choose_zones(ZONES, 3, "Random", "demo", in_use=[full[1]]) == full
    # Subnets already in other zones win over the seed.
    other = sorted(set(ZONES) - set(full))
    assert choose_zones(ZONES, 3, "Random", "demo", in_use=other) == other


def test_zone_in_use_that_disappeared_is_not_chosen():
    assert choose_zones(["us-east-1a", "us-east-1b"], 3, "Ordered", "demo", in_use=["us-east-1z"]) == [
        "us-east-1a",
        "us-east-1b",
    ]


# layout ------------------------------------------------------------------------------------------------------------
def test_default_subnets_are_public_then_private_per_zone():
    subnets = default_subnets("10.0.0.0/16", ["us-east-1a", "us-east-1b", "us-east-1c"])
    assert [(s.availability_zone, s.cidr_block, s.is_public) for s in subnets] == [
        ("us-east-1a", "10.0.0.0/20", True),
        ("us-east-1b", "10.0.16.0/20", True),
        ("us-east-1c", "10.0.32.0/20", True),
        ("us-east-1a", "10.0.64.0/18", False),
        ("us-east-1b", "10.0.128.0/18", False),
        ("us-east-1c", "10.0.192.0/18", False),
    ]


def test_default_subnets_refuse_a_vpc_too_small():
    with pytest.raises(SpecError) as e:
        default_subnets("10.0.0.0/28", ["us-east-1a", "us-east-1b"])
    assert e.value.field == "availability_zone_usage_limit"


def test_explicit_subnets_keep_index_and_stringify_tags():
    [a, b] = explicit_subnets(
        [{"id": "subnet-0123456789abcdef0"}, {"availability_zone": "z", "cidr_block": "10.0.0.0/24", "tags": {"n": 1}}]
    )
    assert a.id == "subnet-0123456789abcdef0" and a.field == "subnets[0]"
    assert b.tags == {"n": "1"} and not b.is_public and b.field == "subnets[1]"


# NAT placement -----------------------------------------------------------------------------------------------------
def sn(az, cidr, public):
    return DesiredSubnet(az, cidr, public)


THREE_AZ = default_subnets("10.0.0.0/16", ["us-east-1a", "us-east-1b", "us-east-1c"])


@pytest.mark.parametrize(
    "subnets, mode, expected",
    [
        (
            THREE_AZ,
            "per_az",
            [
                NatSlot("us-east-1a", "10.0.0.0/20"),
                NatSlot("us-east-1b", "10.0.16.0/20"),
                NatSlot("us-east-1c", "10.0.32.0/20"),
            ],
        ),
        (THREE_AZ, "single", [NatSlot("us-east-1a", "10.0.0.0/20")]),
        (THREE_AZ, "none", []),
        # Only zones with a private subnet get one; the first public subnet of the zone holds it.
        (
            [
                sn("b", "10.0.1.0/24", True),
                sn("b", "10.0.2.0/24", True),
                sn("b", "10.0.3.0/24", False),
                sn("a", "10.0.4.0/24", True),
            ],
            "per_az",
            [NatSlot("b", "10.0.1.0/24")],
        ),
        # single: first zone alphabetically that has a public subnet, even if its private subnets are elsewhere.
        (
            [sn("c", "10.0.1.0/24", True), sn("b", "10.0.2.0/24", True), sn("c", "10.0.3.0/24", False)],
            "single",
            [NatSlot("b", "10.0.2.0/24")],
        ),
        # public-only setup: nothing to NAT.
        ([sn("a", "10.0.1.0/24", True)], "per_az", []),
    ],
)
def test_nat_placement(subnets, mode, expected):
    assert place_nat_gateways(subnets, mode) == expected


def test_per_az_needs_a_public_subnet_in_each_private_zone():
    with pytest.raises(SpecError) as e:
        place_nat_gateways([sn("a", "10.0.1.0/24", True), sn("b", "10.0.2.0/24", False)], "per_az")
    assert e.value.field == "nat_gateways" and "public subnet in b" in e.value.reason
    assert place_nat_gateways([sn("a", "10.0.1.0/24", True), sn("b", "10.0.2.0/24", False)], "single") == [
        NatSlot("a", "10.0.1.0/24")
    ]


def test_private_subnets_without_any_public_subnet_are_refused():
    with pytest.raises(SpecError):
        place_nat_gateways([sn("a", "10.0.2.0/24", False)], "single")


# route targets -----------------------------------------------------------------------------------------------------
NATS = {"a": "nat-a", "b": "nat-b"}


@pytest.mark.parametrize(
    "public, zone, mode, igw, nats, expected",
    [
        (True, "a", "per_az", "igw-1", NATS, ("GatewayId", "igw-1")),
        (True, "a", "none", "igw-1", {}, ("GatewayId", "igw-1")),
        (False, "b", "per_az", "igw-1", NATS, ("NatGatewayId", "nat-b")),
        (False, "c", "per_az", "igw-1", NATS, None),
        (False, "c", "single", "igw-1", {"a": "nat-a"}, ("NatGatewayId", "nat-a")),
        (False, "a", "none", "igw-1", {}, None),
        (True, "a", "per_az", None, NATS, None),
    ],
)
def test_route_target(public, zone, mode, igw, nats, expected):
    assert route_target(public, zone, mode, igw, nats) == expected


@pytest.mark.parametrize(
    "routes, expected, public",
    [
        ([{"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local"}], None, False),
        ([{"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": "igw-1"}], ("GatewayId", "igw-1"), True),
        ([{"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-1"}], ("NatGatewayId", "nat-1"), False),
        ([{"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": "cagw-1"}], ("GatewayId", "cagw-1"), True),
        ([{"DestinationCidrBlock": "0.0.0.0/0", "State": "blackhole"}], ("", ""), False),
    ],
)
def test_current_default_route_and_public_detection(routes, expected, public):
    assert current_default_route({"Routes": routes}) == expected
    assert is_public_target(current_default_route({"Routes": routes})) is public
