"""EKS node groups and Fargate profiles: the pure decisions (which field changes how, label/taint/scaling deltas,
version steps, names, validation) and, with botocore's Stubber, the AWS paths moto cannot produce:
``UpdateNodegroupVersion`` (moto lacks it), ``TagResource`` on node group and profile ARNs (moto answers
ResourceNotFound there), and waits through CREATING / UPDATING / DELETING and failure states (moto is instant)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import eks_fargate_profile as fargate_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import eks_nodegroup as nodegroup_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import nodegroup_plan as plan
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient

CLUSTER = "demo"
SUBNETS = [
    {"id": "subnet-0000000000000000a", "is_public": False, "availability_zone": "us-east-1a"},
    {"id": "subnet-0000000000000000b", "is_public": True, "availability_zone": "us-east-1a"},
    {"id": "subnet-0000000000000000c", "is_public": False, "availability_zone": "us-east-1b"},
]
PRIVATE = ["subnet-0000000000000000a", "subnet-0000000000000000c"]
ROLE = "arn:aws:iam::123456789012:role/nodes"


def params(**over: Any) -> dict[str, Any]:
    """Options as Ansible hands them to the tier (defaults filled in)."""
    base = {
        "cluster_name": CLUSTER,
        "state": "present",
        "name": "md-0",
        "eks_cluster_name": None,
        "version": None,
        "release_version": None,
        "scaling": {"min_size": 1, "max_size": 3, "desired_size": 2},
        "externally_managed_replicas": False,
        "instance_types": None,
        "capacity_type": "ON_DEMAND",
        "ami_type": None,
        "disk_size": None,
        "labels": {},
        "taints": [],
        "update_config": {"max_unavailable": None, "max_unavailable_percentage": None},
        "launch_template": None,
        "remote_access": None,
        "node_role_arn": None,
        "subnets": SUBNETS,
        "tags": {},
    }
    base.update(over)
    return base


def spec(**over: Any) -> plan.NodegroupSpec:
    return plan.NodegroupSpec.from_params(params(**over))


def definition(s: plan.NodegroupSpec) -> dict[str, Any]:
    return plan.immutable_definition(s, plan.private_subnet_ids(s.subnets), plan.node_role_token(s, CLUSTER))


# which field changes how --------------------------------------------------------------------------------------------
IMMUTABLE_CHANGES = [
    ("instance_types", {"instance_types": ["m5.large"]}),
    ("capacity_type", {"capacity_type": "SPOT"}),
    ("ami_type", {"ami_type": "BOTTLEROCKET_x86_64"}),
    ("disk_size", {"disk_size": 50}),
    ("remote_access", {"remote_access": {"ec2_ssh_key": "k", "source_security_group_ids": None}}),
    ("node_role", {"node_role_arn": ROLE}),
    ("subnets", {"subnets": SUBNETS[:1]}),
]
IN_PLACE_CHANGES = [
    ("scaling", {"scaling": {"min_size": 2, "max_size": 4, "desired_size": 3}}),
    ("labels", {"labels": {"a": "b"}}),
    ("taints", {"taints": [{"key": "k", "value": "v", "effect": "NO_SCHEDULE"}]}),
    ("update_config", {"update_config": {"max_unavailable": None, "max_unavailable_percentage": 25}}),
    ("version", {"version": "1.31"}),
    ("release_version", {"release_version": "1.30.9-20250101"}),
    ("tags", {"tags": {"team": "a"}}),
]


def test_the_field_table_covers_every_kind():
    kinds = {f: plan.NODEGROUP_FIELDS[f] for f, _change in IMMUTABLE_CHANGES}
    assert set(kinds.values()) == {plan.REPLACE}
    assert {plan.NODEGROUP_FIELDS[f] for f, _c in IN_PLACE_CHANGES} == {plan.CONFIG, plan.VERSION_UPDATE, plan.TAGS}


@pytest.mark.parametrize("field_name,change", IMMUTABLE_CHANGES)
def test_an_immutable_field_changes_the_template_hash(field_name, change):
    before, after = spec(), spec(**change)
    assert plan.definition_hash(definition(before)) != plan.definition_hash(definition(after))
    assert plan.NODEGROUP_FIELDS[field_name] == plan.REPLACE


@pytest.mark.parametrize("field_name,change", IN_PLACE_CHANGES)
def test_an_in_place_field_keeps_the_hash_and_makes_an_update(field_name, change):
    before, after = spec(), spec(**change)
    assert plan.definition_hash(definition(before)) == plan.definition_hash(definition(after))
    observed = observed_from(before, version="1.30", release="1.30.1-20240101")
    config, _reasons = plan.config_update(observed, after)
    version = plan.version_update(
        observed, after, plan.target_version(after.version, "1.31")[0] if after.version else "1.30"
    )
    kind = plan.NODEGROUP_FIELDS[field_name]
    assert bool(config) == (kind == plan.CONFIG)
    assert bool(version) == (kind == plan.VERSION_UPDATE)


def test_order_of_subnets_and_of_set_like_fields_does_not_matter():
    a = spec(subnets=SUBNETS)
    b = spec(subnets=list(reversed(SUBNETS)))
    assert plan.definition_hash(definition(a)) == plan.definition_hash(definition(b))


def test_immutable_differences_name_the_changed_fields_and_ignore_aws_defaults():
    before = spec(node_role_arn=ROLE)
    observed = observed_from(before, version="1.31")
    observed["remoteAccess"] = {"ec2SshKey": "eksKeypair"}  # moto's default when none was given
    assert plan.immutable_differences(definition(before), observed) == []
    changed = spec(instance_types=["m5.large"], capacity_type="SPOT", node_role_arn=ROLE)
    assert plan.immutable_differences(definition(changed), observed) == ["instance_types", "capacity_type"]


def observed_from(s: plan.NodegroupSpec, version: str = "1.31", release: str = "1.31.0-1", **over: Any) -> dict:
    """A DescribeNodegroup answer for a node group made from ``s``."""
    request = plan.create_request(s, s.pool, plan.private_subnet_ids(s.subnets), ROLE, version, {}, "t")
    observed = {k: v for k, v in nodegroup_tier._predicted_nodegroup(request).items() if v is not None}
    observed.update(nodegroupArn=f"arn:aws:eks:us-east-1:1:nodegroup/demo/{s.pool}/x", releaseVersion=release)
    observed.update(over)
    return observed


# deltas ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "current,desired,expected",
    [
        ({}, {}, None),
        ({"a": "1"}, {"a": "1"}, None),
        ({}, {"a": "1"}, {"addOrUpdateLabels": {"a": "1"}}),
        ({"a": "1", "b": "2"}, {"a": "3"}, {"addOrUpdateLabels": {"a": "3"}, "removeLabels": ["b"]}),
        ({"b": "2", "a": "1"}, {}, {"removeLabels": ["a", "b"]}),
        (None, {"a": "1"}, {"addOrUpdateLabels": {"a": "1"}}),
    ],
)
def test_label_changes(current, desired, expected):
    assert plan.label_changes(current, desired) == expected


T1 = {"key": "k", "value": "v", "effect": "NO_SCHEDULE"}


@pytest.mark.parametrize(
    "current,desired,expected",
    [
        ([], [], None),
        ([T1], [T1], None),
        ([], [T1], {"addOrUpdateTaints": [T1]}),
        ([T1], [], {"removeTaints": [T1]}),
        ([T1], [{**T1, "value": "w"}], {"addOrUpdateTaints": [{**T1, "value": "w"}]}),
        (
            [T1],
            [{**T1, "effect": "NO_EXECUTE"}],
            {"addOrUpdateTaints": [{**T1, "effect": "NO_EXECUTE"}], "removeTaints": [T1]},
        ),
        ([{"key": "k", "effect": "NO_SCHEDULE"}], [{"key": "k", "value": "", "effect": "NO_SCHEDULE"}], None),
    ],
)
def test_taint_changes(current, desired, expected):
    assert plan.taint_changes(current, desired) == expected


@pytest.mark.parametrize(
    "current,external,expected",
    [
        ({"minSize": 1, "maxSize": 3, "desiredSize": 2}, False, None),
        ({"minSize": 1, "maxSize": 3, "desiredSize": 3}, False, {"minSize": 1, "maxSize": 3, "desiredSize": 2}),
        ({"minSize": 1, "maxSize": 3, "desiredSize": 3}, True, None),  # the autoscaler's value stays
        ({"minSize": 1, "maxSize": 5, "desiredSize": 3}, True, {"minSize": 1, "maxSize": 3}),
    ],
)
def test_scaling_change(current, external, expected):
    assert plan.scaling_change(current, spec(externally_managed_replicas=external)) == expected


def test_update_config_absent_reads_as_aws_default():
    assert plan.update_config_change(None, {"maxUnavailable": 1}) is None
    assert plan.update_config_change(None, {"maxUnavailablePercentage": 20}) == {"maxUnavailablePercentage": 20}
    assert plan.update_config_change({"maxUnavailable": 2}, {"maxUnavailable": 1}) == {"maxUnavailable": 1}


def test_after_config_update_applies_the_request():
    observed = {"labels": {"a": "1", "b": "2"}, "taints": [T1], "scalingConfig": {"minSize": 1, "maxSize": 3}}
    request = {
        "labels": {"addOrUpdateLabels": {"c": "3"}, "removeLabels": ["a"]},
        "taints": {"removeTaints": [T1]},
        "scalingConfig": {"maxSize": 5},
    }
    after = plan.after_config_update(observed, request)
    assert after["labels"] == {"b": "2", "c": "3"} and after["taints"] == []
    assert after["scalingConfig"] == {"minSize": 1, "maxSize": 5}


# versions -------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "current,target,expected",
    [
        ("1.29", "1.31", "1.30"),
        ("1.30", "1.31", "1.31"),
        ("1.31", "1.31", None),
        ("1.32", "1.31", None),
        (None, "1.31", None),
    ],
)
def test_next_version_is_one_minor_step(current, target, expected):
    assert plan.next_version(current, target) == expected


def test_target_version_never_passes_the_cluster():
    assert plan.target_version(None, "1.31") == ("1.31", None)
    assert plan.target_version("1.30", "1.31") == ("1.30", None)
    version, warning = plan.target_version("1.32", "1.31")
    assert version == "1.31" and "newer than the cluster" in warning
    assert plan.target_version("v1.30", None) == ("1.30", None)


def test_version_update_order_launch_template_then_version_then_release():
    s = spec(launch_template={"id": "lt-1", "name": None, "version": "3"}, release_version="1.31.2-20250101")
    observed = observed_from(s, version="1.30", launchTemplate={"id": "lt-1", "name": "t", "version": "2"})
    request, reason = plan.version_update(observed, s, "1.31")
    assert request == {"launchTemplate": {"id": "lt-1", "name": "t", "version": "3"}} and "launch template" in reason
    observed = plan.after_version_update(observed, request)
    request, _reason = plan.version_update(observed, s, "1.31")
    assert request == {"version": "1.31", "releaseVersion": "1.31.2-20250101"}
    observed = plan.after_version_update(observed, {"version": "1.31", "releaseVersion": "1.31.0-1"})
    request, _reason = plan.version_update(observed, s, "1.31")
    assert request == {"version": "1.31", "releaseVersion": "1.31.2-20250101"}
    observed = plan.after_version_update(observed, request)
    assert plan.version_update(observed, s, "1.31") is None


# names ---------------------------------------------------------------------------------------------------------------
def test_member_names():
    assert plan.member_name("md-0", "abcdef1234", [], first=True) == "md-0"
    assert plan.member_name("md-0", "abcdef1234", ["md-0"], first=False) == "md-0-abcd"
    assert plan.member_name("md-0", "abcdef1234", ["md-0-abcd"], first=False) == "md-0-abcdef12"
    assert plan.member_name("md-0", "abcdef1234", [], first=False) == "md-0-abcd"
    with pytest.raises(SpecError):
        plan.member_name("md-0", "abcdef1234", ["md-0-abcd", "md-0-abcdef12"], first=False)


@pytest.mark.parametrize(
    "name,expected",
    [
        ("md-0", True),
        ("md-0-ab12", True),
        ("md-0-ab12cd34", True),
        ("md-0-x", False),
        ("md-0-zzzz", False),
        ("md-1", False),
    ],
)
def test_may_be_member(name, expected):
    assert plan.may_be_member("md-0", name) is expected


def test_role_names_fit_64_characters_and_stay_unique():
    assert plan.role_name("demo", "md-0", "nodegroup") == "demo-md-0-nodegroup-iam-service-role"
    long_a = plan.role_name("c" * 40, "pool-a" * 5, "nodegroup")
    long_b = plan.role_name("c" * 40, "pool-b" * 5, "nodegroup")
    assert len(long_a) <= 64 and len(long_b) <= 64 and long_a != long_b
    assert long_a.endswith("-nodegroup-iam-service-role")


# validation ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "over,field_name",
    [
        ({"name": "-bad"}, "name"),
        ({"name": "x" * 55}, "name"),
        ({"scaling": {"min_size": 3, "max_size": 2, "desired_size": 2}}, "scaling"),
        ({"scaling": {"min_size": 1, "max_size": 3, "desired_size": 5}}, "scaling.desired_size"),
        ({"version": "1.31.2"}, "version"),
        ({"version": "1.31", "release_version": "1.30.1-2024"}, "release_version"),
        ({"launch_template": {"id": "lt-1", "name": "x", "version": None}}, "launch_template"),
        ({"launch_template": {"id": "lt-1", "name": None, "version": None}, "disk_size": 30}, "disk_size"),
        (
            {"launch_template": {"id": "lt-1", "name": None, "version": None}, "remote_access": {"ec2_ssh_key": "k"}},
            "remote_access",
        ),
        ({"remote_access": {"ec2_ssh_key": None, "source_security_group_ids": ["sg-1"]}}, "remote_access.ec2_ssh_key"),
        ({"ami_type": "CUSTOM"}, "ami_type"),
        ({"taints": [T1, {**T1, "value": "other"}]}, "taints[1]"),
        (
            {"update_config": {"max_unavailable": None, "max_unavailable_percentage": 0}},
            "update_config.max_unavailable_percentage",
        ),
        ({"node_role_arn": "nodes"}, "node_role_arn"),
        ({"subnets": [{"id": "sub-1"}]}, "subnets[0].id"),
        ({"tags": {"aws:x": "1"}}, "tags.aws:x"),
    ],
)
def test_bad_node_group_input(over, field_name):
    with pytest.raises(SpecError) as error:
        plan.validate_nodegroup(spec(**over))
    assert error.value.field == field_name


def test_launch_template_drops_the_defaults_it_owns():
    s = spec(launch_template={"id": "lt-1", "name": None, "version": "2"})
    plan.validate_nodegroup(s)
    request = plan.create_request(s, "md-0", PRIVATE, ROLE, "1.31", {}, "t")
    assert "diskSize" not in request and "instanceTypes" not in request and "amiType" not in request
    assert request["launchTemplate"] == {"id": "lt-1", "version": "2"}


def fparams(**over: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "state": "present",
        "name": "system",
        "eks_cluster_name": "demo-eks",
        "pod_execution_role_arn": None,
        "subnets": [],
        "selectors": [{"namespace": "kube-system", "labels": None}],
        "tags": {},
    }
    base.update(over)
    return base


@pytest.mark.parametrize(
    "over,field_name",
    [
        ({"selectors": []}, "selectors"),
        ({"selectors": [{"namespace": f"n{i}", "labels": None} for i in range(6)]}, "selectors"),
        ({"selectors": [{"namespace": "a", "labels": {f"k{i}": "v" for i in range(6)}}]}, "selectors[0].labels"),
        ({"subnets": [SUBNETS[1]]}, "subnets[0]"),
        ({"pod_execution_role_arn": "role"}, "pod_execution_role_arn"),
        ({"name": "_x"}, "name"),
    ],
)
def test_bad_fargate_input(over, field_name):
    with pytest.raises(SpecError) as error:
        plan.validate_fargate(plan.FargateSpec.from_params(fparams(**over)))
    assert error.value.field == field_name


def test_fargate_hash_ignores_selector_order_and_tags():
    a = plan.FargateSpec.from_params(
        fparams(selectors=[{"namespace": "a", "labels": None}, {"namespace": "b", "labels": {"x": "1"}}])
    )
    b = plan.FargateSpec.from_params(
        fparams(
            selectors=[{"namespace": "b", "labels": {"x": "1"}}, {"namespace": "a", "labels": None}], tags={"t": "1"}
        )
    )
    h = [plan.definition_hash(plan.fargate_definition(s, PRIVATE, "r")) for s in (a, b)]
    assert h[0] == h[1]
    c = plan.FargateSpec.from_params(fparams(selectors=[{"namespace": "a", "labels": {"y": "2"}}]))
    assert plan.definition_hash(plan.fargate_definition(c, PRIVATE, "r")) != h[0]


# AWS paths moto cannot produce (Stubber) ----------------------------------------------------------------------------
class _Session:
    region = "us-east-1"

    def __init__(self, clients: dict[str, RetryingClient]) -> None:
        self.clients = clients

    def client(self, name: str) -> RetryingClient:
        return self.clients[name]


@pytest.fixture
def eks(monkeypatch):
    monkeypatch.setattr(nodegroup_tier, "POLL_DELAY", 0.0)
    monkeypatch.setattr(fargate_tier, "POLL_DELAY", 0.0)
    raw = boto3.client("eks", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    with Stubber(raw) as stub:
        yield raw, stub
        stub.assert_no_pending_responses()


def context(raw, check_mode: bool = False) -> Context:
    return Context(
        session=_Session({"eks": RetryingClient(raw, retries=1)}),
        cluster=CLUSTER,
        check_mode=check_mode,
        wait_timeout=30,
    )


ACTIVE_CLUSTER = {
    "cluster": {"name": "demo", "status": "ACTIVE", "version": "1.31", "resourcesVpcConfig": {"subnetIds": PRIVATE}}
}


def owned_tags(s: plan.NodegroupSpec, digest: str, ctx: Context, **extra: str) -> dict[str, str]:
    return nodegroup_tier.member_tags(ctx, s.eks_cluster, plan.NODE_GROUP_TAG, s.pool, digest, {**s.tags, **extra})


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
    before, after = nodegroup_tier.NodegroupTier().reconcile(
        ctx, params(node_role_arn=ROLE, tags={"team": "a"}, eks_cluster_name="demo")
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
    p = params(node_role_arn=ROLE, eks_cluster_name="demo", release_version="1.31.4-20250101")
    s = plan.NodegroupSpec.from_params(p)
    observed = observed_from(s, version="1.29", tags=owned_tags(s, plan.definition_hash(definition(s)), ctx))
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "demo"})
    stub.add_response("list_nodegroups", {"nodegroups": ["md-0"]}, {"clusterName": "demo"})
    stub.add_response("describe_nodegroup", {"nodegroup": observed}, {"clusterName": "demo", "nodegroupName": "md-0"})
    _before, after = nodegroup_tier.NodegroupTier().reconcile(ctx, p)
    assert [p.reason for p in ctx.ops.plan] == ["version 1.29 -> 1.30", "version 1.30 -> 1.31"]
    assert after["nodegroup"]["release_version"] == "1.31.4-20250101"


def test_replacement_waits_for_active_before_deleting_the_old_group(eks, monkeypatch):
    """CREATING -> ACTIVE, then the old group DELETING -> gone (moto makes both instant); with a given node role
    the role the pool may have owned before is deleted once the old group is gone."""
    raw, stub = eks
    deleted_roles = []
    monkeypatch.setattr(nodegroup_tier, "delete_owned_role", lambda ctx, name: deleted_roles.append(name))
    ctx = context(raw)
    p = params(node_role_arn=ROLE, eks_cluster_name="demo", instance_types=["m5.large"])
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
    _before, after = nodegroup_tier.NodegroupTier().reconcile(ctx, p)
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
        nodegroup_tier.NodegroupTier().reconcile(ctx, p)


def test_missing_cluster_is_an_error_outside_check_mode(eks):
    raw, stub = eks
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    with pytest.raises(ReconcileError, match="not found"):
        nodegroup_tier.NodegroupTier().reconcile(context(raw), params(node_role_arn=ROLE))


def test_fargate_tags_are_added_in_place_and_creation_waited_for(eks):
    """TagResource on a profile ARN (moto answers ResourceNotFound there) and a profile still CREATING."""
    raw, stub = eks
    ctx = context(raw)
    p = fparams(pod_execution_role_arn=ROLE, subnets=[SUBNETS[0]], tags={"team": "b"})
    s = plan.FargateSpec.from_params(p)
    digest = plan.definition_hash(plan.fargate_definition(s, [SUBNETS[0]["id"]], ROLE))
    tags = nodegroup_tier.member_tags(ctx, "demo-eks", plan.FARGATE_PROFILE_TAG, "system", digest, {"team": "a"})
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
    _before, after = fargate_tier.FargateProfileTier().reconcile(ctx, p)
    assert after["fargate_profile"]["status"] == "ACTIVE" and after["fargate_profile"]["replaced_from"] == []
    assert [c.call for c in ctx.ops.plan] == ["eks:TagResource"]


def test_fargate_absent_deletes_one_profile_at_a_time(eks, monkeypatch):
    raw, stub = eks
    deleted_roles = []
    monkeypatch.setattr(fargate_tier, "delete_owned_role", lambda ctx, name: deleted_roles.append(name))
    ctx = context(raw)
    tags = nodegroup_tier.member_tags(ctx, "demo-eks", plan.FARGATE_PROFILE_TAG, "system", "h", {})
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
    _before, after = fargate_tier.FargateProfileTier().reconcile(ctx, fparams(state="absent"))
    assert after["fargate_profile"] is None
    assert [c.call for c in ctx.ops.plan] == ["eks:DeleteFargateProfile"] * 2
    assert deleted_roles == [f"{CLUSTER}-system-fargate-iam-service-role"]


def test_a_cluster_still_creating_is_waited_for(eks):
    raw, stub = eks
    stub.add_response(
        "describe_cluster", {"cluster": {**ACTIVE_CLUSTER["cluster"], "status": "CREATING"}}, {"name": "c"}
    )
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "c"})
    assert nodegroup_tier.ready_cluster(context(raw), "c")["status"] == "ACTIVE"
    stub.add_response("describe_cluster", {"cluster": {**ACTIVE_CLUSTER["cluster"], "status": "FAILED"}}, {"name": "c"})
    with pytest.raises(ReconcileError, match="FAILED"):
        nodegroup_tier.ready_cluster(context(raw), "c")


def test_check_mode_plans_a_node_group_for_a_cluster_not_made_yet(eks):
    """A whole-cluster check run: the EKS cluster is only planned, subnets are placeholders."""
    raw, stub = eks
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    ctx = context(raw, check_mode=True)
    subnets = [{"id": "planned:subnet:demo-subnet-private-us-east-1a", "is_public": False}]
    _before, after = nodegroup_tier.NodegroupTier().reconcile(
        ctx, params(node_role_arn=ROLE, subnets=subnets, version="1.31")
    )
    assert [c.call for c in ctx.ops.plan] == ["eks:CreateNodegroup"]
    assert after["nodegroup"]["arn"] == "planned:nodegroup:md-0" and after["nodegroup"]["version"] == "1.31"
