# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of EKS (clusters, node groups, Fargate profiles, addons, access entries).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from .errors import missing_as_none


def describe_cluster(ctx: Context, name: str) -> dict[str, Any] | None:
    """The EKS cluster ``name`` as DescribeCluster answers it (its ``cluster``), or None when there is none."""
    answer = missing_as_none(ctx.client("eks").describe_cluster, name=name)
    return answer["cluster"] if answer is not None else None
