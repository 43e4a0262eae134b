"""The EC2 wrappers.

``describe`` re-checks tag filters on what the server returns: moto ignores tag filters on DescribeNatGateways
(a benchmark run sharing one server with another cluster saw ours delete that cluster's NAT gateways); AWS honours
them. What a describe returns is what a tier may change or delete, so a resource that does not carry the filtered
tags never comes back from it.

Not-found is decided here only: ``describe_by_ids`` answers ``[]``, ``require_by_ids`` names the ids in AWS's
words, ``delete_when_free`` takes "already gone" as done (botocore Stubber: it checks each request against EC2's
model).
"""

from __future__ import annotations

import functools

import botocore.exceptions
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.aws import ec2 as _ec2
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.resources import EC2_KINDS
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

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


@functools.lru_cache(maxsize=1)
def session() -> AwsSession:
    return AwsSession("us-east-1", None, {"aws_access_key_id": "a", "aws_secret_access_key": "b"})


def stubbed() -> tuple[Context, Stubber]:
    """A run's context on one shared session (its clients are slow to make), with a fresh Stubber."""
    ctx = Context(session=session(), cluster="demo", check_mode=False, wait=False)
    return ctx, Stubber(ctx.client("ec2").raw)


@pytest.mark.parametrize("kind", EC2_KINDS, ids=[k.name for k in EC2_KINDS])
def test_describe_kind_reads_the_table(kind):
    ctx, stub = stubbed()
    filters = [{"Name": "vpc-id", "Values": ["vpc-1"]}]
    stub.add_response(kind.describe, {kind.list_key: []}, {kind.filter_param: filters})
    with stub:
        assert _ec2.describe_kind(ctx, kind.name, filters) == []
        stub.assert_no_pending_responses()


def test_describe_by_ids_is_empty_when_an_id_does_not_exist_and_skips_placeholders():
    ctx, stub = stubbed()
    stub.add_client_error("describe_vpcs", "InvalidVpcID.NotFound", "The vpc ID 'vpc-1' does not exist")
    with stub:
        assert _ec2.describe_by_ids(ctx, "describe_vpcs", "Vpcs", "VpcIds", ["vpc-1", "planned:vpc:x"]) == []
        assert _ec2.describe_by_ids(ctx, "describe_vpcs", "Vpcs", "VpcIds", ["planned:vpc:x", None]) == []
        stub.assert_no_pending_responses()


def test_require_by_ids_names_what_is_missing_in_aws_words():
    ctx, stub = stubbed()
    stub.add_client_error(
        "describe_security_groups", "InvalidGroup.NotFound", "The security group 'sg-1' does not exist"
    )
    stub.add_client_error("describe_security_groups", "UnauthorizedOperation", "no")
    with stub:
        with pytest.raises(ReconcileError, match="^sg-1: The security group 'sg-1' does not exist$"):
            _ec2.require_by_ids(ctx, "describe_security_groups", "SecurityGroups", "GroupIds", ["sg-1"])
        with pytest.raises(Exception, match="UnauthorizedOperation"):
            _ec2.require_by_ids(ctx, "describe_security_groups", "SecurityGroups", "GroupIds", ["sg-1"])


def test_a_delete_of_something_already_gone_is_done():
    ctx, _stub = stubbed()
    attempts = []

    def gone() -> None:
        attempts.append(1)
        raise botocore.exceptions.ClientError({"Error": {"Code": "InvalidSubnetID.NotFound"}}, "DeleteSubnet")

    _ec2.delete_when_free(ctx, gone, "subnet subnet-1")
    assert attempts == [1]


@pytest.mark.parametrize(
    "code, message, dependency",
    [
        ("DependencyViolation", "The subnet 'subnet-1' has dependencies and cannot be deleted.", True),
        ("ResourceInUse", "Target group is currently in use by a listener or a rule", True),
        ("InvalidParameterValue", "resource sg-1 has a dependent object", True),
        ("UnauthorizedOperation", "You are not authorized", False),
        ("InvalidSubnetID.NotFound", "not found", False),
    ],
)
def test_dependency_errors(code, message, dependency):
    assert _ec2.is_dependency_error(code, message) is dependency


def _template(name: str, **tags: str) -> dict:
    return {"LaunchTemplateId": f"lt-{name}", "LaunchTemplateName": name, "Tags": tagged("x", **tags)["Tags"]}


def test_a_launch_template_is_found_among_the_clusters_own_with_one_read():
    """The tag-filtered read is the one capa_cluster_info makes: on a no-op one answer serves both."""
    ctx, stub = stubbed()
    owned = [_template("mp-1", **{OWNED: "owned"}), _template("mp-0", **{OWNED: "owned"})]
    stub.add_response("describe_launch_templates", {"LaunchTemplates": owned}, {"Filters": ctx.owner_filters()})
    with stub:
        assert _ec2.launch_template(ctx, "mp-0") == owned[1]
        stub.assert_no_pending_responses()


def test_a_launch_template_the_cluster_does_not_own_is_still_found_by_name():
    ctx, stub = stubbed()
    foreign = _template("mp-0", team="a")
    stub.add_response("describe_launch_templates", {"LaunchTemplates": []}, {"Filters": ctx.owner_filters()})
    by_name = {"Filters": [{"Name": "launch-template-name", "Values": ["mp-0"]}]}
    stub.add_response("describe_launch_templates", {"LaunchTemplates": [foreign]}, by_name)
    stub.add_response("describe_launch_templates", {"LaunchTemplates": []}, {"Filters": ctx.owner_filters()})
    stub.add_response("describe_launch_templates", {"LaunchTemplates": []}, by_name)
    with stub:
        assert _ec2.launch_template(ctx, "mp-0") == foreign
        assert _ec2.launch_template(ctx, "mp-0") is None
        stub.assert_no_pending_responses()
