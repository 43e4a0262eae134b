"""EC2 Fleet pools: the AWS paths moto lacks (fleet.py), with botocore's Stubber.

moto (5.2) has no ModifyFleet, so applying a drift is tested with botocore's Stubber here (the request is checked
against botocore's model); the rest of the module runs against moto in tests/integration/test_fleet.py.
"""

from __future__ import annotations

import boto3
from botocore.stub import Stubber
from test_fleet_plan import desired, observed, params

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import fleet_plan as fp
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.fleet import (
    apply_fleet,
    fleet_instances,
    observe_fleet,
)


# AWS paths moto lacks (botocore Stubber) ---------------------------------------------------------------------------
class _StubContext:
    cluster = "demo"
    check_mode = False

    def __init__(self, client) -> None:
        self._client = RetryingClient(client, retries=0)
        self.ops = Operations(check_mode=False)
        self.warnings: list[str] = []

    def client(self, service):
        return self._client

    def warn(self, message):
        self.warnings.append(message)


def _ec2():
    return boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def test_modify_fleet_is_called_with_the_drift():
    """ModifyFleet is not implemented by moto: the request is checked against botocore's model here."""
    client = _ec2()
    want = {**desired(), "TargetCapacitySpecification": fp.target_capacity(5, 1, "spot")}
    with Stubber(client) as stub:
        stub.add_response(
            "modify_fleet",
            {"Return": True},
            {
                "FleetId": "fleet-1",
                "TargetCapacitySpecification": {
                    "TotalTargetCapacity": 5,
                    "OnDemandTargetCapacity": 1,
                    "SpotTargetCapacity": 4,
                },
                "ExcessCapacityTerminationPolicy": "termination",
            },
        )
        ctx = _StubContext(client)
        after = apply_fleet(ctx, "pool-0", observed(), want)
        stub.assert_no_pending_responses()
    assert [(p.call, p.reason) for p in ctx.ops.plan] == [("ec2:ModifyFleet", "total_target_capacity differ")]
    assert after["TargetCapacitySpecification"]["TotalTargetCapacity"] == 5


def test_modify_fleet_carries_a_new_template_version():
    client = _ec2()
    spec = fp.FleetSpec.from_params(params())
    want = {**desired(), "LaunchTemplateConfigs": fp.launch_template_configs("lt-1", 3, spec)}
    with Stubber(client) as stub:
        stub.add_response(
            "modify_fleet",
            {"Return": True},
            {
                "FleetId": "fleet-1",
                "TargetCapacitySpecification": {
                    "TotalTargetCapacity": 3,
                    "OnDemandTargetCapacity": 1,
                    "SpotTargetCapacity": 2,
                },
                "ExcessCapacityTerminationPolicy": "termination",
                "LaunchTemplateConfigs": want["LaunchTemplateConfigs"],
            },
        )
        ctx = _StubContext(client)
        apply_fleet(ctx, "pool-0", observed(), want)
        stub.assert_no_pending_responses()


def test_no_drift_makes_no_call():
    client = _ec2()
    with Stubber(client) as stub:
        ctx = _StubContext(client)
        assert apply_fleet(ctx, "pool-0", observed(), desired()) == observed()
        stub.assert_no_pending_responses()
    assert ctx.ops.plan == []


def test_fleets_are_found_by_tags_and_deleted_ones_ignored():
    """AWS keeps deleted fleets listed for hours and has no tag filter for DescribeFleets."""
    owner = {"Key": "sigs.k8s.io/cluster-api-provider-aws/cluster/demo", "Value": "owned"}
    pool = {"Key": "clusterapi.aws/machine-pool", "Value": "pool-0"}
    client = _ec2()
    with Stubber(client) as stub:
        stub.add_response(
            "describe_fleets",
            {
                "Fleets": [
                    {"FleetId": "fleet-old", "FleetState": "deleted_terminating", "Tags": [owner, pool]},
                    {"FleetId": "fleet-other", "FleetState": "active", "Tags": [owner]},
                    {"FleetId": "fleet-foreign", "FleetState": "active", "Tags": [pool]},
                    {"FleetId": "fleet-mine", "FleetState": "active", "Tags": [owner, pool]},
                ]
            },
            {},
        )
        found = observe_fleet(_StubContext(client), "pool-0")
    assert found["FleetId"] == "fleet-mine"


def test_fleet_instances_follow_next_token():
    client = _ec2()
    with Stubber(client) as stub:
        stub.add_response(
            "describe_fleet_instances",
            {"ActiveInstances": [{"InstanceId": "i-1"}], "NextToken": "t", "FleetId": "fleet-1"},
            {"FleetId": "fleet-1"},
        )
        stub.add_response(
            "describe_fleet_instances",
            {"ActiveInstances": [{"InstanceId": "i-2"}], "FleetId": "fleet-1"},
            {"FleetId": "fleet-1", "NextToken": "t"},
        )
        found = fleet_instances(_StubContext(client), {"FleetId": "fleet-1"})
    assert [i["InstanceId"] for i in found] == ["i-1", "i-2"]
