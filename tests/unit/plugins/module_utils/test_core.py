"""The reconcile core: ownership rules, the plan/apply executor, the call recorder, retries, validation."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import tags as own
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import (
    Operations,
    is_placeholder,
    placeholder,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import (
    ApiCallRecorder,
    RetryingClient,
    is_read_operation,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.validation import (
    check_availability_zone,
    check_cluster_name,
    check_subnet_cidrs,
    check_tags,
)


def stubbed_ec2():
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    recorder = ApiCallRecorder()
    recorder.attach(session)
    raw = session.client("ec2")
    return RetryingClient(raw, retries=3), Stubber(raw), recorder


class TestOwnership:
    def test_owned_tags_put_name_first_and_ownership_last(self):
        tags = own.owned_tags("demo", "common", "demo-vpc", {"Name": "mine", own.ROLE_TAG: "x", "team": "a"})
        assert tags["Name"] == "mine"  # a user's Name wins, as in CAPA
        assert tags[own.ROLE_TAG] == "common"  # the role cannot be overridden
        assert tags["sigs.k8s.io/cluster-api-provider-aws/cluster/demo"] == "owned"
        assert tags["team"] == "a"

    @pytest.mark.parametrize(
        "tags, owned",
        [
            ({"sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned"}, True),
            ({"sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "shared"}, False),
            ({"sigs.k8s.io/cluster-api-provider-aws/cluster/other": "owned"}, False),
            ({"kubernetes.io/cluster/demo": "owned"}, False),
            (None, False),
        ],
    )
    def test_only_the_capa_owned_tag_means_owned(self, tags, owned):
        assert own.is_owned(tags, "demo") is owned

    def test_missing_tags_only_adds_and_skips_aws_keys(self):
        assert own.missing_tags({"a": "1", "stale": "x"}, {"a": "1", "b": "2", "aws:x": "y"}) == {"b": "2"}

    @pytest.mark.parametrize(
        "fn, args, expected",
        [
            (own.vpc_name, ("demo",), "demo-vpc"),
            (own.igw_name, ("demo",), "demo-igw"),
            (own.subnet_name, ("demo", True, "us-east-1a"), "demo-subnet-public-us-east-1a"),
            (own.subnet_name, ("demo", False, "us-east-1b"), "demo-subnet-private-us-east-1b"),
            (own.route_table_name, ("demo", False, "us-east-1b"), "demo-rt-private-us-east-1b"),
            (own.nat_gateway_name, ("demo",), "demo-nat"),
            (own.eip_name, ("demo",), "demo-eip-common"),
            (own.security_group_name, ("demo", "node"), "demo-node"),
            (own.security_group_name, ("sg-team", "node"), "@sg-team-node"),
            (own.security_group_description, ("demo", "node"), "Kubernetes cluster demo: node"),
        ],
    )
    def test_capa_name_formats(self, fn, args, expected):
        assert fn(*args) == expected


class TestOperations:
    def test_check_mode_plans_and_returns_the_prediction_without_calling(self):
        ec2, stubber, recorder = stubbed_ec2()
        ops = Operations(check_mode=True)
        with stubber:  # no response queued: any real call would fail
            result = ops.call(
                ec2,
                "create_vpc",
                resource="demo-vpc",
                reason="missing",
                predicted={"Vpc": {"VpcId": placeholder("vpc", "demo-vpc")}},
                CidrBlock="10.0.0.0/16",
            )
        assert is_placeholder(result["Vpc"]["VpcId"])
        assert ops.plan_as_list() == [{"call": "ec2:CreateVpc", "resource": "demo-vpc", "reason": "missing"}]
        assert recorder.as_dict() == {}
        assert ops.changed

    def test_apply_makes_the_call_and_records_it(self):
        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_response("create_vpc", {"Vpc": {"VpcId": "vpc-12345678"}}, {"CidrBlock": "10.0.0.0/16"})
        ops = Operations(check_mode=False)
        with stubber:
            result = ops.call(ec2, "create_vpc", resource="demo-vpc", reason="missing", CidrBlock="10.0.0.0/16")
        assert result["Vpc"]["VpcId"] == "vpc-12345678"
        assert recorder.as_dict() == {"ec2:CreateVpc": 1}
        assert recorder.mutating() == {"ec2:CreateVpc": 1}

    def test_no_call_no_change(self):
        assert not Operations(check_mode=False).changed


class TestRetries:
    def test_throttling_is_retried_and_each_attempt_recorded(self):
        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_client_error("describe_vpcs", "RequestLimitExceeded", http_status_code=503)
        stubber.add_response("describe_vpcs", {"Vpcs": []})
        with stubber:
            assert ec2.describe_vpcs()["Vpcs"] == []
        assert recorder.as_dict() == {"ec2:DescribeVpcs": 2}

    def test_eventual_consistency_codes_are_retried_on_writes_only(self):
        ec2, stubber, _recorder = stubbed_ec2()
        stubber.add_client_error("create_subnet", "InvalidVpcID.NotFound")
        stubber.add_response("create_subnet", {"Subnet": {"SubnetId": "subnet-12345678"}})
        with stubber:
            assert ec2.create_subnet(VpcId="vpc-12345678", CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]

        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_client_error("describe_vpcs", "InvalidVpcID.NotFound")
        with stubber, pytest.raises(Exception, match="InvalidVpcID.NotFound"):
            ec2.describe_vpcs(VpcIds=["vpc-12345678"])  # a NotFound answer to a read is final
        assert recorder.as_dict() == {"ec2:DescribeVpcs": 1}

    def test_paginate_merges_pages(self):
        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-1"}], "NextToken": "t"})
        stubber.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-2"}]})
        with stubber:
            subnets = ec2.paginate("describe_subnets")["Subnets"]
        assert [s["SubnetId"] for s in subnets] == ["subnet-1", "subnet-2"]
        assert recorder.as_dict() == {"ec2:DescribeSubnets": 2}

    @pytest.mark.parametrize(
        "op, read",
        [
            ("DescribeVpcs", True),
            ("ListTags", True),
            ("GetParameter", True),
            ("CreateVpc", False),
            ("DeleteVpc", False),
            ("AuthorizeSecurityGroupIngress", False),
        ],
    )
    def test_read_operations(self, op, read):
        assert is_read_operation(op) is read


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
