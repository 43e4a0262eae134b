# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

import ipaddress

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.network.cidr import (
    CarvingError,
    default_layout,
    split_ipv4,
)


@pytest.mark.parametrize(
    "vpc, zones, public, private",
    [
        ("10.0.0.0/16", 1, ["10.0.0.0/17"], ["10.0.128.0/17"]),
        ("10.0.0.0/16", 2, ["10.0.0.0/19", "10.0.32.0/19"], ["10.0.64.0/18", "10.0.128.0/18"]),
        (
            "10.0.0.0/16",
            3,
            ["10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20"],
            ["10.0.64.0/18", "10.0.128.0/18", "10.0.192.0/18"],
        ),
        (
            "10.0.0.0/16",
            4,
            ["10.0.0.0/21", "10.0.8.0/21", "10.0.16.0/21", "10.0.24.0/21"],
            ["10.0.32.0/19", "10.0.64.0/19", "10.0.96.0/19", "10.0.128.0/19"],
        ),
        (
            "10.0.0.0/16",
            6,
            ["10.0.0.0/22", "10.0.4.0/22", "10.0.8.0/22", "10.0.12.0/22", "10.0.16.0/22", "10.0.20.0/22"],
            ["10.0.32.0/19", "10.0.64.0/19", "10.0.96.0/19", "10.0.128.0/19", "10.0.160.0/19", "10.0.192.0/19"],
        ),
        (
            "192.168.16.0/20",
            3,
            ["192.168.16.0/24", "192.168.17.0/24", "192.168.18.0/24"],
            ["192.168.20.0/22", "192.168.24.0/22", "192.168.28.0/22"],
        ),
    ],
)
def test_default_layout_matches_capa(vpc: str, zones: int, public: list[str], private: list[str]) -> None:
    assert default_layout(vpc, zones) == (public, private)


@pytest.mark.parametrize(
    "cidr, count, expected",
    [
        ("10.0.0.0/16", 1, ["10.0.0.0/16"]),
        ("10.0.0.0/16", 3, ["10.0.0.0/18", "10.0.64.0/18", "10.0.128.0/18"]),
        ("10.0.0.0/24", 2, ["10.0.0.0/25", "10.0.0.128/25"]),
    ],
)
def test_split_takes_the_first_blocks(cidr: str, count: int, expected: list[str]) -> None:
    assert [str(b) for b in split_ipv4(cidr, count)] == expected


@pytest.mark.parametrize("cidr, count", [("10.0.0.0/26", 5), ("10.0.0.0/28", 2), ("10.0.0.0/16", 0)])
def test_too_small_or_empty_is_refused(cidr: str, count: int) -> None:
    with pytest.raises(CarvingError):
        split_ipv4(cidr, count)


def test_blocks_never_overlap() -> None:
    public, private = default_layout("10.1.0.0/16", 5)
    nets = [ipaddress.ip_network(c) for c in public + private]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])
