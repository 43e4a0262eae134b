"""capa_fleet through ansible-playbook against the moto server, checked with boto3.

moto (5.2) implements CreateFleet (it launches the instances of a maintain fleet from the launch template and its
overrides), DescribeFleets, DescribeFleetInstances and DeleteFleets, but not ModifyFleet: here a capacity or
template change is checked in check mode (the planned ModifyFleet), and the call itself with botocore's Stubber in
tests/unit/plugins/module_utils/test_fleet.py.
"""

from __future__ import annotations

import base64
import gzip
from typing import Any

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.machines.termination_assets import UNIT_NAME, WATCHER_PATH

CLUSTER = "fleet-it"
MODULE = "clusterapi.aws.capa_fleet"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
POOL_TAG = "clusterapi.aws/machine-pool"
BOOTSTRAP_TAG = "clusterapi.aws/bootstrap-data"
CLOUD_CONFIG = "#cloud-config\nruncmd:\n  - echo pool-secret-token-xyz > /root/token\n"
TYPES = ["t3.large", "m5.large"]


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


@pytest.fixture
def network(build_network) -> dict[str, Any]:
    return build_network(CLUSTER)


def args(network: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "name": "pool-0",
        "total_target_capacity": 3,
        "on_demand_target_capacity": 1,
        "instance_types": TYPES,
        "kubernetes_version": "v1.31.2",
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["node"]["id"]],
        "bootstrap": {"type": "raw", "data": CLOUD_CONFIG},
        "wait_timeout": 30,
    }
    base.update(extra)
    return base


def run_ok(run_module, module_args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = run_module(MODULE, module_args, **kw)
    assert not result.get("failed"), result
    return result


def live_fleets(aws) -> list[dict[str, Any]]:
    fleets = aws.client("ec2").describe_fleets()["Fleets"]
    return [f for f in fleets if not f["FleetState"].startswith("deleted")]


def pool_instances(aws, states=("pending", "running")) -> list[dict[str, Any]]:
    reservations = aws.client("ec2").describe_instances(
        Filters=[
            {"Name": f"tag:{POOL_TAG}", "Values": ["pool-0"]},
            {"Name": "instance-state-name", "Values": list(states)},
        ]
    )["Reservations"]
    return [i for r in reservations for i in r["Instances"]]


def templates(aws) -> list[dict[str, Any]]:
    return aws.client("ec2").describe_launch_templates()["LaunchTemplates"]


def secrets(aws) -> list[str]:
    return [s["Name"] for s in aws.client("secretsmanager").list_secrets()["SecretList"]]


def test_check_mode_from_empty_changes_nothing(aws, run_module, network):
    aws.reset_requests()
    result = run_ok(run_module, args(network), check=True, diff=True)
    assert result["changed"] is True
    assert [p["call"] for p in result["plan"]] == [
        "secretsmanager:CreateSecret",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateFleet",
    ]
    assert aws.mutating_requests() == []
    fleet = result["fleet"]
    assert fleet["id"] == "planned:fleet:pool-0"
    assert fleet["launch_template"]["id"] == "planned:launch-template:pool-0"
    assert fleet["target_capacity"] == {"total": 3, "on_demand": 1, "default_type": "spot"}
    assert result["diff"]["before"] is None
    assert live_fleets(aws) == [] and templates(aws) == [] and secrets(aws) == []


def test_pool_life(aws, run_module, network):
    private = [s["id"] for s in network["subnets"] if not s["is_public"]]
    created = run_ok(run_module, args(network))
    assert created["changed"] is True
    assert [p["call"] for p in created["plan"]] == [
        "secretsmanager:CreateSecret",
        "ec2:CreateLaunchTemplate",
        "ec2:CreateFleet",
    ]

    # The fleet: maintain, over the pool's template, every type in every private subnet, the split as asked.
    (fleet,) = live_fleets(aws)
    assert fleet["Type"] == "maintain" and fleet["FleetId"] == created["fleet"]["id"]
    (template,) = templates(aws)
    assert template["LaunchTemplateName"] == "pool-0" and _tags(template["Tags"])[OWNER] == "owned"
    (config,) = fleet["LaunchTemplateConfigs"]
    assert config["LaunchTemplateSpecification"]["LaunchTemplateId"] == template["LaunchTemplateId"]
    assert {(o["InstanceType"], o["SubnetId"]) for o in config["Overrides"]} == {(t, s) for t in TYPES for s in private}
    assert fleet["TargetCapacitySpecification"]["TotalTargetCapacity"] == 3
    assert fleet["TargetCapacitySpecification"]["OnDemandTargetCapacity"] == 1
    assert fleet["SpotOptions"]["AllocationStrategy"] == "price-capacity-optimized"
    assert _tags(fleet["Tags"])[OWNER] == "owned" and _tags(fleet["Tags"])[POOL_TAG] == "pool-0"

    # moto launched the instances from the template: tagged by it, in the pool's subnets, mostly spot.
    instances = pool_instances(aws)
    assert len(instances) == 3 and len(created["fleet"]["instances"]) == 3
    assert {i["SubnetId"] for i in instances} <= set(private)
    assert sum(i.get("InstanceLifecycle") == "spot" for i in instances) == 2
    assert all(_tags(i["Tags"])[OWNER] == "owned" for i in instances)

    # Bootstrap data: only a boot hook in the template; the document (with the watcher) in Secrets Manager.
    (version,) = aws.client("ec2").describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])[
        "LaunchTemplateVersions"
    ]
    user_data = base64.b64decode(version["LaunchTemplateData"]["UserData"]).decode()
    assert "pool-secret-token-xyz" not in user_data and "cloud-boothook" in user_data
    assert "delete-secret" not in user_data  # every instance of the version boots from the same entries
    instance_tags = _tags(version["LaunchTemplateData"]["TagSpecifications"][0]["Tags"])
    backend, prefix, count = instance_tags[BOOTSTRAP_TAG].split(":")
    sm = aws.client("secretsmanager")
    document = gzip.decompress(
        b"".join(sm.get_secret_value(SecretId=f"{prefix}-{i}")["SecretBinary"] for i in range(int(count)))
    )
    config_doc = yaml.safe_load(document)
    assert config_doc["runcmd"][0] == "echo pool-secret-token-xyz > /root/token"
    assert config_doc["runcmd"][-1] == f"systemctl enable --now {UNIT_NAME}"
    assert WATCHER_PATH in {f["path"] for f in config_doc["write_files"]}

    # No-op: nothing mutating, each resource type described once.
    aws.reset_requests()
    again = run_ok(run_module, args(network))
    assert again["changed"] is False and again["plan"] == []
    assert aws.mutating_requests() == []
    calls = again["api_calls"]
    assert calls["ec2:DescribeFleets"] == 1 and calls["ec2:DescribeFleetInstances"] == 1
    assert calls["ec2:DescribeLaunchTemplates"] == 1 and calls["ec2:DescribeLaunchTemplateVersions"] == 1
    assert "secretsmanager:GetSecretValue" not in calls

    # A capacity change is a ModifyFleet (planned here: moto has none; the call is Stubber-tested).
    scaled = run_ok(run_module, args(network, total_target_capacity=5), check=True, diff=True)
    assert [(p["call"], p["reason"]) for p in scaled["plan"]] == [("ec2:ModifyFleet", "total_target_capacity differ")]
    assert scaled["diff"]["after"]["target_capacity"]["total"] == 5
    assert scaled["diff"]["before"]["target_capacity"]["total"] == 3

    # A template change makes a new version and points the fleet at it.
    retyped = run_ok(
        run_module, args(network, instance_types=TYPES + ["m6i.large"], instance_type="m5.large"), check=True
    )
    assert [p["call"] for p in retyped["plan"]] == [
        "secretsmanager:CreateSecret",
        "ec2:CreateLaunchTemplateVersion",
        "ec2:ModifyFleet",
    ]
    assert "launch_template" in retyped["plan"][-1]["reason"]

    # What a fleet cannot change is refused before anything is made.
    aws.reset_requests()
    refused = run_module(MODULE, args(network, spot_allocation_strategy="capacity-optimized"))
    assert refused.get("failed") and "spot_allocation_strategy" in refused["msg"], refused
    assert aws.mutating_requests() == []

    # Delete: the fleet and its instances, then the template and its bootstrap entries.
    deleted = run_ok(run_module, {"cluster_name": CLUSTER, "name": "pool-0", "state": "absent", "wait_timeout": 30})
    assert deleted["changed"] is True and deleted["fleet"] is None
    assert [p["call"] for p in deleted["plan"]] == [
        "ec2:DeleteFleets",
        "ec2:DeleteLaunchTemplate",
        "secretsmanager:DeleteSecret",
    ]
    assert live_fleets(aws) == [] and pool_instances(aws, states=("pending", "running", "shutting-down")) == []
    assert templates(aws) == [] and secrets(aws) == []
    gone = run_ok(run_module, {"cluster_name": CLUSTER, "name": "pool-0", "state": "absent"})
    assert gone["changed"] is False


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"on_demand_target_capacity": 4}, "on_demand_target_capacity"),
        ({"instance_types": []}, "instance_types"),
        ({"instance_types": ["t3.large", "t3.large"]}, "instance_types"),
        ({"bootstrap": {"type": "raw"}}, "bootstrap.data"),
        ({"failure_domains": ["us-east-1f"]}, "failure_domains[0]"),
    ],
)
def test_bad_input_fails_before_any_request(aws, run_module, extra, field):
    network = {  # validation needs no real network
        "subnets": [{"id": "subnet-0123456789abcdef0", "availability_zone": "us-east-1a", "is_public": False}],
        "groups": {"node": {"id": "sg-0123456789abcdef0"}},
    }
    aws.reset_requests()
    result = run_module(MODULE, args(network, **extra))
    assert result.get("failed") and result["field"] == field, result
    assert aws.requests() == []
