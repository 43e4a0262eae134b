# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""EC2 Fleet pools: the pure plan (fleet_plan.py) - overrides, capacity split, template hash, validation, drift."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import validated
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import fleet
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import fleet_plan as fp

SUBNETS = [
    {"id": "subnet-0000000000000000a", "availability_zone": "us-east-1a", "is_public": False},
    {"id": "subnet-0000000000000000b", "availability_zone": "us-east-1a", "is_public": True},
    {"id": "subnet-0000000000000000c", "availability_zone": "us-east-1b", "is_public": False},
]


# capa_fleet's argument spec, with the option of every module the tier reads: parameters as the module gets them.
MODULE_SPEC = {"state": {"type": "str", "default": "present"}, **fleet.module_argument_spec()}


def params(**extra):
    base = {
        "state": "present",
        "name": "pool-0",
        "subnets": SUBNETS,
        "total_target_capacity": 3,
        "on_demand_target_capacity": 1,
        "instance_types": ["m5.large", "m5a.large"],
        "kubernetes_version": "v1.31.2",
        "bootstrap": {"type": "raw", "data": "#cloud-config\n"},
    }
    base.update(extra)
    return validated(MODULE_SPEC, base)


# pure --------------------------------------------------------------------------------------------------------------
def test_overrides_are_every_type_in_every_subnet():
    subnets = fp.FleetSpec.from_params(params()).pool_subnets()
    assert [s["id"] for s in subnets] == ["subnet-0000000000000000a", "subnet-0000000000000000c"]
    assert fp.FleetSpec.from_params(params()).machine.fleet_overrides(subnets, ["m5.large", "m5a.large"]) == [
        {"InstanceType": "m5.large", "SubnetId": "subnet-0000000000000000a"},
        {"InstanceType": "m5.large", "SubnetId": "subnet-0000000000000000c"},
        {"InstanceType": "m5a.large", "SubnetId": "subnet-0000000000000000a"},
        {"InstanceType": "m5a.large", "SubnetId": "subnet-0000000000000000c"},
    ]


def test_failure_domains_limit_the_subnets():
    spec = fp.FleetSpec.from_params(params(failure_domains=["us-east-1b"]))
    assert [s["id"] for s in spec.pool_subnets()] == ["subnet-0000000000000000c"]


@pytest.mark.parametrize(
    "total, on_demand, default, expected",
    [
        (3, 1, "spot", (3, 1, 2)),
        (3, 0, "spot", (3, 0, 3)),
        (3, 3, "spot", (3, 3, 0)),
        (4, 1, "on-demand", (4, 1, 0)),
        (0, 0, "spot", (0, 0, 0)),
    ],
)
def test_capacity_split(total, on_demand, default, expected):
    capacity = fp.target_capacity(total, on_demand, default)
    assert (
        capacity["TotalTargetCapacity"],
        capacity["OnDemandTargetCapacity"],
        capacity["SpotTargetCapacity"],
    ) == expected
    assert capacity["DefaultTargetCapacityType"] == default


def test_defaults():
    spec = fp.FleetSpec.from_params(params())
    assert spec.machine.instance_type == "m5.large"
    assert spec.default_target_capacity_type == "spot"
    assert spec.spot_allocation_strategy == "price-capacity-optimized"
    assert spec.machine.imds.as_dict() == {"http_tokens": "required", "http_put_response_hop_limit": 1}
    assert spec.failure_domains == ["us-east-1a", "us-east-1b"]


def test_template_hash_follows_the_definition_not_the_capacity():
    base = fp.FleetSpec.from_params(params()).template_hash("ami-1")
    assert fp.FleetSpec.from_params(params(total_target_capacity=9)).template_hash("ami-1") == base
    assert fp.FleetSpec.from_params(params()).template_hash("ami-2") != base
    assert fp.FleetSpec.from_params(params(instance_type="c5.large")).template_hash("ami-1") != base
    changed_doc = params(bootstrap={"type": "raw", "data": "#cloud-config\nruncmd: [x]\n"})
    assert fp.FleetSpec.from_params(changed_doc).template_hash("ami-1") != base


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"name": "Pool_0"}, "name"),
        ({"total_target_capacity": -1}, "total_target_capacity"),
        ({"on_demand_target_capacity": 4}, "on_demand_target_capacity"),
        ({"instance_types": []}, "instance_types"),
        ({"instance_types": ["m5.large", "m5.large"]}, "instance_types"),
        ({"instance_types": ["large"]}, "instance_types[0]"),
        ({"kubernetes_version": None}, "kubernetes_version"),
        ({"bootstrap": {"type": "kubeadm"}}, "bootstrap.endpoint_host"),
        ({"bootstrap": {"type": "raw"}}, "bootstrap.data"),
        ({"root_volume": {"size": 4}}, "root_volume.size"),
        ({"imds": {"http_put_response_hop_limit": 65}}, "imds.http_put_response_hop_limit"),
        ({"subnets": [SUBNETS[1]]}, "subnets"),
        ({"subnets": [{"id": "subnet-0000000000000000a"}]}, "subnets[0]"),
        ({"failure_domains": ["us-east-1c"]}, "failure_domains[0]"),
        ({"failure_domains": ["eu-west-1a"]}, "failure_domains[0]"),
        ({"security_group_ids": ["nope"]}, "security_group_ids[0]"),
        ({"instance_types": [f"m5.{i}xlarge" for i in range(151)]}, "instance_types"),
    ],
)
def test_validation(extra, field):
    with pytest.raises(SpecError) as error:
        fp.validate(fp.FleetSpec.from_params(params(**extra)), "us-east-1")
    assert error.value.field == field


def test_absent_needs_only_a_name():
    fp.validate(fp.FleetSpec.from_params(validated(MODULE_SPEC, {"state": "absent", "name": "pool-0"})), "us-east-1")


def desired(**extra):
    spec = fp.FleetSpec.from_params(params(**extra))
    return {
        "LaunchTemplateConfigs": fp.launch_template_configs("lt-1", 2, spec),
        "TargetCapacitySpecification": fp.target_capacity(3, 1, "spot"),
        "SpotOptions": {"AllocationStrategy": "price-capacity-optimized"},
        "ReplaceUnhealthyInstances": True,
    }


def observed(**changes):
    fleet = {
        "FleetId": "fleet-1",
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-1", "Version": "2"},
                # AWS's order may differ from ours: overrides compare as a set.
                "Overrides": list(reversed(desired()["LaunchTemplateConfigs"][0]["Overrides"])),
            }
        ],
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 3,
            "OnDemandTargetCapacity": 1,
            "SpotTargetCapacity": 2,
            "DefaultTargetCapacityType": "spot",
        },
        "SpotOptions": {"AllocationStrategy": "price-capacity-optimized"},
        "ReplaceUnhealthyInstances": True,
    }
    fleet.update(changes)
    return fleet


def test_no_drift():
    assert fp.drift(observed(), desired()) == ([], [])


@pytest.mark.parametrize(
    "changes, modifiable, immutable",
    [
        (
            {
                "TargetCapacitySpecification": {
                    "TotalTargetCapacity": 5,
                    "OnDemandTargetCapacity": 1,
                    "DefaultTargetCapacityType": "spot",
                }
            },
            ["total_target_capacity"],
            [],
        ),
        (
            {
                "TargetCapacitySpecification": {
                    "TotalTargetCapacity": 3,
                    "OnDemandTargetCapacity": 0,
                    "DefaultTargetCapacityType": "spot",
                }
            },
            ["on_demand_target_capacity"],
            [],
        ),
        (
            {
                "LaunchTemplateConfigs": [
                    {
                        "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-1", "Version": "1"},
                        "Overrides": desired()["LaunchTemplateConfigs"][0]["Overrides"],
                    }
                ]
            },
            ["launch_template"],
            [],
        ),
        (
            {
                "LaunchTemplateConfigs": [
                    {
                        "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-1", "Version": "2"},
                        "Overrides": desired()["LaunchTemplateConfigs"][0]["Overrides"][:1],
                    }
                ]
            },
            ["instance_types/subnets"],
            [],
        ),
        ({"SpotOptions": {"AllocationStrategy": "lowest-price"}}, [], ["spot_allocation_strategy"]),
        ({"ReplaceUnhealthyInstances": False}, [], ["replace_unhealthy_instances"]),
        (
            {
                "TargetCapacitySpecification": {
                    "TotalTargetCapacity": 3,
                    "OnDemandTargetCapacity": 1,
                    "DefaultTargetCapacityType": "on-demand",
                }
            },
            [],
            ["default_target_capacity_type"],
        ),
    ],
)
def test_drift(changes, modifiable, immutable):
    assert fp.drift(observed(**changes), desired()) == (modifiable, immutable)


def test_modify_request_sends_the_template_only_when_it_drifted():
    capacity_only = fp.modify_request("fleet-1", desired(), ["total_target_capacity"])
    assert "LaunchTemplateConfigs" not in capacity_only
    assert capacity_only["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 3,
        "OnDemandTargetCapacity": 1,
        "SpotTargetCapacity": 2,
    }
    with_template = fp.modify_request("fleet-1", desired(), ["launch_template"])
    assert with_template["LaunchTemplateConfigs"] == desired()["LaunchTemplateConfigs"]
