# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""iam/roles.py: the roles a cluster owns - ownership, trust, drift reconciled, deletion of everything on them.

Moved here unchanged from the EKS tests (tests mirror the tree). The AWS side runs against in-process moto.
"""

from __future__ import annotations

import datetime
import json

from botocore.stub import ANY, Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.iam import roles
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

CLUSTER = "demo"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
# A valid policy document for in-process moto IAM tests.
POLICY = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*"}]}'


def test_iam_ownership_and_trust():
    assert roles.role_is_owned({"kubernetes.io/cluster/demo": "owned"}, "demo")
    assert roles.role_is_owned({OWNER: "owned"}, "demo")
    assert not roles.role_is_owned({"kubernetes.io/cluster/other": "owned"}, "demo")
    assert not roles.role_is_owned(None, "demo")
    assert roles.trusted_services(
        '{"Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}}]}'
    ) == {"eks.amazonaws.com"}
    assert roles.trusted_services(roles.trust_policy(["b", "a"])) == {"a", "b"}
    assert roles.managed_policy_arn("cn-north-1", "X") == "arn:aws-cn:iam::aws:policy/X"


def test_iam_role_drift_is_reconciled_and_owned_role_deleted_with_its_attachments():
    """In-process moto: trust, boundary, policies and tags of an owned role; deletion of everything on it."""

    from moto import mock_aws

    with mock_aws():
        session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
        raw = session.client("iam").raw
        wanted = raw.create_policy(PolicyName="wanted", PolicyDocument=POLICY)
        extra = raw.create_policy(PolicyName="extra", PolicyDocument=POLICY)
        raw.create_role(
            RoleName="r",
            AssumeRolePolicyDocument=json.dumps(roles.trust_policy("ec2.amazonaws.com")),
            PermissionsBoundary=extra["Policy"]["Arn"],
            Tags=[{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}],
        )
        raw.attach_role_policy(RoleName="r", PolicyArn=extra["Policy"]["Arn"])
        ctx = Context(session=session, cluster=CLUSTER, check_mode=False)
        role = roles.ensure_role(ctx, "r", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])
        assert role["managed"] and not role["created"]
        assert [c.call for c in ctx.ops.plan] == [
            "iam:UpdateAssumeRolePolicy",
            "iam:DeleteRolePermissionsBoundary",
            "iam:DetachRolePolicy",
            "iam:AttachRolePolicy",
            "iam:TagRole",
        ]
        again = Context(session=session, cluster=CLUSTER, check_mode=False)
        roles.ensure_role(again, "r", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])
        assert again.ops.plan == []

        raw.put_role_policy(RoleName="r", PolicyName="inline", PolicyDocument=POLICY)
        raw.create_instance_profile(InstanceProfileName="p")
        raw.add_role_to_instance_profile(InstanceProfileName="p", RoleName="r")
        gone = Context(session=session, cluster=CLUSTER, check_mode=False)
        roles.delete_owned_role(gone, "r")
        assert [c.call for c in gone.ops.plan] == [
            "iam:DetachRolePolicy",
            "iam:DeleteRolePolicy",
            "iam:RemoveRoleFromInstanceProfile",
            "iam:DeleteRole",
        ]
        assert roles.get_role(gone, "r") is None

        # A role without the cluster's tags is used as it is and never deleted.
        raw.create_role(RoleName="theirs", AssumeRolePolicyDocument=json.dumps(roles.trust_policy("eks.amazonaws.com")))
        theirs = Context(session=session, cluster=CLUSTER, check_mode=False)
        assert not roles.ensure_role(theirs, "theirs", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])["managed"]
        roles.delete_owned_role(theirs, "theirs")
        assert theirs.ops.plan == [] and roles.get_role(theirs, "theirs") is not None


def test_boundary_is_put_on_an_owned_role():

    from moto import mock_aws

    with mock_aws():
        session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
        raw = session.client("iam").raw
        boundary = raw.create_policy(PolicyName="b", PolicyDocument=POLICY)
        ctx = Context(session=session, cluster=CLUSTER, check_mode=False)
        roles.ensure_role(ctx, "r", "eks.amazonaws.com", [])
        again = Context(session=session, cluster=CLUSTER, check_mode=False)
        roles.ensure_role(again, "r", "eks.amazonaws.com", [], permissions_boundary=boundary["Policy"]["Arn"])
        assert [c.call for c in again.ops.plan] == ["iam:PutRolePermissionsBoundary"]


NAME = "demo-iam-service-role"
OWNED = {"kubernetes.io/cluster/demo": "owned"}
MANAGED_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"


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
        {"AttachedPolicies": [{"PolicyName": "AmazonEKSClusterPolicy", "PolicyArn": MANAGED_POLICY}]},
        {"RoleName": NAME},
    )
    stub.add_response("tag_role", {}, {"RoleName": NAME, "Tags": ANY})
    with stub:
        result = roles.ensure_role(ctx, NAME, "eks.amazonaws.com", [MANAGED_POLICY])
        stub.assert_no_pending_responses()
    assert result["managed"] is True and result["policy_arns"] == [MANAGED_POLICY]
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
        used = roles.ensure_role(ctx, NAME, "eks.amazonaws.com", [MANAGED_POLICY])
        stub.assert_no_pending_responses()
    assert used == {"name": NAME, "arn": role({})["Arn"], "managed": False, "created": False, "policy_arns": None}
    assert ctx.ops.plan == [] and "not owned" in ctx.warnings[0]
