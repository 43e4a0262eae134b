# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: who may use the EKS cluster - the aws-auth ConfigMap (rendered to a file) and access entries.

The authentication mode decides which: ``CONFIG_MAP`` reads aws-auth only, ``API`` access entries only,
``API_AND_CONFIG_MAP`` both. Access entries are append-only, as CAPA treats aws-auth: missing ones are created
(ListAccessEntries), and an entry's access policy is associated once (ListAssociatedAccessPolicies).
"""

from __future__ import annotations

import base64
import urllib.parse
from typing import Any, Mapping, Sequence

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; the sanity import test runs without it
    yaml = None  # type: ignore[assignment]

from ..aws import eks as aws_eks
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.idempotency import new_client_token
from ..kernel.tags import ROLE_COMMON
from ..kernel.waiting import Backoff
from ..workload import credentials
from ..workload.access import KubernetesApiSettings
from ..workload.kube import UNREACHABLE, ApiTarget, KubeApi, PlannedApi
from . import cluster_plan as plan
from .eks_cluster_spec import EksClusterSpec
from .kubeconfig import dump_yaml

AWS_AUTH_PATH = "/api/v1/namespaces/kube-system/configmaps/aws-auth"
API_RETRY = Backoff(first=0.5, cap=3.0, factor=2.0)  # reads while a required EKS API does not answer yet


def reconcile_access(
    ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any] | None, owned: bool
) -> tuple[str | None, dict[str, Any]]:
    """The aws-auth manifest's path (``None`` when there is none) and IAMAuthenticatorConfigured."""
    roles, users = plan.aws_auth_mappings(spec.map_roles, spec.map_users, spec.node_role_arns)
    path = None
    configured = condition(True, "")
    if spec.authentication_mode != "API" and (roles or users):
        path = spec.paths.aws_auth
        ctx.ops.write_file(path, plan.render_aws_auth(roles, users, dump_yaml), "aws-auth mappings")
        configured = apply_aws_auth(ctx, spec, cluster, roles, users)
    if owned and plan.access_entries_allowed(spec.authentication_mode):
        reconcile_access_entries(
            ctx, spec.name, cluster, plan.desired_access_entries(spec.node_role_arns, spec.map_roles)
        )
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
    merged_roles = plan.merged_mappings(_loaded(data.get("mapRoles")), roles, "rolearn")
    merged_users = plan.merged_mappings(_loaded(data.get("mapUsers")), users, "userarn")
    manifest = plan.aws_auth_manifest(merged_roles, merged_users, dump_yaml)
    if (
        current is None
        or _loaded(data.get("mapRoles")) != merged_roles
        or _loaded(data.get("mapUsers")) != merged_users
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


def eks_kube_api(ctx: Context, settings: KubernetesApiSettings, name: str, cluster: Mapping[str, Any]) -> KubeApi:
    """A client of EKS cluster ``name``'s API server (``DescribeCluster``'s answer): its CA, a token of the run's
    credentials (presigned locally), and ``kubernetes_api``'s tunnel or proxy when set."""
    endpoint = cluster["endpoint"]
    ca = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
    host = urllib.parse.urlparse(endpoint).hostname or ""
    target = ApiTarget(
        settings.server or endpoint,
        ca,
        tls_server_name=settings.tls_server_name or (host if settings.server else None),
        proxy=settings.proxy,
    )
    token = credentials.eks_token(ctx.session.credentials(), ctx.region or "", name)
    return KubeApi(
        target, token=token, count=ctx.session.recorder.count, timeout=settings.timeout, shared=ctx.session.shared
    )


def _loaded(text: str | None) -> list[dict[str, Any]]:
    found = yaml.safe_load(text) if text and yaml is not None else None
    return [dict(m) for m in found if isinstance(m, Mapping)] if isinstance(found, list) else []


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
