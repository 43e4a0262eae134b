# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: read-only lookup of a cluster's auto scaling groups, for capa_cluster_info.

Kept apart from ``_asg`` (which needs the kubeadm helper) so the read-only tier imports no more than it uses.
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
