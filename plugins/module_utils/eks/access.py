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
from ..aws.iam import get_role
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.idempotency import new_client_token
from ..kernel.tags import ROLE_COMMON
from ..kernel.waiting import Backoff
from ..workload.access import AWS_AUTH_PATH, aws_auth_mappings, eks_kube_api
from ..workload.kube import UNREACHABLE, KubeApi, PlannedApi
from . import cluster_plan as plan
from .eks_cluster_spec import EksClusterSpec
from .kubeconfig import dump_yaml

API_RETRY = Backoff(first=0.5, cap=3.0, factor=2.0)  # reads while a required EKS API does not answer yet


def node_roles(ctx: Context, spec: EksClusterSpec) -> list[str]:
    """The node roles to map: ``node_role_arns``, then for each of ``node_instance_profiles`` the role of the same
    name, as CAPA looks it up (``clusterawsadm`` names a profile and its role alike). Read before any change: a
    missing role would leave the nodes launched with the profile unable to join, so it is refused."""
    roles = list(spec.node_role_arns)
    for name in spec.node_instance_profiles:
        role = get_role(ctx, name)
        if role is None:
            raise ReconcileError(
                f"node_instance_profiles: no IAM role {name} (the role of the instance profile of the same name), so "
                "the nodes launched with it could not join the cluster (playbooks/iam.yml creates CAPA's "
                "nodes.cluster-api-provider-aws.sigs.k8s.io)"
            )
        if role["Arn"] not in roles:
            roles.append(role["Arn"])
    return roles


def reconcile_access(
    ctx: Context,
    spec: EksClusterSpec,
    cluster: Mapping[str, Any] | None,
    owned: bool,
    nodes: Sequence[str],
) -> tuple[str | None, dict[str, Any]]:
    """The aws-auth manifest's path (``None`` when there is none) and IAMAuthenticatorConfigured; ``nodes`` are the
    node roles (:func:`node_roles`)."""
    roles, users = plan.aws_auth_mappings(spec.map_roles, spec.map_users, nodes)
    path = None
    configured = condition(True, "")
    if spec.authentication_mode != "API" and (roles or users):
        path = spec.paths.aws_auth
        ctx.ops.write_file(path, plan.render_aws_auth(roles, users, dump_yaml), "aws-auth mappings")
        configured = apply_aws_auth(ctx, spec, cluster, roles, users)
    if owned and plan.access_entries_allowed(spec.authentication_mode):
        reconcile_access_entries(ctx, spec.name, cluster, plan.desired_access_entries(nodes, spec.map_roles))
    return (str(path) if path else None), configured


def apply_aws_auth(
    ctx: Context,
    spec: EksClusterSpec,
    cluster: Mapping[str, Any] | None,
    roles: list[dict[str, Any]],
    users: list[dict[str, Any]],
) -> dict[str, Any]:
    """``kube-system/aws-auth`` in the cluster, as CAPA keeps it (its IAMAuthenticatorConfigured condition): the
    mappings of iam_authenticator added to what is there, through the API server with a token presigned from the
    run's credentials. Self-managed nodes cannot join before their role is mapped."""
    settings = spec.kubernetes_api
    if settings.mode == "none":
        return condition(False, "KubernetesApiNotUsed", "kubernetes_api.mode is none: apply the aws-auth file yourself")
    if cluster is None or plan.is_planned(cluster) or not cluster.get("endpoint") or cluster.get("status") != "ACTIVE":
        if ctx.check_mode:  # before the cluster exists: the apply is what would come
            planned = PlannedApi("the EKS cluster is not active yet")
            ctx.ops.call(planned, "apply", resource="ConfigMap kube-system/aws-auth", reason="iam_authenticator")
        return condition(False, "ClusterNotReady", "the aws-auth mappings are applied once the cluster is active")
    api = _api(ctx, spec, cluster)
    try:
        current = _read_aws_auth(ctx, api, wait=settings.mode == "required")
    except RemoteError as e:
        if settings.mode == "required":
            raise ReconcileError(
                f"kubernetes_api.mode is required but the EKS API does not answer: {e}. Give a reachable address in "
                "kubernetes_api.server, or set kubernetes_api.mode: auto"
            ) from None
        ctx.warn(f"aws-auth not applied (the EKS API does not answer: {e}); the file has the mappings")
        return condition(False, "KubernetesApiUnreachable", str(e))
    data = dict((current or {}).get("data") or {})
    merged_roles = plan.merged_mappings(aws_auth_mappings(data.get("mapRoles")), roles, "rolearn")
    merged_users = plan.merged_mappings(aws_auth_mappings(data.get("mapUsers")), users, "userarn")
    manifest = plan.aws_auth_manifest(merged_roles, merged_users, dump_yaml)
    if (
        current is None
        or aws_auth_mappings(data.get("mapRoles")) != merged_roles
        or aws_auth_mappings(data.get("mapUsers")) != merged_users
    ):
        ctx.ops.call(
            api,
            "apply",
            resource="ConfigMap kube-system/aws-auth",
            reason="iam_authenticator mappings missing" if current is not None else "no aws-auth yet",
            manifest={**manifest, "data": {**data, **manifest["data"]}},
        )
    return condition(True, "")


def _read_aws_auth(ctx: Context, api: KubeApi, wait: bool) -> dict[str, Any] | None:
    """aws-auth as the cluster has it (None: none yet). An endpoint that does not answer raises; with ``wait`` it is
    asked again within the run's wait budget first (a cluster just become ACTIVE may take a moment to serve)."""
    waiting = ctx.wait_for("the EKS API to answer", backoff=API_RETRY)
    while True:
        try:
            return api.get(AWS_AUTH_PATH, "k8s:GetConfigMap")
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise ReconcileError(f"reading kube-system/aws-auth: {e}") from None
            if not wait or not waiting.budget_left(API_RETRY.cap):
                raise
            waiting.pause()


def _api(ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any]) -> KubeApi:
    return eks_kube_api(ctx, spec.kubernetes_api, spec.name, cluster)


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
