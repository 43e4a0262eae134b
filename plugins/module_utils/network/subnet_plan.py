# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the pure decisions of the subnet tier (no AWS calls): zones, layout, NAT placement, route targets.

The tier observes AWS, hands plain values to these functions and applies what they return, so every choice CAPA
makes about the network shape is unit-testable without an endpoint.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..kernel.errors import SpecError
from .cidr import CarvingError, default_layout

ORDERED = "Ordered"
RANDOM = "Random"
NAT_PER_AZ = "per_az"
NAT_SINGLE = "single"
NAT_NONE = "none"
DEFAULT_ROUTE = "0.0.0.0/0"
# Internet and carrier gateways make a subnet public when its own route table sends 0.0.0.0/0 to them.
PUBLIC_GATEWAY_PREFIXES = ("igw-", "cagw-")


@dataclass
class DesiredSubnet:
    """One subnet the cluster should have. ``id`` is set for a subnet you bring (never created or changed)."""

    availability_zone: str | None
    cidr_block: str | None
    is_public: bool
    tags: dict[str, str] = dataclasses.field(default_factory=dict)
    id: str | None = None
    index: int | None = None  # position in the ``subnets`` option, for error messages

    @property
    def field(self) -> str:
        return "subnets" if self.index is None else f"subnets[{self.index}]"


@dataclass(frozen=True)
class NatSlot:
    """Where one NAT gateway goes: the AZ it serves and the public subnet (by CIDR) that holds it."""

    availability_zone: str
    subnet_cidr: str


def choose_zones(
    available: Sequence[str],
    limit: int,
    selection: str,
    cluster: str,
    in_use: Iterable[str] = (),
) -> list[str]:
    """The AZs of the default layout, sorted.

    CAPA writes the defaults it picked back into the cluster spec, so later reconciles keep them. We have no
    spec to write into, so the zones the cluster's subnets already use come first; the rest are filled in the
    selection's order. For ``Random`` that order is a shuffle seeded with the cluster name: the same cluster
    gets the same zones on every run (and after an interrupted first run), another cluster likely others.
    """
    ordered = sorted(set(available))
    if selection == RANDOM:
        random.Random(cluster).shuffle(ordered)
    kept = [z for z in ordered if z in set(in_use)]
    chosen = (kept + [z for z in ordered if z not in kept])[:limit]
    return sorted(chosen)


def default_subnets(vpc_cidr: str, zones: Sequence[str]) -> list[DesiredSubnet]:
    """CAPA's default layout: one public and one private subnet per zone, public ones first."""
    try:
        public, private = default_layout(vpc_cidr, len(zones))
    except CarvingError as e:
        raise SpecError("availability_zone_usage_limit", str(e)) from None
    return [DesiredSubnet(z, c, True) for z, c in zip(zones, public, strict=True)] + [
        DesiredSubnet(z, c, False) for z, c in zip(zones, private, strict=True)
    ]


def explicit_subnets(entries: Sequence[Mapping[str, Any]]) -> list[DesiredSubnet]:
    return [
        DesiredSubnet(
            availability_zone=e.get("availability_zone"),
            cidr_block=e.get("cidr_block"),
            is_public=bool(e.get("is_public")),
            tags={str(k): str(v) for k, v in (e.get("tags") or {}).items()},
            id=e.get("id"),
            index=i,
        )
        for i, e in enumerate(entries)
    ]


def place_nat_gateways(subnets: Sequence[DesiredSubnet], mode: str) -> list[NatSlot]:
    """NAT gateways for the managed subnets (CAPA natgateways.go, plus our ``single`` and ``none`` modes).

    ``per_az``: one per AZ that has a private subnet, in that AZ's first public subnet. ``single``: one, in the
    first public subnet of the alphabetically first AZ that has one. Nothing when no subnet is private.
    """
    private_zones = sorted({s.availability_zone for s in subnets if not s.is_public and s.availability_zone})
    if mode == NAT_NONE or not private_zones:
        return []
    first_public: dict[str, str] = {}
    for s in subnets:
        if s.is_public and s.availability_zone and s.cidr_block:
            first_public.setdefault(s.availability_zone, s.cidr_block)
    if not first_public:
        raise SpecError("subnets", "private subnets need a public subnet to hold their NAT gateway")
    if mode == NAT_SINGLE:
        zone = sorted(first_public)[0]
        return [NatSlot(zone, first_public[zone])]
    missing = [z for z in private_zones if z not in first_public]
    if missing:
        raise SpecError(
            "nat_gateways",
            f"per_az needs a public subnet in {', '.join(missing)} for the NAT gateway of its private subnets; "
            "add one or use nat_gateways=single",
        )
    return [NatSlot(z, first_public[z]) for z in private_zones]


def route_target(
    is_public: bool,
    availability_zone: str,
    mode: str,
    internet_gateway_id: str | None,
    nat_by_zone: Mapping[str, str],
) -> tuple[str, str] | None:
    """The ``(CreateRoute parameter, target id)`` of a subnet's 0.0.0.0/0 route, or None for no default route."""
    if is_public:
        return ("GatewayId", internet_gateway_id) if internet_gateway_id else None
    if mode == NAT_NONE or not nat_by_zone:
        return None
    if mode == NAT_SINGLE:
        return ("NatGatewayId", next(iter(nat_by_zone.values())))
    nat = nat_by_zone.get(availability_zone)
    return ("NatGatewayId", nat) if nat else None


def current_default_route(route_table: Mapping[str, Any]) -> tuple[str, str] | None:
    """The target of a route table's 0.0.0.0/0 route, as ``(parameter, id)``."""
    for route in route_table.get("Routes", []):
        if route.get("DestinationCidrBlock") != DEFAULT_ROUTE:
            continue
        for key in ("NatGatewayId", "GatewayId", "TransitGatewayId", "NetworkInterfaceId", "VpcPeeringConnectionId"):
            if route.get(key):
                return (key, route[key])
        return ("", "")  # a route whose target is gone (blackhole without an id)
    return None


def is_public_target(target: tuple[str, str] | None) -> bool:
    """A default route to an internet (or carrier) gateway: what makes a subnet public."""
    return bool(target and target[1].startswith(PUBLIC_GATEWAY_PREFIXES))
