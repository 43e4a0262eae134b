# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/eks_nodegroup.py with botocore's Stubber, for the AWS paths moto cannot produce: ``UpdateNodegroupVersion``
(moto lacks it), ``TagResource`` on node group ARNs (moto answers ResourceNotFound there), and waits through
CREATING / UPDATING / DELETING and failure states (moto is instant). Every request is checked against AWS's
service model, in order."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import eks_nodegroup as nodegroup_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import nodegroup_plan as plan
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError

from .eks_stubs import reconciled
from .member_stubs import ACTIVE_CLUSTER, CLUSTER, ROLE, context, definition, observed_from, owned_tags, params, spec

# The Node wait after a create or an update is tested on the simulator (test_eks_status_on_simulator.py);
# these Stubber tests are about EKS's calls, so they reach no Kubernetes API.
NO_API = {"mode": "none"}


def test_version_upgrade_steps_one_minor_at_a_time_and_waits(eks):
    """UpdateNodegroupVersion is not in moto: 1.29 -> 1.30 -> 1.31 (the cluster's), each waited for through
    UPDATING; a missing user tag is added with TagResource (which moto refuses on node group ARNs)."""
    raw, stub = eks
    ctx = context(raw)
    s = plan.NodegroupSpec.from_params(params(node_role_arn=ROLE, tags={"team": "a"}, eks_cluster_name="demo"))
    digest = plan.definition_hash(definition(s))
    tags = owned_tags(s, digest, ctx)
    observed = observed_from(s, version="1.29", tags={k: v for k, v in tags.items() if k != "team"}, status="ACTIVE")
    arn = observed["nodegroupArn"]
    ng = {"clusterName": "demo", "nodegroupName": "md-0"}
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo"})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0", "other"]}, {"clusterName": "demo"})
    stub.add_response("describe_nodegroup", {"nodegroup": observed}, ng)
    stub.add_response("tag_resource", {}, {"resourceArn": arn, "tags": {"team": "a"}})
    stub.add_response("update_nodegroup_version", {"update": {"id": "u1"}}, {**ng, "version": "1.30"})
    stub.add_response("describe_nodegroup", {"nodegroup": {**observed, "status": "UPDATING"}}, ng)
    stub.add_response("describe_nodegroup", {"nodegroup": {**observed, "version": "1.30"}}, ng)
    stub.add_response("update_nodegroup_version", {"update": {"id": "u2"}}, {**ng, "version": "1.31"})
    stub.add_response("describe_nodegroup", {"nodegroup": {**observed, "version": "1.31"}}, ng)
    before, after = reconciled(
        nodegroup_tier.NodegroupTier(),
        ctx,
        params(node_role_arn=ROLE, tags={"team": "a"}, eks_cluster_name="demo", kubernetes_api=NO_API),
    )
    assert before["nodegroup"]["version"] == "1.29" and after["nodegroup"]["version"] == "1.31"
    assert [p.call for p in ctx.ops.plan] == [
        "eks:TagResource",
        "eks:UpdateNodegroupVersion",
        "eks:UpdateNodegroupVersion",
    ]


def test_version_upgrade_in_check_mode_plans_every_step(eks):
    raw, stub = eks
    ctx = context(raw, check_mode=True)
    p = params(node_role_arn=ROLE, eks_cluster_name="demo", release_version="1.31.4-20250101", kubernetes_api=NO_API)
    s = plan.NodegroupSpec.from_params(p)
    observed = observed_from(s, version="1.29", tags=owned_tags(s, plan.definition_hash(definition(s)), ctx))
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo"})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0"]}, {"clusterName": "demo"})
    stub.add_response("describe_nodegroup", {"nodegroup": observed}, {"clusterName": "demo", "nodegroupName": "md-0"})
    _before, after = reconciled(nodegroup_tier.NodegroupTier(), ctx, p)
    assert [p.reason for p in ctx.ops.plan] == ["version 1.29 -> 1.30", "version 1.30 -> 1.31"]
    assert after["nodegroup"]["release_version"] == "1.31.4-20250101"


def test_replacement_waits_for_active_before_deleting_the_old_group(eks, monkeypatch):
    """CREATING -> ACTIVE, then the old group DELETING -> gone (moto makes both instant); with a given node role
    the role the pool may have owned before is deleted once the old group is gone."""
    raw, stub = eks
    deleted_roles = []
    monkeypatch.setattr(nodegroup_tier, "delete_owned_role", lambda ctx, name: deleted_roles.append(name))
    ctx = context(raw)
    p = params(node_role_arn=ROLE, eks_cluster_name="demo", instance_types=["m5.large"], kubernetes_api=NO_API)
    s = plan.NodegroupSpec.from_params(p)
    old = observed_from(spec(node_role_arn=ROLE), tags=owned_tags(s, "0ld0ld0ld0", ctx))
    digest = plan.definition_hash(definition(s))
    new_name = f"md-0-{digest[:4]}"
    new = observed_from(s, nodegroupName=new_name, tags=owned_tags(s, digest, ctx), status="CREATING")
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo"})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0"]}, {"clusterName": "demo"})
    stub.add_response("describe_nodegroup", {"nodegroup": old}, {"clusterName": "demo", "nodegroupName": "md-0"})
    stub.add_response("create_nodegroup", {"nodegroup": new}, None)
    stub.add_response("describe_nodegroup", {"nodegroup": new}, {"clusterName": "demo", "nodegroupName": new_name})
    stub.add_response(
        "describe_nodegroup",
        {"nodegroup": {**new, "status": "ACTIVE"}},
        {"clusterName": "demo", "nodegroupName": new_name},
    )
    stub.add_response("delete_nodegroup", {"nodegroup": old}, {"clusterName": "demo", "nodegroupName": "md-0"})
    stub.add_response(
        "describe_nodegroup",
        {"nodegroup": {**old, "status": "DELETING"}},
        {"clusterName": "demo", "nodegroupName": "md-0"},
    )
    stub.add_client_error("describe_nodegroup", "ResourceNotFoundException", http_status_code=404)
    _before, after = reconciled(nodegroup_tier.NodegroupTier(), ctx, p)
    assert after["nodegroup"]["name"] == new_name and after["nodegroup"]["replaced_from"] == ["md-0"]
    assert [c.call for c in ctx.ops.plan] == ["eks:CreateNodegroup", "eks:DeleteNodegroup"]
    assert deleted_roles == [f"{CLUSTER}-md-0-nodegroup-iam-service-role"]


def test_a_failed_creation_is_an_error_and_keeps_the_old_group(eks):
    raw, stub = eks
    ctx = context(raw)
    p = params(node_role_arn=ROLE, eks_cluster_name="demo")
    s = plan.NodegroupSpec.from_params(p)
    failed = observed_from(
        s, status="CREATE_FAILED", health={"issues": [{"code": "AsgInstanceLaunchFailures", "message": "no capacity"}]}
    )
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo"})
    stub.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": "demo"})
    stub.add_response("create_nodegroup", {"nodegroup": {**failed, "status": "CREATING"}}, None)
    stub.add_response("describe_nodegroup", {"nodegroup": failed}, {"clusterName": "demo", "nodegroupName": "md-0"})
    with pytest.raises(ReconcileError, match="CREATE_FAILED.*no capacity"):
        reconciled(nodegroup_tier.NodegroupTier(), ctx, p)


def test_missing_cluster_is_an_error_outside_check_mode(eks):
    raw, stub = eks
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    with pytest.raises(ReconcileError, match="not found"):
        reconciled(nodegroup_tier.NodegroupTier(), context(raw), params(node_role_arn=ROLE))


def test_check_mode_plans_a_node_group_for_a_cluster_not_made_yet(eks):
    """A whole-cluster check run: the EKS cluster is only planned, subnets are placeholders."""
    raw, stub = eks
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    ctx = context(raw, check_mode=True)
    subnets = [{"id": "planned:subnet:demo-subnet-private-us-east-1a", "is_public": False}]
    _before, after = reconciled(
        nodegroup_tier.NodegroupTier(), ctx, params(node_role_arn=ROLE, subnets=subnets, version="1.31")
    )
    assert [c.call for c in ctx.ops.plan] == ["eks:CreateNodegroup"]
    assert after["nodegroup"]["arn"] == "planned:nodegroup:md-0" and after["nodegroup"]["version"] == "1.31"


def test_a_node_group_gone_before_its_delete_is_no_change(eks, monkeypatch):
    """DeleteNodegroup answering ResourceNotFound (deleted since it was described) changed nothing: not in the plan."""
    raw, stub = eks
    monkeypatch.setattr(nodegroup_tier, "delete_owned_role", lambda ctx, name: None)
    ctx = context(raw)
    s = spec(node_role_arn=ROLE)
    group = observed_from(s, tags=owned_tags(s, plan.definition_hash(definition(s)), ctx))
    key = {"clusterName": CLUSTER, "nodegroupName": "md-0"}
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": CLUSTER})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0"]}, {"clusterName": CLUSTER})
    stub.add_response("describe_nodegroup", {"nodegroup": group}, key)
    stub.add_client_error("delete_nodegroup", "ResourceNotFoundException", http_status_code=404, expected_params=key)
    stub.add_client_error("describe_nodegroup", "ResourceNotFoundException", http_status_code=404)
    _before, after = reconciled(nodegroup_tier.NodegroupTier(), ctx, params(node_role_arn=ROLE, state="absent"))
    assert ctx.ops.plan == []
    assert after["conditions"]["EKSNodegroupReady"] == {"status": False, "reason": "Deleted"}


def test_ready_nodes_are_counted_by_the_node_group_label_eks_gives_them():
    def node(group: str, ready: str) -> dict:
        labels = {"eks.amazonaws.com/nodegroup": group} if group else {}
        return {
            "metadata": {"name": f"n-{group}-{ready}", "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }

    nodes = [node("md-0", "True"), node("md-0", "False"), node("md-1", "True"), node("", "True")]
    assert nodegroup_tier.ready_nodes_of(nodes, "md-0") == 1
    assert nodegroup_tier.ready_nodes_of(nodes, "md-9") == 0


@pytest.mark.parametrize(
    "status, await_nodes, awaited",
    [
        ("ACTIVE", False, False),  # a no-op: its Nodes were awaited by the run that made it
        ("ACTIVE", True, True),  # an earlier run created it without waiting (the eks_node_groups role)
        ("CREATING", False, True),  # found creating: waited until ACTIVE, then for its Nodes, as its creator would
    ],
)
def test_a_node_group_an_earlier_run_did_not_wait_for_is_waited_for_with_its_nodes(
    eks, monkeypatch, status, await_nodes, awaited
):
    raw, stub = eks
    waited: list[str] = []
    monkeypatch.setattr(nodegroup_tier, "wait_for_nodes", lambda ctx, s, cluster, group: waited.append(group["status"]))
    ctx = context(raw)
    s = spec(node_role_arn=ROLE, eks_cluster_name="demo")
    group = observed_from(s, tags=owned_tags(s, plan.definition_hash(definition(s)), ctx), status=status)
    key = {"clusterName": "demo", "nodegroupName": "md-0"}
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo"})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0"]}, {"clusterName": "demo"})
    stub.add_response("describe_nodegroup", {"nodegroup": group}, key)
    if status != "ACTIVE":
        stub.add_response("describe_nodegroup", {"nodegroup": {**group, "status": "ACTIVE"}}, key)
    p = params(node_role_arn=ROLE, eks_cluster_name="demo", await_nodes=await_nodes)
    _before, after = reconciled(nodegroup_tier.NodegroupTier(), ctx, p)
    assert ctx.ops.plan == []  # nothing changed in this run either way
    assert waited == (["ACTIVE"] if awaited else [])
    assert after["nodegroup"]["status"] == "ACTIVE"


def test_without_wait_a_deletion_starts_and_a_busy_node_group_is_left_for_a_run_with_wait(eks, monkeypatch):
    """The eks_node_groups role starts every node group's deletion without waiting (then deletes the Fargate profiles,
    then waits): an ACTIVE group's DeleteNodegroup is sent at once, a CREATING one (EKS refuses its deletion) is left
    to the run with wait, and the role the module owns stays until the groups are gone."""
    raw, stub = eks
    roles: list[str] = []
    monkeypatch.setattr(nodegroup_tier, "delete_owned_role", lambda ctx, name: roles.append(name))
    ctx = context(raw)
    ctx.wait = False
    s = spec(node_role_arn=ROLE)
    tags = owned_tags(s, plan.definition_hash(definition(s)), ctx)
    active = observed_from(s, tags=tags, status="ACTIVE")
    creating = observed_from(s, tags=tags, status="CREATING", nodegroupName="md-0-a1b2")
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": CLUSTER})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0", "md-0-a1b2"]}, {"clusterName": CLUSTER})
    stub.add_response("describe_nodegroup", {"nodegroup": active}, {"clusterName": CLUSTER, "nodegroupName": "md-0"})
    stub.add_response(
        "describe_nodegroup", {"nodegroup": creating}, {"clusterName": CLUSTER, "nodegroupName": "md-0-a1b2"}
    )
    stub.add_response("delete_nodegroup", {"nodegroup": {**active, "status": "DELETING"}}, None)
    _before, after = reconciled(nodegroup_tier.NodegroupTier(), ctx, params(node_role_arn=ROLE, state="absent"))
    assert [(c.call, c.resource) for c in ctx.ops.plan] == [("eks:DeleteNodegroup", "md-0")]
    assert roles == [] and after["conditions"]["EKSNodegroupReady"] == {"status": False, "reason": "Deleting"}
    assert any("md-0-a1b2 is CREATING" in w for w in ctx.warnings), ctx.warnings
