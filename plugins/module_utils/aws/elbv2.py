# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of the ELBv2 API (NLBs, target groups).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..kernel.context import Context
from ..kernel.operations import is_placeholder
from ..kernel.tags import tags_to_dict
from .elb import chunks
from .errors import missing_as_none


def describe_load_balancers_by_name(ctx: Context, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """elbv2 load balancers by name, one request when they all exist.

    AWS answers LoadBalancerNotFound for the whole request when any name is missing, so only then is each name
    asked for on its own.
    """
    if not names:
        return {}
    answer = missing_as_none(ctx.client("elbv2").describe_load_balancers, Names=list(names))
    if answer is not None:
        return {lb["LoadBalancerName"]: lb for lb in answer["LoadBalancers"]}
    if len(names) == 1:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for name in names:
        found.update(describe_load_balancers_by_name(ctx, [name]))
    return found


def describe_load_balancer(ctx: Context, arn: str) -> dict[str, Any] | None:
    """The elbv2 load balancer ``arn``, or ``None``."""
    answer = missing_as_none(ctx.client("elbv2").describe_load_balancers, LoadBalancerArns=[arn])
    found = (answer or {}).get("LoadBalancers") or []
    return found[0] if found else None


def existing_load_balancer_arns(ctx: Context, arns: Sequence[str]) -> list[str]:
    """Which of ``arns`` still exist: one paginated request, or one per ARN when any is gone (AWS then fails the
    whole request)."""
    answer = missing_as_none(ctx.client("elbv2").paginate, "describe_load_balancers", LoadBalancerArns=list(arns))
    if answer is None:
        return [a for a in arns if describe_load_balancer(ctx, a) is not None]
    return [lb["LoadBalancerArn"] for lb in answer.get("LoadBalancers", [])]


def describe_load_balancers(ctx: Context) -> list[dict[str, Any]]:
    """Every elbv2 load balancer of the region, all pages."""
    return ctx.client("elbv2").paginate("describe_load_balancers").get("LoadBalancers", [])


def describe_tags(ctx: Context, arns: Sequence[str]) -> dict[str, dict[str, str]]:
    """ARN -> its tags, in requests of 20 ARNs (placeholders skipped)."""
    tags: dict[str, dict[str, str]] = {}
    client = ctx.client("elbv2")
    for chunk in chunks([a for a in arns if not is_placeholder(a)]):
        for item in client.describe_tags(ResourceArns=chunk)["TagDescriptions"]:
            tags[item["ResourceArn"]] = tags_to_dict(item.get("Tags"))
    return tags


def target_groups_of(ctx: Context, load_balancer_arn: str) -> list[dict[str, Any]]:
    return (
        ctx.client("elbv2")
        .paginate("describe_target_groups", LoadBalancerArn=load_balancer_arn)
        .get("TargetGroups", [])
    )


def describe_target_groups(ctx: Context, arns: Sequence[str]) -> list[dict[str, Any]]:
    """The target groups ``arns``; ``[]`` when one of them is gone."""
    answer = missing_as_none(ctx.client("elbv2").paginate, "describe_target_groups", TargetGroupArns=list(arns))
    return [] if answer is None else answer.get("TargetGroups", [])


def listeners_of(ctx: Context, load_balancer_arn: str) -> list[dict[str, Any]]:
    return ctx.client("elbv2").paginate("describe_listeners", LoadBalancerArn=load_balancer_arn).get("Listeners", [])


def attributes_of_load_balancer(ctx: Context, arn: str) -> list[dict[str, str]]:
    return ctx.client("elbv2").describe_load_balancer_attributes(LoadBalancerArn=arn).get("Attributes") or []


def attributes_of_target_group(ctx: Context, arn: str) -> list[dict[str, str]]:
    return ctx.client("elbv2").describe_target_group_attributes(TargetGroupArn=arn).get("Attributes") or []
