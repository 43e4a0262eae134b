# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Unit tests of the machine pool's pure decisions (asg_plan.py): defaults, validation, launch template drift,
version pruning, the group's request and drift, processes, hooks and conditions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import validated
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import asg
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import asg_plan as plan
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.ami import Image
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import BOOTSTRAP_TAG, BootstrapRef

SUBNETS = [
    {"id": "subnet-0000000000000000a", "availability_zone": "us-east-1a", "is_public": True},
    {"id": "subnet-0000000000000000b", "availability_zone": "us-east-1a", "is_public": False},
    {"id": "subnet-0000000000000000c", "availability_zone": "us-east-1b", "is_public": False},
]
IMAGE = Image("ami-0123456789abcdef0", "capa-ami", "/dev/sda1", 8, "x86_64")


# capa_asg's argument spec, with the option of every module the tier reads: parameters as the module gets them.
MODULE_SPEC = {"state": {"type": "str", "default": "present"}, **asg.module_argument_spec()}


def params(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "state": "present",
        "name": "pool-0",
        "subnets": SUBNETS,
        "instance_type": "t3.large",
        "kubernetes_version": "v1.31.2",
        "bootstrap": {"type": "raw", "data": "#cloud-config\n"},
    }
    base.update(extra)
    return validated(MODULE_SPEC, base)


def spec(**extra: Any) -> plan.PoolSpec:
    return plan.PoolSpec.from_params(params(**extra), "mp-0-drain")


# defaults and validation -------------------------------------------------------------------------------------------
def test_defaults_are_the_safer_ones():
    s = spec()
    assert (s.min_size, s.max_size, s.desired_capacity, s.externally_managed) == (1, 1, None, False)
    assert s.failure_domains == ["us-east-1a", "us-east-1b"]
    assert s.zone_subnet_ids() == ["subnet-0000000000000000b", "subnet-0000000000000000c"]
    assert s.machine.metadata_options()["HttpTokens"] == "required"
    assert s.refresh == {"disable": False, "min_healthy_percentage": 90, "instance_warmup": None}
    assert (s.default_cooldown, s.default_instance_warmup) == (300, 300)
    assert s.hooks == [] and s.drain_on_scale_in is False


@pytest.mark.parametrize(
    "extra, drain",
    [
        ({"spot_market_options": {"max_price": ""}}, True),
        (
            {"mixed_instances_policy": {"instances_distribution": {"on_demand_percentage_above_base_capacity": 20}}},
            True,
        ),
        ({"mixed_instances_policy": {"overrides": [{"instance_type": "m5.large"}]}}, False),
        ({"spot_market_options": {}, "drain_on_scale_in": False}, False),
        ({"drain_on_scale_in": True}, True),
    ],
)
def test_drain_hook_on_with_spot_by_default(extra, drain):
    s = plan.PoolSpec.from_params(params(**extra), drain_hook_name="watcher-drain")
    assert s.drain_on_scale_in is drain
    hooks = [h for h in s.hooks if h["name"] == "watcher-drain"]
    if drain:
        assert hooks == [s.drain_hook()]
        assert (hooks[0]["lifecycle_transition"], hooks[0]["default_result"], hooks[0]["heartbeat_timeout"]) == (
            plan.TERMINATING,
            "CONTINUE",
            300,
        )
    else:
        assert hooks == []


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"name": "ab"}, "name"),
        ({"name": "Pool_0"}, "name"),
        ({"min_size": -1}, "min_size"),
        ({"min_size": 3, "max_size": 2}, "max_size"),
        ({"min_size": 1, "max_size": 3, "desired_capacity": 4}, "desired_capacity"),
        ({"instance_type": None}, "instance_type"),
        ({"kubernetes_version": None}, "kubernetes_version"),
        ({"kubernetes_version": "1.31"}, "kubernetes_version"),
        ({"root_volume": {"size": 4}}, "root_volume.size"),
        ({"imds": {"http_put_response_hop_limit": 65}}, "imds.http_put_response_hop_limit"),
        ({"spot_market_options": {}, "mixed_instances_policy": {"overrides": []}}, "spot_market_options"),
        (
            {"mixed_instances_policy": {"instances_distribution": {"on_demand_percentage_above_base_capacity": 101}}},
            "mixed_instances_policy.instances_distribution.on_demand_percentage_above_base_capacity",
        ),
        ({"refresh_preferences": {"min_healthy_percentage": 120}}, "refresh_preferences.min_healthy_percentage"),
        ({"default_cooldown": -1}, "default_cooldown"),
        ({"lifecycle_hooks": [{"name": "a"}, {"name": "a"}]}, "lifecycle_hooks[1].name"),
        ({"lifecycle_hooks": [{"name": "a", "heartbeat_timeout": 10}]}, "lifecycle_hooks[0].heartbeat_timeout"),
        ({"bootstrap": {"type": "kubeadm"}}, "bootstrap.endpoint_host"),
        ({"bootstrap": {"type": "raw"}}, "bootstrap.data"),
        ({"failure_domains": ["us-east-1c"]}, "failure_domains[0]"),
        ({"failure_domains": ["eu-west-1a"]}, "failure_domains[0]"),
        ({"subnets": [{"id": "subnet-0000000000000000b"}]}, "subnets[0]"),
        ({"security_group_ids": ["group"]}, "security_group_ids[0]"),
    ],
)
def test_bad_input_names_the_field(extra, field):
    with pytest.raises(SpecError) as caught:
        plan.validate(spec(**extra), "us-east-1")
    assert caught.value.field == field


def test_externally_managed_desired_capacity_must_fit_too_and_absent_skips_machine_checks():
    """With cluster-autoscaler owning the size, the desired capacity is still the group's first size: AWS refuses a
    CreateAutoScalingGroup outside min..max, so the module does first (the rule the cluster spec shares)."""
    with pytest.raises(SpecError, match="desired_capacity: 5 is not between min_size 1 and max_size 3"):
        plan.validate(spec(externally_managed_replicas=True, desired_capacity=5, max_size=3), "us-east-1")
    plan.validate(spec(externally_managed_replicas=True, desired_capacity=3, max_size=3), "us-east-1")
    plan.validate(spec(state="absent", instance_type=None, kubernetes_version=None), "us-east-1")


# launch template ---------------------------------------------------------------------------------------------------
def data_for(s: plan.PoolSpec, tags: dict[str, str] | None = None, user_data: str | None = "hook") -> dict:
    ref = "secrets-manager:aws.cluster.x-k8s.io/u:1"
    default = {"Name": "pool-0", plan.BOOTSTRAP_HASH_TAG: "h1", BOOTSTRAP_TAG: ref}
    return s.machine.launch_template_data(IMAGE, tags=default if tags is None else tags, user_data=user_data)


def test_launch_template_data_has_imdsv2_encrypted_root_and_instance_and_volume_tags():
    data = data_for(spec(ssh_key_name="k", iam_instance_profile="nodes", security_group_ids=["sg-0123456789abcdef0"]))
    assert data["MetadataOptions"] == {
        "HttpTokens": "required",
        "HttpPutResponseHopLimit": 1,
        "HttpEndpoint": "enabled",
    }
    assert data["BlockDeviceMappings"][0] == {
        "DeviceName": "/dev/sda1",
        "Ebs": {"VolumeSize": 8, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True},
    }
    assert [t["ResourceType"] for t in data["TagSpecifications"]] == ["instance", "volume"]
    assert data["KeyName"] == "k" and data["IamInstanceProfile"] == {"Name": "nodes"}
    assert "InstanceMarketOptions" not in data
    spot = data_for(spec(spot_market_options={"max_price": "0.05"}))["InstanceMarketOptions"]
    assert spot == {
        "MarketType": "spot",
        "SpotOptions": {
            "SpotInstanceType": "one-time",
            "InstanceInterruptionBehavior": "terminate",
            "MaxPrice": "0.05",
        },
    }


def with_moto_copy(data: dict) -> dict:
    """What moto answers for version 1: the template's own tags copied into the data."""
    copied = copy.deepcopy(data)
    copied["TagSpecifications"].append({"ResourceType": "launch-template", "Tags": [{"Key": "x", "Value": "y"}]})
    return copied


def changed(data: dict, **fields: Any) -> dict:
    copied = copy.deepcopy(data)
    copied.update(fields)
    return copied


def retag(data: dict, **tags: str) -> dict:
    copied = copy.deepcopy(data)
    for spec_ in copied["TagSpecifications"]:
        spec_["Tags"] = [t for t in spec_["Tags"] if t["Key"] not in tags] + [
            {"Key": k, "Value": v} for k, v in tags.items()
        ]
    return copied


BASE = data_for(spec())


@pytest.mark.parametrize(
    "current, differences, refresh",
    [
        (BASE, [], False),
        (with_moto_copy(BASE), [], False),
        # a new random prefix for the entries is not a change; a new hash is
        (retag(BASE, **{BOOTSTRAP_TAG: "secrets-manager:aws.cluster.x-k8s.io/other:2"}), [], False),
        (retag(BASE, **{plan.BOOTSTRAP_HASH_TAG: "h0"}), ["bootstrap_data"], False),
        (retag(BASE, **{BOOTSTRAP_TAG: "ssm-parameter-store:/cluster.x-k8s.io/u:1"}), ["bootstrap_data"], False),
        (changed(BASE, UserData="b3RoZXI="), [], False),
        (changed(BASE, InstanceType="t3.small"), ["instance_type"], True),
        (changed(BASE, ImageId="ami-00000000000000000"), ["image"], True),
        (changed(BASE, SecurityGroupIds=["sg-0123456789abcdef0"]), ["security_groups"], True),
        (changed(BASE, MetadataOptions={"HttpTokens": "optional"}), ["imds"], True),
        (retag(BASE, team="a"), ["tags"], True),
        (
            changed(retag(BASE, **{plan.BOOTSTRAP_HASH_TAG: "h0"}), InstanceType="t3.small"),
            ["instance_type", "bootstrap_data"],
            True,
        ),
        (None, ["launch_template"], False),
    ],
)
def test_template_differences_and_refresh(current, differences, refresh):
    found = plan.template_differences(BASE, current)
    assert found == differences
    assert plan.needs_refresh(found) is refresh


def test_security_group_order_is_not_a_change():
    two = ["sg-0123456789abcdef0", "sg-0123456789abcdef1"]
    assert (
        plan.template_differences(data_for(spec(security_group_ids=two)), data_for(spec(security_group_ids=two[::-1])))
        == []
    )


@pytest.mark.parametrize(
    "numbers, default, latest, pruned",
    [
        ([1], 1, 1, []),
        ([1, 2, 3], 1, 3, []),
        ([1, 2, 3, 4], 1, 4, [2]),
        ([1, 3, 4, 5, 6], 1, 6, [3, 4]),
        ([2, 3, 4], 3, 4, [2]),
        ([5, 6, 7], 7, 7, [5]),
    ],
)
def test_versions_to_prune_keep_default_latest_and_one_before(numbers, default, latest, pruned):
    assert plan.versions_to_prune(numbers, default, latest) == pruned


def test_bootstrap_ref_of_a_version():
    assert plan.bootstrap_ref_of(BASE) == BootstrapRef("secrets-manager", "aws.cluster.x-k8s.io/u", 1)
    assert plan.bootstrap_ref_of({"TagSpecifications": []}) is None


def test_bootstrap_hash_is_sha256_of_the_raw_data():
    assert plan.bootstrap_hash(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert plan.bootstrap_hash(None) == ""


# auto scaling group ------------------------------------------------------------------------------------------------
MIXED = {
    "instances_distribution": {"on_demand_base_capacity": 1, "on_demand_percentage_above_base_capacity": 25},
    "overrides": [{"instance_type": "m5.large"}, {"instance_type": "m6i.large"}],
}


def test_create_request_tags_do_not_propagate_and_launch_latest():
    request = plan.create_request(spec(desired_capacity=1), "pool-0", {"a": "b"})
    assert request["LaunchTemplate"] == {"LaunchTemplateName": "pool-0", "Version": "$Latest"}
    assert request["VPCZoneIdentifier"] == "subnet-0000000000000000b,subnet-0000000000000000c"
    assert request["Tags"] == [
        {
            "Key": "a",
            "Value": "b",
            "PropagateAtLaunch": False,
            "ResourceId": "pool-0",
            "ResourceType": "auto-scaling-group",
        }
    ]
    assert request["DesiredCapacity"] == 1
    assert "DesiredCapacity" not in plan.create_request(spec(), "pool-0", {})
    mixed = plan.create_request(spec(mixed_instances_policy=MIXED), "pool-0", {})["MixedInstancesPolicy"]
    assert mixed["LaunchTemplate"]["Overrides"] == [{"InstanceType": "m5.large"}, {"InstanceType": "m6i.large"}]
    assert mixed["InstancesDistribution"] == {
        "OnDemandAllocationStrategy": "prioritized",
        "OnDemandBaseCapacity": 1,
        "OnDemandPercentageAboveBaseCapacity": 25,
        "SpotAllocationStrategy": "lowest-price",
    }
    assert "LaunchTemplate" not in plan.create_request(spec(mixed_instances_policy=MIXED), "pool-0", {})


def group_as_aws(s: plan.PoolSpec, **changes: Any) -> dict[str, Any]:
    request = plan.create_request(s, "pool-0", {})
    group = {k: v for k, v in request.items() if k != "Tags"}
    group.setdefault("DesiredCapacity", s.min_size)
    if "LaunchTemplate" in group:
        group["LaunchTemplate"] = {**group["LaunchTemplate"], "LaunchTemplateId": "lt-1"}
    group.update(changes)
    return group


@pytest.mark.parametrize(
    "extra, drift, names",
    [
        ({}, {}, []),
        ({}, {"VPCZoneIdentifier": "subnet-0000000000000000c,subnet-0000000000000000b"}, []),
        ({}, {"MaxSize": 5}, ["MaxSize"]),
        ({"desired_capacity": 2, "max_size": 3}, {"DesiredCapacity": 3}, ["DesiredCapacity"]),
        ({"desired_capacity": 2, "max_size": 3, "externally_managed_replicas": True}, {"DesiredCapacity": 3}, []),
        ({}, {"DesiredCapacity": 1}, []),
        ({}, {"DefaultInstanceWarmup": 60}, ["DefaultInstanceWarmup"]),
        ({}, {"CapacityRebalance": True}, ["CapacityRebalance"]),
        ({"mixed_instances_policy": MIXED}, {}, []),
        (
            {"mixed_instances_policy": MIXED},
            {"MixedInstancesPolicy": None},
            ["launch template / mixed instances policy"],
        ),
        (
            {},
            {"LaunchTemplate": {"LaunchTemplateName": "pool-0", "Version": "1"}},
            ["launch template / mixed instances policy"],
        ),
    ],
)
def test_group_update_only_for_drift(extra, drift, names):
    s = spec(**extra)
    group = group_as_aws(s, **drift)
    if "DefaultInstanceWarmup" not in drift:
        group.pop("DefaultInstanceWarmup")  # moto never reports it; that must not be drift
    update, found = plan.group_update(s, "pool-0", group)
    assert found == names
    if names:
        assert update["AutoScalingGroupName"] == "pool-0"
        assert ("MixedInstancesPolicy" in update) == (s.mixed is not None)  # the launch part always travels
    else:
        assert update == {}
    if s.externally_managed:
        assert "DesiredCapacity" not in update


@pytest.mark.parametrize(
    "extra, current, after",
    [
        ({"desired_capacity": 2, "max_size": 3}, 3, 2),
        ({"desired_capacity": 2, "max_size": 3, "externally_managed_replicas": True}, 3, 3),
        ({"max_size": 2, "externally_managed_replicas": True}, 5, 2),
        ({"min_size": 2, "max_size": 4}, 1, 2),
    ],
)
def test_desired_after(extra, current, after):
    assert plan.desired_after(spec(**extra), {"DesiredCapacity": current}) == after


def test_process_and_hook_changes():
    group = {"SuspendedProcesses": [{"ProcessName": "AZRebalance"}, {"ProcessName": "Launch"}]}
    assert plan.process_changes(["AZRebalance", "HealthCheck"], group) == (["HealthCheck"], ["Launch"])
    s = plan.PoolSpec.from_params(params(spot_market_options={}, lifecycle_hooks=[{"name": "mine"}]), "drain")
    # moto fills in a target and a role nobody asked for: that must not be drift
    current = [
        {
            **plan.hook_request("pool-0", s.drain_hook()),
            "NotificationTargetARN": "arn:aws:sqs:us-east-1:123456789012:my-queue",
            "RoleARN": "arn:aws:iam::1234567890:role/my-auto-scaling-role",
        },
        {"LifecycleHookName": "stale", "LifecycleTransition": plan.LAUNCHING},
    ]
    put, delete = plan.hook_changes(s.hooks, current)
    assert [h["name"] for h in put] == ["mine"] and delete == ["stale"]
    assert plan.hook_request("pool-0", put[0])["DefaultResult"] == "ABANDON"
    assert plan.hook_request("pool-0", put[0])["HeartbeatTimeout"] == 3600


def test_conditions():
    found = plan.conditions(True, {"Status": "Delete in progress"}, None, "InstanceRefreshDisabled")
    assert found == {
        "ASGReady": {"status": False, "reason": "ASGDeletionInProgress"},
        "LaunchTemplateReady": {"status": True, "reason": ""},
        "InstanceRefreshStarted": {"status": False, "reason": "InstanceRefreshDisabled"},
    }
    assert plan.conditions(False, None, {"id": "r"}, "")["ASGReady"]["reason"] == "ASGNotFound"
    assert plan.conditions(False, None, {"id": "r"}, "")["InstanceRefreshStarted"]["status"] is True
