# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: input checks that fail before any AWS call, each naming the field at fault."""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Iterable, Mapping, Sequence

from .errors import SpecError
from .operations import is_placeholder
from .tags import APPLIED_TAGS_LIMIT, APPLIED_TAGS_TAG, applied_tags_value

# A Kubernetes release (v1.31.2, 1.31.2, v1.32.0-rc.1): the kubeadm machines, the AMI lookup and the cluster spec.
KUBERNETES_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)([-+][0-9A-Za-z.+-]+)?$")
CLUSTER_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
CLUSTER_NAME_MAX = 40
TAG_CHARS = re.compile(r"^[\w .:/=+\-@]*$", re.UNICODE)
AZ_SUFFIX = re.compile(r"^[a-z]$|^-[a-z0-9-]+$")
RESOURCE_ID = {
    "vpc": re.compile(r"^vpc-[0-9a-f]{8,17}$"),
    "subnet": re.compile(r"^subnet-[0-9a-f]{8,17}$"),
    "sg": re.compile(r"^sg-[0-9a-f]{8,17}$"),
    "igw": re.compile(r"^igw-[0-9a-f]{8,17}$"),
}


def parse_kubernetes_version(version: str | None, field: str = "kubernetes_version") -> tuple[int, int, int]:
    """(major, minor, patch) of a Kubernetes release, or a SpecError naming ``field``."""
    match = KUBERNETES_VERSION.match(version or "")
    if not match:
        raise SpecError(field, f"'{version}' is not a Kubernetes version like v1.31.2")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def check_cluster_name(name: str, field: str = "cluster_name") -> None:
    if not name:
        raise SpecError(field, "is required")
    if len(name) > CLUSTER_NAME_MAX:
        raise SpecError(field, f"'{name}' is longer than {CLUSTER_NAME_MAX} characters")
    if not CLUSTER_NAME.match(name):
        raise SpecError(
            field, f"'{name}' must be lower-case letters, digits and '-', starting and ending with a letter or digit"
        )


def check_tags(tags: Mapping[str, Any] | None, field: str = "additional_tags") -> None:
    """CAPA's rules for user tags (Tags.Validate): 50 at most, key <= 128, value <= 256, no ``aws:`` prefix."""
    tags = tags or {}
    if len(tags) > 50:
        raise SpecError(field, f"has {len(tags)} tags; AWS allows at most 50 per resource")
    for key, value in tags.items():
        key = str(key)
        if not key or len(key) > 128:
            raise SpecError(f"{field}.{key}", "tag keys must be 1 to 128 characters")
        if key.lower().startswith("aws:"):
            raise SpecError(f"{field}.{key}", "the 'aws:' prefix is reserved for AWS")
        if len(str(value)) > 256:
            raise SpecError(f"{field}.{key}", "tag values must be at most 256 characters")
        if not TAG_CHARS.match(key) or not TAG_CHARS.match(str(value)):
            raise SpecError(f"{field}.{key}", "tags may hold letters, digits, spaces and _ . : / = + - @ only")
        if key == APPLIED_TAGS_TAG:
            raise SpecError(f"{field}.{key}", "is the collection's record of the keys it applied")
    record = applied_tags_value(str(k) for k in tags)
    if len(record) > APPLIED_TAGS_LIMIT:
        raise SpecError(
            field,
            f"keys take {len(record)} characters joined by commas; they are recorded in one tag value "
            f"({APPLIED_TAGS_TAG}, at most {APPLIED_TAGS_LIMIT}) so that removed keys can be removed: use fewer or "
            "shorter keys",
        )


def parse_cidr(value: str, field: str) -> ipaddress.IPv4Network:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except (ValueError, TypeError) as e:
        raise SpecError(field, f"'{value}' is not a valid CIDR block ({e})") from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise SpecError(field, f"'{value}' is not an IPv4 CIDR block")
    return network


def check_vpc_cidr(value: str, field: str) -> ipaddress.IPv4Network:
    network = parse_cidr(value, field)
    if not 16 <= network.prefixlen <= 28:
        raise SpecError(field, f"'{value}': a VPC CIDR block must be between /16 and /28")
    return network


def check_subnet_cidrs(
    subnets: Sequence[Mapping[str, Any]],
    vpc_cidrs: Sequence[str],
    field: str = "subnets",
) -> None:
    """Each subnet CIDR inside one of the VPC's blocks, /16 to /28, none overlapping another."""
    # A VPC's CIDR blocks are IPv4 (its IPv6 blocks are associations of their own, never passed here).
    vpc_networks = [ipaddress.IPv4Network(c) for c in vpc_cidrs if c and not is_placeholder(c)]
    seen: list[tuple[int, ipaddress.IPv4Network]] = []
    for index, subnet in enumerate(subnets):
        cidr = subnet.get("cidr_block")
        if not cidr:
            continue
        where = f"{field}[{index}].cidr_block"
        network = parse_cidr(cidr, where)
        if not 16 <= network.prefixlen <= 28:
            raise SpecError(where, f"'{cidr}': a subnet CIDR block must be between /16 and /28")
        if vpc_networks and not any(network.subnet_of(v) for v in vpc_networks):
            raise SpecError(where, f"'{cidr}' is outside the VPC CIDR block(s) {', '.join(map(str, vpc_networks))}")
        for other_index, other in seen:
            if network.overlaps(other):
                raise SpecError(where, f"'{cidr}' overlaps {field}[{other_index}].cidr_block '{other}'")
        seen.append((index, network))


def check_availability_zone(az: str, region: str | None, field: str) -> None:
    """An AZ name belongs to the region (``us-east-1a``, or a local zone ``us-east-1-bos-1a``)."""
    if not region:
        return
    if not az.startswith(region) or not AZ_SUFFIX.match(az[len(region) :]):
        raise SpecError(field, f"'{az}' is not an availability zone of region {region}")


def check_availability_zones(zones: Sequence[str], region: str | None, field: str) -> None:
    """A list of AZs (failure domains): each of the region, none twice."""
    for index, zone in enumerate(zones):
        check_availability_zone(zone, region, f"{field}[{index}]")
        if zone in zones[:index]:
            raise SpecError(f"{field}[{index}]", f"'{zone}' is listed twice")


def check_resource_id(value: str | None, kind: str, field: str) -> None:
    if value and not is_placeholder(value) and not RESOURCE_ID[kind].match(value):
        raise SpecError(field, f"'{value}' is not a {kind} id ({kind}-…)")


def check_port_range(from_port: Any, to_port: Any, protocol: str, field: str) -> None:
    if protocol in ("-1", "all", "4", "50"):
        return
    for name, port in (("from_port", from_port), ("to_port", to_port)):
        if port is None:
            raise SpecError(f"{field}.{name}", f"is required for protocol {protocol}")
        low = -1 if protocol in ("icmp", "1", "58", "icmpv6") else 0
        if not low <= int(port) <= 65535:
            raise SpecError(f"{field}.{name}", f"{port} is not a port number")
    if int(from_port) > int(to_port) and protocol not in ("icmp", "1", "58", "icmpv6"):
        raise SpecError(field, f"from_port {from_port} is greater than to_port {to_port}")


def check_one_of(value: Any, allowed: Iterable[Any], field: str) -> None:
    allowed = list(allowed)
    if value not in allowed:
        raise SpecError(field, f"'{value}' is not one of {', '.join(map(str, allowed))}")


def at(where: str, field: str) -> str:
    """``field`` under ``where``: a module checks its own options (``where`` empty), the cluster spec the same rule
    under its section (``capa_cluster.control_plane``), and the error names the field the user wrote either way."""
    return f"{where}.{field}" if where else field


def check_not_negative(value: int | None, field: str) -> None:
    if value is not None and value < 0:
        raise SpecError(field, "must not be negative")
