# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Validation of spec values before any AWS request: cluster names, tags, subnet CIDRs, availability zones."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import placeholder
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.validation import (
    check_availability_zone,
    check_cluster_name,
    check_subnet_cidrs,
    check_tags,
)


class TestValidation:
    @pytest.mark.parametrize("name", ["demo", "a", "prod-a-1", "x" * 40])
    def test_good_cluster_names(self, name):
        check_cluster_name(name)

    @pytest.mark.parametrize("name", ["", "Demo", "demo_1", "-demo", "demo-", "x" * 41, "demo.a"])
    def test_bad_cluster_names_name_the_field(self, name):
        with pytest.raises(SpecError) as error:
            check_cluster_name(name, "capa_cluster.name")
        assert error.value.field == "capa_cluster.name"

    @pytest.mark.parametrize(
        "tags, field",
        [
            ({"aws:foo": "x"}, "additional_tags.aws:foo"),
            ({"k" * 129: "x"}, "additional_tags." + "k" * 129),
            ({"k": "v" * 257}, "additional_tags.k"),
            ({"k": "bad\nvalue"}, "additional_tags.k"),
            ({f"k{i}": "v" for i in range(51)}, "additional_tags"),
            (
                {"sigs.k8s.io/cluster-api-provider-aws/last-applied-tags": "x"},
                "additional_tags.sigs.k8s.io/cluster-api-provider-aws/last-applied-tags",
            ),
            ({f"cost-center-{i:02d}-{'x' * 10}": "v" for i in range(11)}, "additional_tags"),  # 274 characters
        ],
    )
    def test_bad_tags(self, tags, field):
        with pytest.raises(SpecError) as error:
            check_tags(tags)
        assert error.value.field == field

    @pytest.mark.parametrize(
        "subnets, message",
        [
            ([{"cidr_block": "10.1.0.0/24"}], "outside the VPC"),
            ([{"cidr_block": "10.0.0.0/24"}, {"cidr_block": "10.0.0.128/25"}], r"overlaps subnets\[0\]"),
            ([{"cidr_block": "10.0.0.0/33"}], "not a valid CIDR"),
            ([{"cidr_block": "10.0.0.1/24"}], "not a valid CIDR"),
            ([{"cidr_block": "10.0.0.0/29"}], "between /16 and /28"),
        ],
    )
    def test_bad_subnet_cidrs(self, subnets, message):
        with pytest.raises(SpecError, match=message):
            check_subnet_cidrs(subnets, ["10.0.0.0/16"])

    def test_subnets_may_use_secondary_blocks_and_placeholders_skip_the_check(self):
        check_subnet_cidrs([{"cidr_block": "10.1.0.0/24"}], ["10.0.0.0/16", "10.1.0.0/16"])
        check_subnet_cidrs([{"cidr_block": "10.1.0.0/24"}], [placeholder("cidr", "x")])

    @pytest.mark.parametrize(
        "az, ok",
        [
            ("us-east-1a", True),
            ("us-east-1-bos-1a", True),
            ("eu-west-1a", False),
            ("us-east-1", False),
            ("us-east-1ab", False),
        ],
    )
    def test_availability_zones_belong_to_the_region(self, az, ok):
        if ok:
            check_availability_zone(az, "us-east-1", "f")
        else:
            with pytest.raises(SpecError):
                check_availability_zone(az, "us-east-1", "f")
