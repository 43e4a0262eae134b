"""_ec2.describe re-checks tag filters on what the server returns: moto ignores tag filters on DescribeNatGateways
(a benchmark run sharing one server with another cluster saw ours delete that cluster's NAT gateways); AWS honours
them. What a describe returns is what a tier may change or delete, so a resource that does not carry the filtered
tags never comes back from it."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.aws import ec2 as _ec2

OWNED = "sigs.k8s.io/cluster-api-provider-aws/cluster/demo"


def tagged(ident: str, **tags: str) -> dict:
    return {"Id": ident, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


class FakeClient:
    def __init__(self, answer: dict) -> None:
        self.answer = answer

    def paginate(self, method: str, **params):
        return self.answer


class FakeContext:
    def __init__(self, answer: dict) -> None:
        self.ec2 = FakeClient(answer)

    def client(self, name: str):
        return self.ec2


def test_a_server_that_ignores_the_tag_filter_cannot_hand_us_another_clusters_resource():
    ours = tagged("nat-1", **{OWNED: "owned"})
    theirs = tagged("nat-2", **{"sigs.k8s.io/cluster-api-provider-aws/cluster/peer": "owned"})
    untagged = {"Id": "nat-3"}
    ctx = FakeContext({"NatGateways": [ours, theirs, untagged]})
    found = _ec2.describe(
        ctx, "describe_nat_gateways", "NatGateways", Filter=[{"Name": f"tag:{OWNED}", "Values": ["owned"]}]
    )
    assert found == [ours]


def test_without_tag_filters_everything_returned_is_kept():
    items = [tagged("vpc-1"), {"Id": "vpc-2"}]
    ctx = FakeContext({"Vpcs": items})
    assert _ec2.describe(ctx, "describe_vpcs", "Vpcs", Filters=[{"Name": "vpc-id", "Values": ["vpc-1"]}]) == items


def test_reservations_keep_only_matching_instances():
    ours = tagged("i-1", **{OWNED: "owned", "group": "md-0"})
    other_group = tagged("i-2", **{OWNED: "owned", "group": "md-1"})
    foreign = tagged("i-3")
    ctx = FakeContext({"Reservations": [{"Instances": [ours, other_group]}, {"Instances": [foreign]}]})
    filters = [{"Name": f"tag:{OWNED}", "Values": ["owned"]}, {"Name": "tag:group", "Values": ["md-0"]}]
    found = _ec2.describe(ctx, "describe_instances", "Reservations", Filters=filters)
    assert found == [{"Instances": [ours]}]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([{"Name": "tag-key", "Values": [OWNED]}], True),
        ([{"Name": "tag-key", "Values": ["sigs.k8s.io/*"]}], True),
        ([{"Name": "tag-key", "Values": ["kubernetes.io/*"]}], False),
        ([{"Name": "tag:Name", "Values": ["demo-*"]}], True),
        ([{"Name": "tag:Name", "Values": ["other", "demo-node"]}], True),
        ([{"Name": "tag:Name", "Values": ["demo-?"]}], False),
        ([{"Name": "tag:Name", "Values": ["demo-node"]}, {"Name": "tag:missing", "Values": ["x"]}], False),
        ([{"Name": "state", "Values": ["available"]}], True),
    ],
)
def test_matches_tags_follows_aws_filter_semantics(filters, expected):
    resource = tagged("x", **{OWNED: "owned", "Name": "demo-node"})
    assert _ec2.matches_tags(resource, _ec2.tag_filters(filters)) is expected
