# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Auto Scaling reads (module_utils/aws/autoscaling.py): a pool's group among the cluster's own first, by name only
when it is not there. Stubber validates every request against the service model; any request not queued fails."""

from __future__ import annotations

from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.aws import autoscaling
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

OWNED = {"Name": "tag:sigs.k8s.io/cluster-api-provider-aws/cluster/demo", "Values": ["owned"]}


def stubbed() -> tuple[Context, Stubber]:
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "a", "aws_secret_access_key": "b"})
    ctx = Context(session=session, cluster="demo", check_mode=False, wait=False)
    return ctx, Stubber(ctx.client("autoscaling").raw)


def group(name: str) -> dict:
    return {
        "AutoScalingGroupName": name,
        "MinSize": 0,
        "MaxSize": 3,
        "DesiredCapacity": 1,
        "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-1a"],
        "HealthCheckType": "EC2",
        "CreatedTime": "2026-12-04T00:00:00Z",
    }


def test_a_pools_group_is_found_among_the_clusters_own_with_one_read():
    """The tag-filtered read is capa_cluster_info's: on a run that changes nothing one answer serves both."""
    ctx, stub = stubbed()
    stub.add_response(
        "describe_auto_scaling_groups", {"AutoScalingGroups": [group("mp-1"), group("mp-0")]}, {"Filters": [OWNED]}
    )
    with stub:
        assert autoscaling.pool_group(ctx, "mp-0")["AutoScalingGroupName"] == "mp-0"
        stub.assert_no_pending_responses()


def test_a_group_the_cluster_does_not_own_is_still_found_by_name():
    ctx, stub = stubbed()
    stub.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": [group("mp-1")]}, {"Filters": [OWNED]})
    stub.add_response(
        "describe_auto_scaling_groups", {"AutoScalingGroups": [group("mp-0")]}, {"AutoScalingGroupNames": ["mp-0"]}
    )
    stub.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": []}, {"Filters": [OWNED]})
    stub.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": []}, {"AutoScalingGroupNames": ["mp-0"]})
    with stub:
        assert autoscaling.pool_group(ctx, "mp-0")["AutoScalingGroupName"] == "mp-0"
        assert autoscaling.pool_group(ctx, "mp-0") is None
        stub.assert_no_pending_responses()
