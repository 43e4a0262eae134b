# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/addons.py: addons created, updated and deleted (ours only) and each awaited; a failed addon is an error; tag
drift on the cluster and on our addons is one TagResource each.

moto has no EKS addons API, so these paths run against botocore's Stubber (requests checked against AWS's service
model, in order).
"""

from __future__ import annotations

import pytest
from botocore.stub import ANY

from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster import EksClusterTier
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError

from .eks_stubs import ARN, CLUSTER, OWNER, ROLE_ARN, addon, described, params, reconciled, run, update


def test_addons_created_updated_deleted_and_waited_for(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_addons", {"addons": ["vpc-cni", "old", "theirs"]}, {"clusterName": CLUSTER})
    eks.add_response("describe_addon", addon("vpc-cni"), {"clusterName": CLUSTER, "addonName": "vpc-cni"})
    eks.add_response("describe_addon", addon("old"), {"clusterName": CLUSTER, "addonName": "old"})
    eks.add_response("describe_addon", addon("theirs", owned=False), {"clusterName": CLUSTER, "addonName": "theirs"})
    eks.add_response(
        "update_addon",
        update("a1", kind="AddonUpdate"),
        {
            "clusterName": CLUSTER,
            "addonName": "vpc-cni",
            "addonVersion": "v2",
            "resolveConflicts": "OVERWRITE",
            "serviceAccountRoleArn": ROLE_ARN,
            "clientRequestToken": ANY,
        },
    )
    eks.add_response(
        "create_addon",
        addon("coredns", "CREATING"),
        {
            "clusterName": CLUSTER,
            "addonName": "coredns",
            "configurationValues": '{"replicaCount": 3}',
            "resolveConflicts": "PRESERVE",
            "tags": {OWNER: "owned", "sigs.k8s.io/cluster-api-provider-aws/role": "common"},
            "clientRequestToken": ANY,
        },
    )
    eks.add_response("delete_addon", addon("old", "DELETING"), {"clusterName": CLUSTER, "addonName": "old"})
    # waits: the update by id, the create until ACTIVE, the delete until gone
    eks.add_response("describe_update", update("a1"), {"name": CLUSTER, "updateId": "a1", "addonName": "vpc-cni"})
    eks.add_response(
        "describe_update", update("a1", "Successful"), {"name": CLUSTER, "updateId": "a1", "addonName": "vpc-cni"}
    )
    eks.add_response("describe_addon", addon("coredns", "CREATING"), {"clusterName": CLUSTER, "addonName": "coredns"})
    eks.add_response("describe_addon", addon("coredns", "ACTIVE"), {"clusterName": CLUSTER, "addonName": "coredns"})
    eks.add_response("describe_addon", addon("old", "DELETING"), {"clusterName": CLUSTER, "addonName": "old"})
    eks.add_client_error(
        "describe_addon", "ResourceNotFoundException", expected_params={"clusterName": CLUSTER, "addonName": "old"}
    )
    wanted = [
        {"name": "vpc-cni", "version": "v2", "service_account_role_arn": ROLE_ARN, "conflict_resolution": "overwrite"},
        {"name": "coredns", "configuration": '{"replicaCount": 3}', "conflict_resolution": "preserve"},
        {"name": "theirs", "version": "v9", "conflict_resolution": "overwrite"},
    ]
    ctx, after = run(session, params(tmp_path, addons=wanted))
    eks.assert_no_pending_responses()
    assert [p.call for p in ctx.ops.plan if p.call.startswith("eks:")] == [
        "eks:UpdateAddon",
        "eks:CreateAddon",
        "eks:DeleteAddon",
    ]
    assert after["addons"] == {"installed": ["coredns", "vpc-cni"], "other": ["theirs"]}
    assert any("theirs" in w for w in ctx.warnings)


def test_failed_addon_is_reported(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_addons", {"addons": []}, {"clusterName": CLUSTER})
    eks.add_response("create_addon", addon("coredns", "CREATING"), None)
    failed = addon(
        "coredns", "CREATE_FAILED", health={"issues": [{"code": "InsufficientNumberOfReplicas", "message": "no nodes"}]}
    )
    eks.add_response("describe_addon", failed, {"clusterName": CLUSTER, "addonName": "coredns"})
    with pytest.raises(ReconcileError, match="CREATE_FAILED: no nodes"):
        run(session, params(tmp_path, addons=[{"name": "coredns", "conflict_resolution": "overwrite"}]))


def test_tag_drift_on_cluster_and_owned_addons_is_tag_resource(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    team = {"team": "platform", "sigs.k8s.io/cluster-api-provider-aws/last-applied-tags": "team"}
    eks.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": team})
    eks.add_response("list_addons", {"addons": ["coredns"]}, {"clusterName": CLUSTER})
    eks.add_response("describe_addon", addon("coredns"), {"clusterName": CLUSTER, "addonName": "coredns"})
    eks.add_response("tag_resource", {}, {"resourceArn": addon("coredns")["addon"]["addonArn"], "tags": team})
    ctx = Context(session=session, cluster=CLUSTER, check_mode=False, additional_tags={"team": "platform"})
    reconciled(
        EksClusterTier(), ctx, params(tmp_path, addons=[{"name": "coredns", "conflict_resolution": "overwrite"}])
    )
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == ["eks:TagResource", "eks:TagResource"]


def test_addons_not_given_are_not_managed(aws_stub, tmp_path):
    """``addons`` unset: not one addon request (moto's integration run relies on it, having no addons API)."""
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, addons=None))
    eks.assert_no_pending_responses()
    assert after["addons"] == {"installed": [], "other": []}
    assert after["conditions"]["EKSAddonsConfigured"]["message"] == "addons not managed"
    assert "eks:ListAddons" not in session.recorder.as_dict()


def test_addons_of_a_cluster_check_mode_would_create_are_planned_without_reads(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    wanted = [{"name": "vpc-cni", "conflict_resolution": "overwrite"}]
    ctx, after = run(session, params(tmp_path, addons=wanted), check=True)
    eks.assert_no_pending_responses()
    assert [(p.call, p.resource) for p in ctx.ops.plan if p.call.startswith("eks:")] == [
        ("eks:CreateCluster", CLUSTER),
        ("eks:CreateAddon", "addon vpc-cni"),
    ]
    assert after["addons"] == {"installed": ["vpc-cni"], "other": []}
