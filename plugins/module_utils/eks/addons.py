# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the EKS cluster's addons (CAPA's AWSManagedControlPlane ``addons``).

Observed with ListAddons plus one DescribeAddon per addon (EKS has no batch describe). Addons this module
installed carry the cluster's ownership tag: only those are updated, re-tagged or deleted (one dropped from the
spec goes); any other addon is reported and left as it is. Every change is sent first, then each is awaited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..aws import eks as aws_eks
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.idempotency import new_client_token
from ..kernel.tags import ROLE_COMMON, is_owned, repair_tags
from ..kernel.waiting import wait_until
from . import cluster_plan as plan
from . import control_plane
from .eks_cluster_spec import EksClusterSpec

ADDON_DONE = ("ACTIVE", "DEGRADED")
ADDON_FAILED = ("CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED")


@dataclass(frozen=True)
class ObservedAddons:
    """DescribeAddon's answer per installed addon, and the names of those that carry our ownership tag."""

    installed: dict[str, dict[str, Any]] = field(default_factory=dict)
    owned: frozenset[str] = frozenset()


def no_addons() -> dict[str, list[str]]:
    return {"installed": [], "other": []}


def observe(ctx: Context, name: str) -> ObservedAddons:
    installed: dict[str, dict[str, Any]] = {}
    for addon in aws_eks.list_addons(ctx, name):
        described = aws_eks.describe_addon(ctx, name, addon)
        if described is not None:
            installed[addon] = described
    owned = frozenset(n for n, a in installed.items() if is_owned(a.get("tags"), ctx.cluster))
    return ObservedAddons(installed, owned)


def reconcile_addons(
    ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any] | None
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The addons result (``installed`` by us, ``other``) and EKSAddonsConfigured."""
    wanted = spec.addons
    if wanted is None:
        # Not given: addons are not managed (no request). An empty list manages them: ours are deleted.
        return no_addons(), condition(True, "", "addons not managed")
    planned = plan.is_planned(cluster)
    if planned and not wanted:
        return no_addons(), condition(True, "")
    observed = ObservedAddons() if planned else observe(ctx, spec.name)
    actions, foreign = plan.plan_addons(wanted, observed.installed, set(observed.owned))
    for name in foreign:
        ctx.warn(f"addon {name} was not installed by this module; left as it is")
    tags = ctx.tags(ROLE_COMMON, None)
    sent = [(action, apply_addon(ctx, spec.name, action, tags)) for action in actions]
    deleted = {a.name for a in actions if a.action == "delete"}
    for name in sorted(observed.owned - deleted):
        addon = observed.installed[name]
        repair_tags(ctx, "eks", addon["addonArn"], f"addon {name}", addon.get("tags"), tags)
    if ctx.wait and not ctx.check_mode:
        for action, answer in sent:
            wait_addon(ctx, spec.name, action, answer)
    installed = sorted((observed.owned - deleted) | {a.name for a in actions if a.action == "create"})
    result = {"installed": installed, "other": sorted(set(observed.installed) - observed.owned)}
    return result, condition(True, "", f"{len(actions)} addon change(s)" if actions else "addons as specified")


def apply_addon(ctx: Context, cluster: str, action: plan.AddonAction, tags: Mapping[str, str]) -> dict[str, Any]:
    eks, label = ctx.client("eks"), f"addon {action.name}"
    if action.action == "create":
        return ctx.ops.call(
            eks,
            "create_addon",
            resource=label,
            reason=action.reason,
            predicted={},
            clusterName=cluster,
            tags=dict(tags),
            clientRequestToken=new_client_token(),
            **action.request,
        )
    if action.action == "update":
        return ctx.ops.call(
            eks,
            "update_addon",
            resource=label,
            reason=action.reason,
            predicted={},
            clusterName=cluster,
            clientRequestToken=new_client_token(),
            **action.request,
        )
    return ctx.ops.call(
        eks, "delete_addon", resource=label, reason=action.reason, clusterName=cluster, **action.request
    )


def _failure(addon: Mapping[str, Any] | None) -> str | None:
    if addon and addon["status"] in ADDON_FAILED:
        issues = "; ".join(i.get("message", "") for i in (addon.get("health") or {}).get("issues", []))
        return f"{addon['status']}: {issues or 'no detail'}"
    return None


def wait_addon(ctx: Context, cluster: str, action: plan.AddonAction, answer: Mapping[str, Any]) -> None:
    """An update by its update id, a create until ACTIVE (or DEGRADED), a delete until the addon is gone."""
    name = action.name
    what = f"addon {name} ({action.action})"
    if action.action == "update":
        control_plane.wait_update(ctx, cluster, answer, what, addon=name)
        return
    delay = control_plane.POLL_DELAY
    if action.action == "delete":
        wait_until(lambda: aws_eks.describe_addon(ctx, cluster, name), lambda a: a is None, ctx, what, delay=delay)
        return
    wait_until(
        lambda: aws_eks.describe_addon(ctx, cluster, name),
        lambda a: a is not None and a["status"] in ADDON_DONE,
        ctx,
        what,
        delay=delay,
        failed=_failure,
    )
