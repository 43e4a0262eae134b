# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: who may use the EKS cluster - the aws-auth ConfigMap (rendered to a file) and access entries.

The authentication mode decides which: ``CONFIG_MAP`` reads aws-auth only, ``API`` access entries only,
``API_AND_CONFIG_MAP`` both. Access entries are append-only, as CAPA treats aws-auth: missing ones are created
(ListAccessEntries), and an entry's access policy is associated once (ListAssociatedAccessPolicies).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..aws import eks as aws_eks
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.idempotency import new_client_token
from ..kernel.tags import ROLE_COMMON
from . import cluster_plan as plan
from .eks_cluster_spec import EksClusterSpec
from .kubeconfig import dump_yaml


def reconcile_access(
    ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any] | None, owned: bool
) -> tuple[str | None, dict[str, Any]]:
    """The aws-auth manifest's path (``None`` when there is none) and IAMAuthenticatorConfigured."""
    roles, users = plan.aws_auth_mappings(spec.map_roles, spec.map_users, spec.node_role_arns)
    path = None
    if spec.authentication_mode != "API" and (roles or users):
        path = spec.paths.aws_auth
        ctx.ops.write_file(path, plan.render_aws_auth(roles, users, dump_yaml), "aws-auth mappings")
    if owned and plan.access_entries_allowed(spec.authentication_mode):
        reconcile_access_entries(
            ctx, spec.name, cluster, plan.desired_access_entries(spec.node_role_arns, spec.map_roles)
        )
    return (str(path) if path else None), condition(True, "")


def reconcile_access_entries(
    ctx: Context, name: str, cluster: Mapping[str, Any] | None, entries: Sequence[Mapping[str, Any]]
) -> None:
    """Missing entries are created (append-only); an entry's policy is associated when it is not yet."""
    if not entries:
        return
    present = set() if plan.is_planned(cluster) else set(aws_eks.list_access_entries(ctx, name))
    tags = ctx.tags(ROLE_COMMON, None)
    for entry in entries:
        arn, policy = entry["principalArn"], entry.get("policyArn")
        created = arn not in present
        if created:
            create_access_entry(ctx, name, entry, tags)
        if policy and (created or policy not in aws_eks.associated_access_policies(ctx, name, arn)):
            ctx.ops.call(
                ctx.client("eks"),
                "associate_access_policy",
                resource=arn,
                reason=f"associate {policy}",
                predicted={},
                clusterName=name,
                principalArn=arn,
                policyArn=policy,
                accessScope={"type": "cluster"},
            )


def create_access_entry(ctx: Context, name: str, entry: Mapping[str, Any], tags: Mapping[str, str]) -> None:
    request = {k: v for k, v in entry.items() if k != "policyArn"}
    ctx.ops.call(
        ctx.client("eks"),
        "create_access_entry",
        resource=entry["principalArn"],
        reason="missing",
        predicted={},
        clusterName=name,
        tags=dict(tags),
        clientRequestToken=new_client_token(),
        **request,
    )
