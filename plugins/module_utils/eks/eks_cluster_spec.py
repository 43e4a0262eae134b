# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the options of ``capa_eks_cluster`` as one typed value, built once from the module's parameters.

Every piece of the EKS control-plane tier (control plane, addons, OIDC provider, access, kubeconfigs) reads this,
never the raw parameters. Defaults the module resolves itself (the EKS name, the role name, the output paths) are
resolved here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..kernel.options import argument_spec as _argument_spec
from ..kernel.options import given
from ..workload.access import KUBERNETES_API, KubernetesApiSettings


def default_role_name(cluster: str) -> str:
    return f"{cluster}-iam-service-role"


@dataclass(frozen=True)
class OutputPaths:
    """The files the tier writes under ``<output_dir>/<cluster_name>/``."""

    kubeconfig: Path
    user_kubeconfig: Path
    aws_auth: Path

    @classmethod
    def under(cls, output_dir: str, cluster: str) -> OutputPaths:
        base = Path(output_dir).expanduser().absolute() / cluster
        return cls(base / "kubeconfig", base / "user-kubeconfig", base / "aws-auth.yaml")

    def all(self) -> tuple[Path, Path, Path]:
        return self.kubeconfig, self.user_kubeconfig, self.aws_auth


@dataclass(frozen=True)
class EksClusterSpec:
    """``capa_eks_cluster``'s options, defaults resolved. Mappings and lists are the module's own shapes."""

    cluster: str
    state: str
    name: str
    version: str | None
    role_arn: str | None
    role_name: str
    subnets: list[Any]
    restrict_private_subnets: bool
    security_group_ids: list[str]
    endpoint_access: Mapping[str, Any]
    logging: Mapping[str, bool]
    encryption_config: Mapping[str, Any] | None
    authentication_mode: str
    bootstrap_cluster_creator_admin_permissions: bool
    addons: list[Mapping[str, Any]] | None  # None: addons are not managed
    associate_oidc_provider: bool
    oidc_thumbprint: str | None
    map_roles: list[Mapping[str, Any]]
    map_users: list[Mapping[str, Any]]
    node_role_arns: list[str]
    node_instance_profiles: list[str]
    output_dir: str
    kubernetes_api: KubernetesApiSettings = KubernetesApiSettings()

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> EksClusterSpec:
        cluster = params["cluster_name"]
        access = params["access_config"]
        authenticator = params["iam_authenticator"]
        addons = params["addons"]
        return cls(
            cluster=cluster,
            state=params["state"],
            name=given(params["name"]) or cluster,  # unset: the cluster's own name, as CAPA names it
            version=given(params["version"]),
            role_arn=given(params["role_arn"]),
            role_name=given(params["role_name"]) or default_role_name(cluster),
            subnets=list(params["subnets"]),
            restrict_private_subnets=bool(params["restrict_private_subnets"]),
            security_group_ids=list(params["security_group_ids"]),
            endpoint_access=dict(params["endpoint_access"]),
            logging=dict(params["logging"] or {}),
            encryption_config=given(params["encryption_config"]),
            authentication_mode=access["authentication_mode"],
            bootstrap_cluster_creator_admin_permissions=access["bootstrap_cluster_creator_admin_permissions"],
            addons=list(addons) if addons is not None else None,
            associate_oidc_provider=bool(params["associate_oidc_provider"]),
            oidc_thumbprint=given(params["oidc_thumbprint"]),
            map_roles=list(authenticator["map_roles"]),
            map_users=list(authenticator["map_users"]),
            node_role_arns=list(params["node_role_arns"]),
            node_instance_profiles=list(params["node_instance_profiles"]),
            output_dir=params["output_dir"],
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
        )

    @property
    def paths(self) -> OutputPaths:
        return OutputPaths.under(self.output_dir, self.cluster)


def kubernetes_api_argument_spec() -> dict[str, Any]:
    """The ``kubernetes_api`` option (doc fragment ``clusterapi.aws.kubernetes_api``): how aws-auth is applied."""
    return _argument_spec([KUBERNETES_API])
