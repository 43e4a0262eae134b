# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/access.py: the aws-auth manifest and access entries (created append-only, an entry's policy associated once),
and the authentication mode moving towards API.

moto lacks access entries and UpdateClusterConfig's accessConfig, so these paths run against botocore's Stubber
(requests checked against AWS's service model, in order).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.stub import ANY

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError

from .eks_stubs import ADMIN_POLICY, ADMIN_ROLE, CLUSTER, NODE_ROLE, OWNER, described, params, run, update


def expect_node_entry(eks) -> dict:
    """No access entry yet, then NODE_ROLE's EC2_LINUX entry created with the cluster's tags (returned)."""
    eks.add_response("list_access_entries", {"accessEntries": []}, {"clusterName": CLUSTER})
    tags = {OWNER: "owned", "sigs.k8s.io/cluster-api-provider-aws/role": "common"}
    entry = {"clusterName": CLUSTER, "principalArn": NODE_ROLE, "type": "EC2_LINUX", "tags": tags}
    eks.add_response("create_access_entry", {}, {**entry, "clientRequestToken": ANY})
    return tags


def test_access_entries_and_auth_mode_update(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response(
        "update_cluster_config",
        update("c1", kind="AccessConfigUpdate"),
        {"name": CLUSTER, "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}},
    )
    eks.add_response("describe_update", update("c1", "Successful"), {"name": CLUSTER, "updateId": "c1"})
    eks.add_response(
        "describe_cluster", described(accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"}), {"name": CLUSTER}
    )
    tags = expect_node_entry(eks)
    eks.add_response(
        "create_access_entry",
        {},
        {
            "clusterName": CLUSTER,
            "principalArn": ADMIN_ROLE,
            "type": "STANDARD",
            "username": "admin",
            "tags": tags,
            "clientRequestToken": ANY,
        },
    )
    eks.add_response(
        "associate_access_policy",
        {},
        {
            "clusterName": CLUSTER,
            "principalArn": ADMIN_ROLE,
            "policyArn": ADMIN_POLICY,
            "accessScope": {"type": "cluster"},
        },
    )
    p = params(
        tmp_path,
        access_config={
            "authentication_mode": "API_AND_CONFIG_MAP",
            "bootstrap_cluster_creator_admin_permissions": True,
        },
        iam_authenticator={
            "map_roles": [
                {"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["system:masters"], "policy_arn": ADMIN_POLICY}
            ],
            "map_users": [],
        },
        node_role_arns=[NODE_ROLE],
        # No API server behind this Stubber-described cluster: aws-auth is applied on the simulator
        # (tests/integration/test_eks_aws_auth.py); here the file and the access entries.
        kubernetes_api={"mode": "none"},
    )
    ctx, after = run(session, p)
    eks.assert_no_pending_responses()
    assert after["conditions"]["IAMAuthenticatorConfigured"]["reason"] == "KubernetesApiNotUsed"
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == [
        "eks:UpdateClusterConfig",
        "eks:CreateAccessEntry",
        "eks:CreateAccessEntry",
        "eks:AssociateAccessPolicy",
    ]
    assert Path(after["aws_auth"]).is_file()  # API_AND_CONFIG_MAP still reads aws-auth


def test_existing_access_entries_only_get_missing_policies(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(accessConfig={"authenticationMode": "API"}), {"name": CLUSTER})
    eks.add_response("list_access_entries", {"accessEntries": [NODE_ROLE, ADMIN_ROLE]}, {"clusterName": CLUSTER})
    eks.add_response(
        "list_associated_access_policies",
        {"clusterName": CLUSTER, "principalArn": ADMIN_ROLE, "associatedAccessPolicies": [{"policyArn": ADMIN_POLICY}]},
        {"clusterName": CLUSTER, "principalArn": ADMIN_ROLE},
    )
    p = params(
        tmp_path,
        access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
        iam_authenticator={
            "map_roles": [{"rolearn": ADMIN_ROLE, "groups": [], "policy_arn": ADMIN_POLICY}],
            "map_users": [],
        },
        node_role_arns=[NODE_ROLE],
    )
    ctx, after = run(session, p)
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if not c.call.startswith("file:")] == []
    assert after["aws_auth"] is None  # API mode: no ConfigMap


def _role(arn: str) -> dict:
    name = arn.rsplit("/", 1)[-1]
    when = "2026-01-01T00:00:00Z"
    return {"Role": {"Path": "/", "RoleName": name, "RoleId": "AROAEXAMPLEEXAMPLE01", "Arn": arn, "CreateDate": when}}


def test_a_machine_pools_instance_profile_gets_its_roles_node_entry(aws_stub, tmp_path):
    """CAPA maps the instance profile of every machine pool of an EKS cluster by the role of the same name (one
    GetRole): it gets the EC2_LINUX entry a role of node_role_arns gets."""
    session, eks, iam = aws_stub
    eks.add_response("describe_cluster", described(accessConfig={"authenticationMode": "API"}), {"name": CLUSTER})
    iam.add_response("get_role", _role(NODE_ROLE), {"RoleName": "nodes"})
    expect_node_entry(eks)
    p = params(
        tmp_path,
        access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
        node_instance_profiles=["nodes"],
    )
    ctx, _after = run(session, p)
    eks.assert_no_pending_responses()
    iam.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == ["eks:CreateAccessEntry"]


def test_an_instance_profile_without_its_role_is_refused_before_any_change(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    eks.add_response("describe_cluster", described(accessConfig={"authenticationMode": "API"}), {"name": CLUSTER})
    iam.add_client_error("get_role", "NoSuchEntity", http_status_code=404)
    p = params(
        tmp_path,
        access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
        node_instance_profiles=["pool-nodes"],
    )
    with pytest.raises(ReconcileError, match="no IAM role pool-nodes .* could not join the cluster"):
        run(session, p)
    eks.assert_no_pending_responses()
    iam.assert_no_pending_responses()
