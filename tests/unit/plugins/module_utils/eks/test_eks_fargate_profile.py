# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/eks_fargate_profile.py with botocore's Stubber: ``TagResource`` on profile ARNs (moto answers ResourceNotFound
there), a profile still CREATING waited for, and deletion one profile at a time through DELETING (moto is instant).
Every request is checked against AWS's service model, in order."""

from __future__ import annotations

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import eks_fargate_profile as fargate_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import members
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import nodegroup_plan as plan

from .eks_stubs import reconciled
from .member_stubs import ACTIVE_CLUSTER, CLUSTER, ROLE, SUBNETS, context, fparams


def test_fargate_tags_are_added_in_place_and_creation_waited_for(eks):
    """TagResource on a profile ARN (moto answers ResourceNotFound there) and a profile still CREATING."""
    raw, stub = eks
    ctx = context(raw)
    p = fparams(pod_execution_role_arn=ROLE, subnets=[SUBNETS[0]], tags={"team": "b"})
    s = plan.FargateSpec.from_params(p)
    digest = plan.definition_hash(plan.fargate_definition(s, [SUBNETS[0]["id"]], ROLE))
    tags = members.member_tags(ctx, "demo-eks", plan.FARGATE_PROFILE_TAG, "system", digest, {"team": "a"})
    profile = {
        "fargateProfileName": "system",
        "fargateProfileArn": "arn:aws:eks:us-east-1:1:fargateprofile/demo-eks/system/x",
        "status": "CREATING",
        "podExecutionRoleArn": ROLE,
        "subnets": [SUBNETS[0]["id"]],
        "selectors": [{"namespace": "kube-system"}],
        "tags": tags,
    }
    key = {"clusterName": "demo-eks", "fargateProfileName": "system"}
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo-eks"})
    stub.add_response("list_fargate_profiles", {"fargateProfileNames": ["system"]}, {"clusterName": "demo-eks"})
    stub.add_response("describe_fargate_profile", {"fargateProfile": profile}, key)
    stub.add_response("tag_resource", {}, {"resourceArn": profile["fargateProfileArn"], "tags": {"team": "b"}})
    stub.add_response("describe_fargate_profile", {"fargateProfile": {**profile, "status": "ACTIVE"}}, key)
    _before, after = reconciled(fargate_tier.FargateProfileTier(), ctx, p)
    assert after["fargate_profile"]["status"] == "ACTIVE" and after["fargate_profile"]["replaced_from"] == []
    assert [c.call for c in ctx.ops.plan] == ["eks:TagResource"]


def test_fargate_absent_deletes_one_profile_at_a_time(eks, monkeypatch):
    raw, stub = eks
    deleted_roles = []
    monkeypatch.setattr(fargate_tier, "delete_owned_role", lambda ctx, name: deleted_roles.append(name))
    ctx = context(raw)
    tags = members.member_tags(ctx, "demo-eks", plan.FARGATE_PROFILE_TAG, "system", "h", {})
    profiles = [
        {"fargateProfileName": n, "fargateProfileArn": f"arn:{n}", "status": "ACTIVE", "tags": tags}
        for n in ("system", "system-ab12")
    ]
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo-eks"})
    stub.add_response(
        "list_fargate_profiles", {"fargateProfileNames": ["system", "system-ab12"]}, {"clusterName": "demo-eks"}
    )
    for profile in profiles:
        key = {"clusterName": "demo-eks", "fargateProfileName": profile["fargateProfileName"]}
        stub.add_response("describe_fargate_profile", {"fargateProfile": profile}, key)
    for profile in profiles:
        key = {"clusterName": "demo-eks", "fargateProfileName": profile["fargateProfileName"]}
        stub.add_response("delete_fargate_profile", {"fargateProfile": profile}, key)
        stub.add_response("describe_fargate_profile", {"fargateProfile": {**profile, "status": "DELETING"}}, key)
        stub.add_client_error("describe_fargate_profile", "ResourceNotFoundException", http_status_code=404)
    _before, after = reconciled(fargate_tier.FargateProfileTier(), ctx, fparams(state="absent"))
    assert after["fargate_profile"] is None
    assert [c.call for c in ctx.ops.plan] == ["eks:DeleteFargateProfile"] * 2
    assert deleted_roles == [f"{CLUSTER}-system-fargate-iam-service-role"]
