# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): the Resource Groups Tagging API (every resource of a region carrying a tag).

One logical request (all pages), ``[]`` when nothing carries the tag; nothing else is decided here.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..kernel.context import Context

# AWS's largest pages: a cluster of a few hundred machines still costs few requests. A page also ends at its tag
# limit (100 by default, moto applies it too): machines carry a dozen tags each.
RESOURCES_PER_PAGE = 100
TAGS_PER_PAGE = 500


def tagged_resources(ctx: Context, key: str, values: Sequence[str], types: Sequence[str]) -> list[dict[str, Any]]:
    """The ``ResourceTagMappingList`` entries (``ResourceARN``, ``Tags``) of ``types`` tagged ``key`` in ``values``."""
    return (
        ctx.client("resourcegroupstaggingapi")
        .paginate(
            "get_resources",
            TagFilters=[{"Key": key, "Values": list(values)}],
            ResourceTypeFilters=list(types),
            ResourcesPerPage=RESOURCES_PER_PAGE,
            TagsPerPage=TAGS_PER_PAGE,
        )
        .get("ResourceTagMappingList", [])
    )
