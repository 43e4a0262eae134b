# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: CAPA's default subnet layout carved from the VPC CIDR (pkg/internal/cidr, network/subnets.go)."""

from __future__ import annotations

import ipaddress
import math

# AWS refuses subnets smaller than /28.
SMALLEST_SUBNET_PREFIX = 28


class CarvingError(ValueError):
    """The VPC block is too small for the requested number of subnets."""


def split_ipv4(cidr: str, count: int) -> list[ipaddress.IPv4Network]:
    """The first ``count`` equal blocks of ``cidr``, each ``ceil(log2(count))`` bits longer (SplitIntoSubnetsIPv4)."""
    if count < 1:
        raise CarvingError("at least one block is needed")
    network = ipaddress.IPv4Network(cidr, strict=True)
    new_prefix = network.prefixlen + math.ceil(math.log2(count))
    if new_prefix > SMALLEST_SUBNET_PREFIX:
        raise CarvingError(f"{cidr} is too small to split into {count} blocks of at least /{SMALLEST_SUBNET_PREFIX}")
    blocks = network.subnets(new_prefix=new_prefix)
    return [next(blocks) for _index in range(count)]


def default_layout(vpc_cidr: str, zone_count: int) -> tuple[list[str], list[str]]:
    """``(public, private)`` CIDRs, one of each per zone, in zone order (CAPA's ``PreferPrivate`` schema).

    The VPC is cut into N+1 blocks: blocks 1..N become the private subnets, block 0 is cut again into N
    smaller public subnets, because public subnets hold little more than NAT gateways and load balancers.
    """
    blocks = split_ipv4(vpc_cidr, zone_count + 1)
    public = split_ipv4(str(blocks[0]), zone_count)
    return [str(b) for b in public], [str(b) for b in blocks[1:]]
