# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The role reconcile the EKS tiers and the IAM bootstrap share: tags repaired through the one tag repair, a role
deleted by someone else meanwhile is deleted, trust policies compared by grant (botocore Stubber)."""

from __future__ import annotations

import datetime
import json

from botocore.stub import ANY, Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.iam import roles
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

NAME = "demo-iam-service-role"
OWNED = {"kubernetes.io/cluster/demo": "owned"}
POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"


def context() -> tuple[Context, Stubber]:
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "a", "aws_secret_access_key": "b"})
    ctx = Context(session=session, cluster="demo", check_mode=False, wait=False)
    return ctx, Stubber(ctx.client("iam").raw)


def role(tags: dict[str, str]) -> dict:
    return {
        "Path": "/",
        "RoleName": NAME,
        "RoleId": "AROAEXAMPLEEXAMPLE01",
        "Arn": f"arn:aws:iam::123456789012:role/{NAME}",
        "CreateDate": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
        "AssumeRolePolicyDocument": json.dumps(roles.trust_policy("eks.amazonaws.com")),
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
    }


def test_an_owned_role_gets_only_its_missing_tags():
    ctx, stub = context()
    stub.add_response("get_role", {"Role": role(OWNED)}, {"RoleName": NAME})
    stub.add_response(
        "list_attached_role_policies",
        {"AttachedPolicies": [{"PolicyName": "AmazonEKSClusterPolicy", "PolicyArn": POLICY}]},
        {"RoleName": NAME},
    )
    stub.add_response("tag_role", {}, {"RoleName": NAME, "Tags": ANY})
    with stub:
        result = roles.ensure_role(ctx, NAME, "eks.amazonaws.com", [POLICY])
        stub.assert_no_pending_responses()
    assert result["managed"] is True and result["policy_arns"] == [POLICY]
    [tagging] = ctx.ops.plan_as_list()
    assert tagging["call"] == "iam:TagRole" and tagging["reason"].startswith("tags differ: Name, ")


def test_a_role_gone_before_its_delete_is_deleted():
    ctx, stub = context()
    stub.add_response("get_role", {"Role": role(OWNED)}, {"RoleName": NAME})
    for method, key in (
        ("list_attached_role_policies", "AttachedPolicies"),
        ("list_role_policies", "PolicyNames"),
        ("list_instance_profiles_for_role", "InstanceProfiles"),
    ):
        stub.add_response(method, {key: []}, {"RoleName": NAME})
    stub.add_client_error("delete_role", "NoSuchEntity", http_status_code=404)
    with stub:
        roles.delete_owned_role(ctx, NAME)
        stub.assert_no_pending_responses()
    assert [p["call"] for p in ctx.ops.plan_as_list()] == ["iam:DeleteRole"]


def test_a_role_the_cluster_does_not_own_is_left_alone():
    ctx, stub = context()
    stub.add_response("get_role", {"Role": role({"team": "b"})}, {"RoleName": NAME})
    stub.add_response("get_role", {"Role": role({"team": "b"})}, {"RoleName": NAME})
    with stub:
        roles.delete_owned_role(ctx, NAME)
        used = roles.ensure_role(ctx, NAME, "eks.amazonaws.com", [POLICY])
        stub.assert_no_pending_responses()
    assert used == {"name": NAME, "arn": role({})["Arn"], "managed": False, "created": False, "policy_arns": None}
    assert ctx.ops.plan == [] and "not owned" in ctx.warnings[0]
