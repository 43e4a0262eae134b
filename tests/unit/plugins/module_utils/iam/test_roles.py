# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""iam/roles.py: the roles a cluster owns - ownership, trust, drift reconciled, deletion of everything on them.

Moved here unchanged from the EKS tests (tests mirror the tree). The AWS side runs against in-process moto.
"""

from __future__ import annotations

from ansible_collections.clusterapi.aws.plugins.module_utils.iam import roles as _iam
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

CLUSTER = "demo"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
# A valid policy document for in-process moto IAM tests.
POLICY = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*"}]}'


def test_iam_ownership_and_trust():
    assert _iam.role_is_owned({"kubernetes.io/cluster/demo": "owned"}, "demo")
    assert _iam.role_is_owned({OWNER: "owned"}, "demo")
    assert not _iam.role_is_owned({"kubernetes.io/cluster/other": "owned"}, "demo")
    assert not _iam.role_is_owned(None, "demo")
    assert _iam.trusted_services(
        '{"Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}}]}'
    ) == {"eks.amazonaws.com"}
    assert _iam.trusted_services(_iam.trust_policy(["b", "a"])) == {"a", "b"}
    assert _iam.managed_policy_arn("cn-north-1", "X") == "arn:aws-cn:iam::aws:policy/X"


def test_iam_role_drift_is_reconciled_and_owned_role_deleted_with_its_attachments():
    """In-process moto: trust, boundary, policies and tags of an owned role; deletion of everything on it."""
    import json

    from moto import mock_aws

    with mock_aws():
        session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
        raw = session.client("iam").raw
        wanted = raw.create_policy(PolicyName="wanted", PolicyDocument=POLICY)
        extra = raw.create_policy(PolicyName="extra", PolicyDocument=POLICY)
        raw.create_role(
            RoleName="r",
            AssumeRolePolicyDocument=json.dumps(_iam.trust_policy("ec2.amazonaws.com")),
            PermissionsBoundary=extra["Policy"]["Arn"],
            Tags=[{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}],
        )
        raw.attach_role_policy(RoleName="r", PolicyArn=extra["Policy"]["Arn"])
        ctx = Context(session=session, cluster=CLUSTER, check_mode=False)
        role = _iam.ensure_role(ctx, "r", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])
        assert role["managed"] and not role["created"]
        assert [c.call for c in ctx.ops.plan] == [
            "iam:UpdateAssumeRolePolicy",
            "iam:DeleteRolePermissionsBoundary",
            "iam:DetachRolePolicy",
            "iam:AttachRolePolicy",
            "iam:TagRole",
        ]
        again = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.ensure_role(again, "r", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])
        assert again.ops.plan == []

        raw.put_role_policy(RoleName="r", PolicyName="inline", PolicyDocument=POLICY)
        raw.create_instance_profile(InstanceProfileName="p")
        raw.add_role_to_instance_profile(InstanceProfileName="p", RoleName="r")
        gone = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.delete_owned_role(gone, "r")
        assert [c.call for c in gone.ops.plan] == [
            "iam:DetachRolePolicy",
            "iam:DeleteRolePolicy",
            "iam:RemoveRoleFromInstanceProfile",
            "iam:DeleteRole",
        ]
        assert _iam.get_role(gone, "r") is None

        # A role without the cluster's tags is used as it is and never deleted.
        raw.create_role(RoleName="theirs", AssumeRolePolicyDocument=json.dumps(_iam.trust_policy("eks.amazonaws.com")))
        theirs = Context(session=session, cluster=CLUSTER, check_mode=False)
        assert not _iam.ensure_role(theirs, "theirs", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])["managed"]
        _iam.delete_owned_role(theirs, "theirs")
        assert theirs.ops.plan == [] and _iam.get_role(theirs, "theirs") is not None


def test_boundary_is_put_on_an_owned_role():

    from moto import mock_aws

    with mock_aws():
        session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
        raw = session.client("iam").raw
        boundary = raw.create_policy(PolicyName="b", PolicyDocument=POLICY)
        ctx = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.ensure_role(ctx, "r", "eks.amazonaws.com", [])
        again = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.ensure_role(again, "r", "eks.amazonaws.com", [], permissions_boundary=boundary["Policy"]["Arn"])
        assert [c.call for c in again.ops.plan] == ["iam:PutRolePermissionsBoundary"]
