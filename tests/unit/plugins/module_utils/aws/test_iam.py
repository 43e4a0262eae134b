# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The IAM wrappers: a role that does not exist is ``None`` and has no attachments, inline policies or profiles
(botocore Stubber checks each request against IAM's model)."""

from __future__ import annotations

import datetime
import functools

import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.aws import iam
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

ROLE = {
    "Path": "/",
    "RoleName": "demo-role",
    "RoleId": "AROAEXAMPLEEXAMPLE01",
    "Arn": "arn:aws:iam::123456789012:role/demo-role",
    "CreateDate": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
}


@functools.lru_cache(maxsize=1)
def session() -> AwsSession:
    return AwsSession("us-east-1", None, {"aws_access_key_id": "a", "aws_secret_access_key": "b"})


def stubbed() -> tuple[Context, Stubber]:
    ctx = Context(session=session(), cluster="demo", check_mode=False, wait=False)
    return ctx, Stubber(ctx.client("iam").raw)


def test_get_role():
    ctx, stub = stubbed()
    stub.add_response("get_role", {"Role": ROLE}, {"RoleName": "demo-role"})
    stub.add_client_error("get_role", "NoSuchEntity", http_status_code=404)
    with stub:
        assert iam.get_role(ctx, "demo-role") == ROLE
        assert iam.get_role(ctx, "gone") is None
        stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    "read, method",
    [
        (iam.attached_role_policy_arns, "list_attached_role_policies"),
        (iam.inline_role_policy_names, "list_role_policies"),
        (iam.instance_profiles_of_role, "list_instance_profiles_for_role"),
    ],
)
def test_the_lists_of_a_role_that_is_gone_are_empty(read, method):
    ctx, stub = stubbed()
    stub.add_client_error(method, "NoSuchEntity", http_status_code=404)
    with stub:
        assert read(ctx, "gone") == []
        stub.assert_no_pending_responses()


def test_attached_policies_are_read_as_arns():
    ctx, stub = stubbed()
    arn = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"
    answer = {"AttachedPolicies": [{"PolicyName": "AmazonEKSClusterPolicy", "PolicyArn": arn}], "IsTruncated": False}
    stub.add_response("list_attached_role_policies", answer, {"RoleName": "demo-role"})
    with stub:
        assert iam.attached_role_policy_arns(ctx, "demo-role") == [arn]
