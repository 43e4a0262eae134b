# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of the classic ELB API.

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..kernel.context import Context
from ..kernel.tags import tags_to_dict
from .errors import missing_as_none

# DescribeTags (classic and v2) takes at most 20 names / ARNs.
TAGS_CHUNK = 20


def chunks(items: Sequence[Any], size: int = TAGS_CHUNK) -> list[list[Any]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def describe_load_balancer(ctx: Context, name: str) -> dict[str, Any] | None:
    """The classic load balancer ``name``, or ``None``."""
    found = describe_named(ctx, [name])
    return found[0] if found else None


def describe_named(ctx: Context, names: Sequence[str]) -> list[dict[str, Any]] | None:
    """The classic load balancers ``names`` (requests of 20 names), or ``None`` when one of them does not exist: AWS
    then fails the whole request (``LoadBalancerNotFound``) and says which only in its message."""
    found: list[dict[str, Any]] = []
    for chunk in chunks(names):
        answer = missing_as_none(ctx.client("elb").describe_load_balancers, LoadBalancerNames=chunk)
        if answer is None:
            return None
        found.extend(answer.get("LoadBalancerDescriptions") or [])
    return found


def describe_load_balancers(ctx: Context) -> list[dict[str, Any]]:
    """Every classic load balancer of the region (the API has no tag filter), all pages."""
    return ctx.client("elb").paginate("describe_load_balancers").get("LoadBalancerDescriptions", [])


def describe_tags(ctx: Context, names: Sequence[str]) -> dict[str, dict[str, str]]:
    """Load balancer name -> its tags, in requests of 20 names."""
    tags: dict[str, dict[str, str]] = {}
    client = ctx.client("elb")
    for chunk in chunks(names):
        for item in client.describe_tags(LoadBalancerNames=chunk).get("TagDescriptions", []):
            tags[item["LoadBalancerName"]] = tags_to_dict(item.get("Tags"))
    return tags


def describe_attributes(ctx: Context, name: str) -> dict[str, Any] | None:
    """The ``LoadBalancerAttributes`` of the classic load balancer ``name``, or ``None`` when it is gone."""
    answer = missing_as_none(ctx.client("elb").describe_load_balancer_attributes, LoadBalancerName=name)
    return None if answer is None else answer.get("LoadBalancerAttributes")
