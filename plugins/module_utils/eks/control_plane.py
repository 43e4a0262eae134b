# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the EKS control plane itself - its IAM role, CreateCluster, the updates of a live cluster (version one
minor at a time, endpoint access, logging, access config, encryption), its tags, and deleting it.

Decisions are :mod:`.cluster_plan`'s; this file sends them through ``ctx.ops`` and waits. EKS runs one update at
a time, so each is awaited (by its update id) before the next is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..aws import eks as aws_eks
from ..iam.roles import ensure_role, managed_policy_arn
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.idempotency import new_client_token
from ..kernel.operations import is_placeholder
from ..kernel.tags import OWNED, ROLE_COMMON, cloud_provider_tag_key, is_owned, repair_tags
from ..kernel.waiting import wait_until
from . import cluster_plan as plan
from .eks_cluster_spec import EksClusterSpec

CLUSTER_POLICY = "AmazonEKSClusterPolicy"
# Seconds between polls of a cluster, update or addon; tests set it to 0.
POLL_DELAY = 15.0
# The API call of each kind of cluster update.
UPDATE_METHODS = {
    plan.VERSION_UPDATE: "update_cluster_version",
    plan.CONFIG_UPDATE: "update_cluster_config",
    plan.ENCRYPTION_UPDATE: "associate_encryption_config",
}
# IAM is eventually consistent: EKS may not see a role created a second ago ("cannot be assumed").
ROLE_PROPAGATION_RETRY = 5.0


@dataclass(frozen=True)
class ObservedCluster:
    """DescribeCluster's answer (``None``: no such cluster) and whether this cluster owns it."""

    cluster: dict[str, Any] | None
    owned: bool


def observe(ctx: Context, spec: EksClusterSpec) -> ObservedCluster:
    cluster = aws_eks.describe_cluster(ctx, spec.name)
    return ObservedCluster(cluster, cluster is None or is_owned(cluster.get("tags"), ctx.cluster))


def cluster_tags(ctx: Context, spec: EksClusterSpec) -> dict[str, str]:
    return ctx.tags(ROLE_COMMON, spec.name, {cloud_provider_tag_key(spec.name): OWNED})


# the role ------------------------------------------------------------------------------------------------------
def ensure_cluster_role(ctx: Context, spec: EksClusterSpec) -> tuple[str, dict[str, Any]]:
    """The control-plane role's ARN (given, or ``role_name`` created and owned) and IAMControlPlaneRolesReady."""
    if spec.role_arn:
        arn = spec.role_arn
    else:
        arn = ensure_role(ctx, spec.role_name, "eks.amazonaws.com", [managed_policy_arn(ctx.region, CLUSTER_POLICY)])[
            "arn"
        ]
    return arn, condition(True, "", f"role {arn}")


# waits ---------------------------------------------------------------------------------------------------------
def wait_cluster(
    ctx: Context, name: str, what: str, done: Callable[[dict[str, Any] | None], bool]
) -> dict[str, Any] | None:
    def failed(cluster: dict[str, Any] | None) -> str | None:
        return "the cluster is FAILED" if cluster and cluster.get("status") == "FAILED" else None

    def state(cluster: dict[str, Any] | None) -> str | None:
        return cluster.get("status") if cluster else None

    return wait_until(
        lambda: aws_eks.describe_cluster(ctx, name), done, ctx, what, delay=POLL_DELAY, failed=failed, state=state
    )


def wait_active(ctx: Context, name: str, what: str | None = None) -> dict[str, Any] | None:
    return wait_cluster(
        ctx, name, what or f"EKS cluster {name} to be ACTIVE", lambda c: c is not None and c["status"] == "ACTIVE"
    )


def wait_update(ctx: Context, name: str, answer: Mapping[str, Any], what: str, addon: str | None = None) -> None:
    """Wait for an EKS update id to finish (or, when AWS gave no id, for the cluster to be ACTIVE)."""
    update_id = (answer.get("update") or {}).get("id")
    if not update_id:
        wait_active(ctx, name, what)
        return

    def failed(update: Mapping[str, Any]) -> str | None:
        if update["status"] in ("Failed", "Cancelled"):
            errors = "; ".join(e.get("errorMessage", "") for e in update.get("errors", []))
            return f"update {update_id} {update['status']}: {errors or 'no detail'}"
        return None

    wait_until(
        lambda: aws_eks.describe_update(ctx, name, update_id, addon),
        lambda u: u["status"] == "Successful",
        ctx,
        what,
        delay=POLL_DELAY,
        failed=failed,
        state=lambda u: u.get("status"),
    )


# create and update ----------------------------------------------------------------------------------------------
def create_cluster(ctx: Context, spec: EksClusterSpec, role_arn: str) -> dict[str, Any] | None:
    # One token per create intent: a resent request is the same request, a later run may create anew.
    request = plan.create_request(spec, role_arn, cluster_tags(ctx, spec), new_client_token())
    answer = ctx.ops.call(
        ctx.client("eks"),
        "create_cluster",
        resource=spec.name,
        reason="missing",
        predicted={"cluster": plan.predicted_cluster(request)},
        retry_if=aws_eks.role_not_assumable_yet,
        retry_delay=ROLE_PROPAGATION_RETRY,
        **request,
    )
    if ctx.check_mode or not ctx.wait:
        return answer["cluster"]
    return wait_active(ctx, spec.name)


def update_cluster(ctx: Context, spec: EksClusterSpec, cluster: dict[str, Any]) -> dict[str, Any]:
    """Tags, then the version steps and config updates, one at a time; the cluster as it is afterwards."""
    name, status = spec.name, cluster["status"]
    if status in ("DELETING", "FAILED"):
        raise ReconcileError(f"EKS cluster {name} is {status}")
    updates = plan.cluster_updates(spec, cluster)
    repair_tags(ctx, "eks", cluster["arn"], name, cluster.get("tags"), cluster_tags(ctx, spec))
    # One wait for ACTIVE, before what needs it: an update (EKS takes one while ACTIVE only), and a cluster still
    # being created (asked without a wait, or by a run that stopped) like a new one - its addons, OIDC provider and
    # access need it ACTIVE.
    if (status == "CREATING" or (updates and status != "ACTIVE")) and not ctx.check_mode:
        if not ctx.wait:
            if updates:
                ctx.warn(f"EKS cluster {name} is {status}; its updates wait for the next run")
            return cluster
        cluster = wait_active(ctx, name) or cluster
    if not updates:
        return cluster
    for index, update in enumerate(updates):
        if index and not ctx.wait and not ctx.check_mode:
            left = ", ".join(u.reason for u in updates[index:])
            ctx.warn(f"wait is off: EKS runs one update at a time, left for the next run: {left}")
            break
        method = UPDATE_METHODS[update.kind]
        answer = ctx.ops.call(
            ctx.client("eks"), method, resource=name, reason=update.reason, predicted={}, **update.request
        )
        if ctx.wait and not ctx.check_mode:
            wait_update(ctx, name, answer, f"EKS cluster {name}: {update.reason}")
    if ctx.check_mode:
        return plan.predicted_after_updates(cluster, updates)
    return aws_eks.describe_cluster(ctx, name) or cluster


def reconcile_cluster(
    ctx: Context, spec: EksClusterSpec, observed: ObservedCluster, role_arn: str
) -> dict[str, Any] | None:
    """Create the cluster, or update the one we own; a cluster we do not own is used as it is."""
    cluster = observed.cluster
    if cluster is None:
        return create_cluster(ctx, spec, role_arn)
    if not observed.owned:
        ctx.warn(
            f"EKS cluster {spec.name} exists without the ownership tag of cluster {ctx.cluster}; "
            "it is used as it is (no update, addon, OIDC or access-entry change)"
        )
        return cluster
    if role_arn != cluster.get("roleArn") and not is_placeholder(role_arn):
        ctx.warn(f"EKS cluster {spec.name} uses role {cluster.get('roleArn')}; a cluster's role cannot change")
    return update_cluster(ctx, spec, cluster)


# delete ----------------------------------------------------------------------------------------------------------
def refuse_with_dependants(ctx: Context, name: str) -> None:
    nodegroups = aws_eks.list_nodegroups(ctx, name)
    profiles = aws_eks.list_fargate_profiles(ctx, name)
    if not nodegroups and not profiles:
        return
    parts = []
    if nodegroups:
        parts.append(f"node groups {', '.join(sorted(nodegroups))}")
    if profiles:
        parts.append(f"Fargate profiles {', '.join(sorted(profiles))}")
    raise ReconcileError(
        f"EKS cluster {name} still has {' and '.join(parts)}; delete them first (capa_eks_nodegroup state=absent)"
    )


def delete_cluster(ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any]) -> bool:
    """Delete the cluster (refused while node groups or profiles remain); True once it is gone (or planned)."""
    if cluster["status"] != "DELETING":
        # Checked once, before the delete is asked: a cluster already DELETING had them checked by that run.
        refuse_with_dependants(ctx, spec.name)
        ctx.ops.call(ctx.client("eks"), "delete_cluster", resource=spec.name, reason="state absent", name=spec.name)
    if ctx.wait and not ctx.check_mode:
        wait_cluster(ctx, spec.name, f"EKS cluster {spec.name} to be deleted", lambda c: c is None)
        return True
    return ctx.check_mode
