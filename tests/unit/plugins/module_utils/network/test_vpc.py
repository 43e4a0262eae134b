# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The VPC tier's typed observed state and its pure plan (what to create, enable, associate and attach)."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.network.vpc import (
    NEW_VPC_DNS,
    Dns,
    Gateway,
    Observed,
    ObservedVpc,
    VpcPlan,
    VpcSpec,
    pick_gateway,
    plan,
    refuse_cidr_change,
    summarise,
)

OWNER = "sigs.k8s.io/cluster-api-provider-aws/cluster/demo"
ALL_ON = Dns(True, True)
SPEC = VpcSpec(state="present", vpc_id=None, cidr_block="10.0.0.0/16", secondary_cidr_blocks=("10.1.0.0/16",))


def vpc(*cidrs: str, dns: Dns | None = ALL_ON, owned: bool = True) -> ObservedVpc:
    return ObservedVpc("vpc-1", "10.0.0.0/16", ("10.0.0.0/16", *cidrs), {"Name": "demo-vpc"}, owned, dns)


def gateway(*attached: str) -> Gateway:
    return Gateway("igw-1", {OWNER: "owned"}, attached)


def test_from_aws_reads_tags_ownership_and_live_cidr_associations():
    observed = ObservedVpc.from_aws(
        {
            "VpcId": "vpc-1",
            "CidrBlock": "10.0.0.0/16",
            "Tags": [{"Key": OWNER, "Value": "owned"}],
            "CidrBlockAssociationSet": [
                {"CidrBlock": "10.0.0.0/16", "CidrBlockState": {"State": "associated"}},
                {"CidrBlock": "10.1.0.0/16", "CidrBlockState": {"State": "associating"}},
                {"CidrBlock": "10.2.0.0/16", "CidrBlockState": {"State": "disassociated"}},
            ],
        },
        "demo",
    )
    assert observed.owned and observed.cidrs == ("10.0.0.0/16", "10.1.0.0/16") and observed.dns is None
    assert observed.secondary_cidrs == ["10.1.0.0/16"]
    assert not ObservedVpc.from_aws({"VpcId": "vpc-2", "CidrBlock": "10.0.0.0/16"}, "demo").owned


@pytest.mark.parametrize(
    "observed, expected",
    [
        (
            Observed(None),
            VpcPlan(True, ("enableDnsHostnames",), ("10.1.0.0/16",), (), True, True),
        ),
        (
            Observed(vpc("10.1.0.0/16"), gateway("vpc-1")),
            VpcPlan(False, (), (), (), False, False),
        ),
        (
            Observed(vpc(dns=Dns(False, False)), gateway()),
            VpcPlan(False, ("enableDnsSupport", "enableDnsHostnames"), ("10.1.0.0/16",), (), False, True),
        ),
        (
            Observed(vpc("10.1.0.0/16", "10.9.0.0/16"), None),
            VpcPlan(False, (), (), ("10.9.0.0/16",), True, True),
        ),
    ],
    ids=["nothing-yet", "steady", "dns-off-and-gateway-detached", "extra-cidr-and-no-gateway"],
)
def test_plan(observed, expected):
    assert plan(SPEC, observed) == expected


def test_a_new_vpc_has_dns_support_but_not_hostnames():
    assert NEW_VPC_DNS.off() == ("enableDnsHostnames",)


def test_our_gateway_here_wins_over_a_free_one_and_one_elsewhere_is_neither():
    here, free, elsewhere = gateway("vpc-1"), Gateway("igw-2", {}, ()), Gateway("igw-3", {}, ("vpc-9",))
    assert pick_gateway("vpc-1", [free, elsewhere, here]) is here
    assert pick_gateway("vpc-1", [elsewhere, free]) is free
    assert pick_gateway("vpc-1", [elsewhere]) is None


def test_the_primary_block_cannot_change():
    with pytest.raises(SpecError) as error:
        refuse_cidr_change(VpcSpec("present", None, "10.5.0.0/16"), vpc())
    assert error.value.field == "cidr_block" and "cannot change" in error.value.reason
    refuse_cidr_change(SPEC, vpc())


def test_view_of_a_vpc_not_read_for_dns():
    view = summarise(vpc("10.1.0.0/16", dns=None, owned=False), None)
    assert view == {
        "id": "vpc-1",
        "name": "demo-vpc",
        "cidr_block": "10.0.0.0/16",
        "secondary_cidr_blocks": ["10.1.0.0/16"],
        "managed": False,
        "enable_dns_support": None,
        "enable_dns_hostnames": None,
        "internet_gateway_id": None,
        "tags": {"Name": "demo-vpc"},
    }
