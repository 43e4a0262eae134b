# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""CAPA's ownership tags and name formats, and tag repair once for every tagging API (Stubber checks each request
against the service's model)."""

from __future__ import annotations

import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import tags as own
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.tags import TAGGERS, repair_tags

RESOURCES = {
    "ec2": "vpc-0123456789abcdef0",
    "elb": "demo-apiserver",
    "elbv2": "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/demo/0123456789abcdef",
    "autoscaling": "mp-0",
    "eks": "arn:aws:eks:us-east-1:123456789012:cluster/demo",
    "iam-role": "demo-iam-service-role",
    "iam-policy": "arn:aws:iam::123456789012:policy/controllers",
    "iam-oidc-provider": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC",
    "secretsmanager": "clusterapi.aws/demo/pki",
}


def context(check_mode: bool = False) -> Context:
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "a", "aws_secret_access_key": "b"})
    return Context(session=session, cluster="demo", check_mode=check_mode)


def test_every_tagger_is_covered():
    assert set(RESOURCES) == set(TAGGERS)


@pytest.mark.parametrize("kind", sorted(TAGGERS))
def test_each_api_gets_a_valid_request_for_only_the_missing_tags(kind: str):
    ctx = context()
    tagger = TAGGERS[kind]
    client = ctx.client(tagger.service)
    with Stubber(client.raw) as stub:
        stub.add_response(tagger.method, {}, tagger.request(RESOURCES[kind], {"team": "b"}))
        after = repair_tags(ctx, kind, RESOURCES[kind], "r", {"team": "a", "stale": "x"}, {"team": "b"})
        stub.assert_no_pending_responses()
    assert after == {"team": "b", "stale": "x"}  # a key this collection did not apply stays
    assert [(p.call.split(":")[0], p.reason) for p in ctx.ops.plan] == [(tagger.service, "tags differ: team")]


APPLIED = own.APPLIED_TAGS_TAG


@pytest.mark.parametrize("kind", sorted(TAGGERS))
def test_each_api_removes_only_the_applied_keys_the_spec_dropped_before_it_writes(kind: str):
    """Stubber validates the untagging request against each service's model; moto runs the EC2 path end to end
    (tests/integration/test_cluster.py)."""
    ctx = context()
    tagger = TAGGERS[kind]
    resource = RESOURCES[kind]
    current = {"team": "a", "cost": "1", "theirs": "x", "aws:cloudformation:stack": "s", APPLIED: "cost,team"}
    desired = own.owned_tags("demo", "common", None, {"team": "a", "env": "prod"})
    client = ctx.client(tagger.service)
    with Stubber(client.raw) as stub:
        stub.add_response(tagger.untag_method, {}, tagger.untag_request(resource, ["cost"]))
        written = {k: v for k, v in desired.items() if current.get(k) != v}
        stub.add_response(tagger.method, {}, tagger.request(resource, written))
        after = repair_tags(ctx, kind, resource, "r", current, desired)
        stub.assert_no_pending_responses()
    assert "cost" not in after and after["theirs"] == "x" and after["aws:cloudformation:stack"] == "s"
    assert after[APPLIED] == "env,team"
    assert [p.reason for p in ctx.ops.plan] == [
        "tags no longer in additional_tags: cost",
        f"tags differ: {', '.join(sorted(written))}",
    ]


def test_the_record_goes_when_the_spec_has_no_additional_tags_left():
    ctx = context(check_mode=True)
    current = {"team": "a", APPLIED: "team", "Name": "demo-vpc"}
    after = repair_tags(ctx, "ec2", "vpc-1", "demo-vpc", current, {"Name": "demo-vpc"})
    assert after == {"Name": "demo-vpc"}
    assert [(p.call, p.reason) for p in ctx.ops.plan] == [
        ("ec2:DeleteTags", f"tags no longer in additional_tags: {APPLIED}, team")
    ]


def test_applied_keys_a_resource_no_longer_has_frozen_keys_and_aws_keys_are_not_removed():
    current = {
        APPLIED: "gone,aws:x,clusterapi.aws/template-hash,kept",
        "kept": "1",
        "clusterapi.aws/template-hash": "h",
    }
    desired = {"kept": "1", APPLIED: "kept"}
    assert own.stale_tag_keys(current, desired, frozen=["clusterapi.aws/template-hash"]) == []
    assert own.stale_tag_keys({**current, "aws:x": "y"}, desired) == ["clusterapi.aws/template-hash"]


def test_nothing_to_repair_is_no_call_and_frozen_and_aws_keys_are_never_written():
    ctx = context()
    current = {"a": "1", "clusterapi.aws/template-hash": "old"}
    desired = {"a": "1", "clusterapi.aws/template-hash": "new", "aws:cloudformation:stack": "x"}
    assert repair_tags(ctx, "ec2", "i-1", "m", current, desired, frozen=["clusterapi.aws/template-hash"]) == current
    assert ctx.ops.plan == []


def test_check_mode_plans_and_placeholders_are_skipped():
    ctx = context(check_mode=True)
    repair_tags(ctx, "ec2", "vpc-1", "demo-vpc", {}, {"a": "1"})
    repair_tags(ctx, "ec2", "planned:vpc:demo-vpc", "demo-vpc", {}, {"a": "1"})
    assert [p.resource for p in ctx.ops.plan] == ["demo-vpc"]


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

    def test_owned_tags_record_the_additional_keys_and_nothing_when_there_are_none(self):
        tags = own.owned_tags("demo", "common", "demo-vpc", {"team": "a", "cost-center": "7"})
        assert tags[own.APPLIED_TAGS_TAG] == "cost-center,team"
        assert own.APPLIED_TAGS_TAG not in own.owned_tags("demo", "common", "demo-vpc", {})
        assert own.applied_tag_keys(tags) == {"team", "cost-center"}

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


@pytest.mark.parametrize(
    "tags, carries",
    [
        ({"sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned"}, True),
        ({"kubernetes.io/cluster/demo": "shared"}, True),  # a subnet brought by id, tagged for the cloud provider
        ({"kubernetes.io/cluster/demo-2": "owned", "Name": "demo"}, False),  # another cluster's
        ({"kubernetes.io/cluster/demo/x": "owned"}, False),
        ({}, False),
    ],
)
def test_carries_either_tag_is_the_either_tag_filter_told_from_tags(tags, carries):
    """The wildcard filter (``*/cluster/demo``) AWS applies, told from a resource's tags by a reader that asked
    a wider question (the status's subnets, asked by VPC)."""
    assert own.either_tag_filter("demo") == [{"Name": "tag-key", "Values": ["*/cluster/demo"]}]
    assert own.carries_either_tag(tags, "demo") is carries
