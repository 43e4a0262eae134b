# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the EKS cluster's kubeconfigs - rendered, the IAM authenticator token, and written.

``user-kubeconfig`` runs ``aws eks get-token`` (whoever uses it signs with their own credentials): it is state,
written through ``ctx.ops.write_file`` when its content changes. ``kubeconfig`` embeds a token of the run's
credentials that expires within minutes: an output refreshed on every run (``ctx.ops.write_output``), never a
change, as CAPA refreshes its kubeconfig secret on every reconcile.

The token is what ``aws eks get-token`` and aws-iam-authenticator make: ``k8s-aws-v1.`` followed by the
unpadded base64url of a presigned STS GetCallerIdentity URL, signed with the header ``x-k8s-aws-id: <eks name>``
so the token only works for that cluster. Presigning is local (no request is made); the URL is valid 60 seconds
and EKS accepts the token for 15 minutes after signing.
"""

from __future__ import annotations

from typing import Any, Mapping

try:
    import yaml
except ImportError:
    yaml = None  # type: ignore[assignment]

from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import placeholder
from ..workload.credentials import eks_token
from .eks_cluster_spec import EksClusterSpec

EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def dump_yaml(data: Any) -> str:
    if yaml is None:
        raise ReconcileError("capa_eks_cluster needs PyYAML on the controller to write kubeconfigs")
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


def kubeconfig_document(name: str, endpoint: str, ca_data: str, user: dict[str, Any]) -> dict[str, Any]:
    """A kubeconfig as data: one cluster, user and context, all called ``name``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def token_kubeconfig(name: str, endpoint: str, ca_data: str, bearer_token: str) -> str:
    return dump_yaml(kubeconfig_document(name, endpoint, ca_data, {"token": bearer_token}))


def user_kubeconfig(name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig whose user runs ``aws eks get-token`` (credentials of whoever uses it)."""
    user = {
        "exec": {
            "apiVersion": EXEC_API_VERSION,
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", name, "--region", region],
            "interactiveMode": "Never",
        }
    }
    return dump_yaml(kubeconfig_document(name, endpoint, ca_data, user))


def write_kubeconfigs(ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    """Both kubeconfigs of the cluster; their paths (``None`` while the cluster has no endpoint yet)."""
    paths = spec.paths
    endpoint = (cluster or {}).get("endpoint")
    ca_data = ((cluster or {}).get("certificateAuthority") or {}).get("data")
    region = ctx.region or ""
    if not endpoint or not ca_data:
        if ctx.check_mode:
            # The cluster is still to be made: the run that makes it writes its kubeconfig.
            endpoint = endpoint or placeholder("eks-endpoint", spec.name)
            ctx.ops.write_file(
                paths.user_kubeconfig, user_kubeconfig(spec.name, endpoint, ca_data or "", region), "kubeconfig"
            )
        else:
            ctx.warn(f"EKS cluster {spec.name} has no endpoint yet; kubeconfigs are written by a later run")
        return {"path": None, "user_kubeconfig": None}
    ctx.ops.write_file(paths.user_kubeconfig, user_kubeconfig(spec.name, endpoint, ca_data, region), "kubeconfig")
    if not ctx.check_mode:  # a token is only signed to be written
        bearer = eks_token(ctx.session.credentials(), region, spec.name)
        ctx.ops.write_output(paths.kubeconfig, token_kubeconfig(spec.name, endpoint, ca_data, bearer))
    return {"path": str(paths.kubeconfig), "user_kubeconfig": str(paths.user_kubeconfig)}
