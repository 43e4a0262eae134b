# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of Auto Scaling - a cluster's groups (capa_cluster_info), one pool's
group, its lifecycle hooks and instance refreshes (capa_asg).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist, paginate,
and decide nothing else.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from ..kernel.tags import OWNED, cluster_tag_key


def owned_groups(ctx: Context, cluster: str) -> list[dict[str, Any]]:
    """The cluster's auto scaling groups (machine pools): one paginated request with a tag filter."""
    return (
        ctx.client("autoscaling")
        .paginate(
            "describe_auto_scaling_groups",
            Filters=[{"Name": f"tag:{cluster_tag_key(cluster)}", "Values": [OWNED]}],
        )
        .get("AutoScalingGroups", [])
    )


def auto_scaling_group(ctx: Context, name: str) -> dict[str, Any] | None:
    """The auto scaling group ``name`` (a pool), or None: AWS answers an unknown name with an empty list."""
    groups = (
        ctx.client("autoscaling")
        .paginate("describe_auto_scaling_groups", AutoScalingGroupNames=[name])
        .get("AutoScalingGroups", [])
    )
    return groups[0] if groups else None


def pool_group(ctx: Context, name: str) -> dict[str, Any] | None:
    """The auto scaling group ``name``, looked for among the cluster's own first (:func:`owned_groups`, the read
    ``capa_cluster_info`` makes too: on a run that changes nothing one answer serves both), then by name, so that a
    group of that name the cluster does not own is still found - and refused by the caller."""
    for group in owned_groups(ctx, ctx.cluster):
        if group.get("AutoScalingGroupName") == name:
            return group
    return auto_scaling_group(ctx, name)


def lifecycle_hooks(ctx: Context, group_name: str) -> list[dict[str, Any]]:
    """The group's lifecycle hooks (one request: AWS allows at most 50 per group and does not paginate them)."""
    return ctx.client("autoscaling").describe_lifecycle_hooks(AutoScalingGroupName=group_name).get("LifecycleHooks", [])


def instance_refreshes(ctx: Context, group_name: str) -> list[dict[str, Any]]:
    """Every instance refresh of the group AWS still lists."""
    return (
        ctx.client("autoscaling")
        .paginate("describe_instance_refreshes", AutoScalingGroupName=group_name)
        .get("InstanceRefreshes", [])
    )
