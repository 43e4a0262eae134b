# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/nodegroup_plan.py: the pure decisions of node groups and Fargate profiles - which field changes how, the
label/taint/scaling deltas, version steps, names, validation, template hashes (no AWS, no Stubber)."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import nodegroup_plan as plan
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError

from .member_stubs import PRIVATE, ROLE, SUBNETS, definition, fparams, observed_from, spec

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
