# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the EKS control plane (CAPA's AWSManagedControlPlane) - cluster, IAM role, addons, OIDC provider,
aws-auth / access entries and kubeconfigs, in CAPA's order.

The tier's skeleton: the typed spec (:mod:`.eks_cluster_spec`) -> observe the cluster (one DescribeCluster) ->
each piece plans with :mod:`.cluster_plan` (pure) and applies through ``ctx.ops``: :mod:`.control_plane` (role,
create, updates, tags, delete), :mod:`.addons`, :mod:`.oidc_provider`, :mod:`.access` (aws-auth, access
entries), :mod:`.kubeconfig` -> :func:`cluster_view` builds the result.

A steady run reads the cluster once (DescribeCluster), the role once (GetRole + ListAttachedRolePolicies when we
own it), addons with ListAddons + one DescribeAddon per addon (EKS has no batch describe), the OIDC provider with
ListOpenIDConnectProviders + GetOpenIDConnectProvider when I(associate_oidc_provider), and access entries with
ListAccessEntries when the authentication mode uses them.

A cluster found without the cluster's ownership tag is used as it is: kubeconfigs are written, nothing in AWS
is changed or deleted.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..iam.roles import delete_owned_role
from ..kernel.context import Context
from ..kernel.tier import Outcome
from . import addons, control_plane, oidc_provider
from . import cluster_plan as plan
from .access import node_roles, reconcile_access
from .eks_cluster_spec import EksClusterSpec, kubernetes_api_argument_spec

__all__ = ["EksClusterTier", "kubernetes_api_argument_spec"]
from .kubeconfig import write_kubeconfigs


class EksClusterTier:
    def parse(self, params: Mapping[str, Any]) -> EksClusterSpec:
        return EksClusterSpec.from_params(params)

    def validate(self, spec: EksClusterSpec, region: str | None) -> None:
        plan.validate_spec(spec)
        spec.kubernetes_api.validate()

    def reconcile(self, ctx: Context, spec: EksClusterSpec) -> Outcome:
        observed = control_plane.observe(ctx, spec)
        if spec.state == "absent":
            return Outcome(*delete(ctx, spec, observed))
        return Outcome(*apply(ctx, spec, observed))


def apply(ctx: Context, spec: EksClusterSpec, observed: control_plane.ObservedCluster) -> tuple[Any, Any]:
    before = cluster_view(observed.cluster, None)
    conditions: dict[str, Any] = {}
    nodes = node_roles(ctx, spec)
    role_arn, conditions["IAMControlPlaneRolesReady"] = control_plane.ensure_cluster_role(ctx, spec)
    cluster = control_plane.reconcile_cluster(ctx, spec, observed, role_arn)
    conditions["EKSControlPlaneReady"] = plan.ready_condition(cluster)
    if asked_without_wait(ctx, cluster):
        # What follows needs the cluster ACTIVE: a run that waits does it.
        return {"cluster": before}, cluster_only_view(cluster_view(cluster, None), conditions)
    installed = addons.no_addons()
    if observed.owned:
        installed, conditions["EKSAddonsConfigured"] = addons.reconcile_addons(ctx, spec, cluster)
    oidc = None
    if observed.owned and spec.associate_oidc_provider:
        oidc = oidc_provider.reconcile_oidc_provider(ctx, spec, cluster)
    aws_auth, conditions["IAMAuthenticatorConfigured"] = reconcile_access(ctx, spec, cluster, observed.owned, nodes)
    kubeconfigs = write_kubeconfigs(ctx, spec, cluster)
    after = {
        "cluster": cluster_view(cluster, oidc),
        "addons": installed,
        "kubeconfig": kubeconfigs,
        "aws_auth": aws_auth,
        "conditions": conditions,
    }
    return {"cluster": before}, after


def asked_without_wait(ctx: Context, cluster: Mapping[str, Any] | None) -> bool:
    """The cluster is being created and the caller asked for no wait (wait=false): its addons, OIDC provider, access
    and kubeconfigs wait for a run that waits until it is ACTIVE."""
    return not ctx.wait and not ctx.check_mode and (cluster or {}).get("status") == "CREATING"


def delete(ctx: Context, spec: EksClusterSpec, observed: control_plane.ObservedCluster) -> tuple[Any, Any]:
    cluster = observed.cluster
    before = {"cluster": cluster_view(cluster, None)}
    if cluster is not None and not observed.owned:
        ctx.warn(f"EKS cluster {spec.name} is not owned by cluster {ctx.cluster}; left alone")
        return before, cluster_only_view(None, {})
    gone = control_plane.delete_cluster(ctx, spec, cluster) if cluster is not None else True
    if not gone:
        # The deletion was started without a wait (wait=false), as the caller asked: the condition says so, and a
        # run that waits deletes the OIDC provider, the role and the files once the cluster is gone (the cluster
        # role does both in one run, with the network's egress released in between).
        return before, cluster_only_view(None, {"EKSControlPlaneReady": plan.deleting_condition()})
    oidc_provider.delete_owned_providers(ctx, plan.issuer_of(cluster))
    # Only a role carrying the cluster's ownership tags is deleted (a role_name we found untagged stays).
    delete_owned_role(ctx, spec.role_name)
    for path in spec.paths.all():
        ctx.ops.delete_file(path, "state absent")
    return before, cluster_only_view(None, {})


# the view --------------------------------------------------------------------------------------------------------
def cluster_only_view(cluster: dict[str, Any] | None, conditions: dict[str, Any]) -> dict[str, Any]:
    """The result when nothing beyond the cluster itself was reconciled: a deletion, or a creation asked for without
    a wait."""
    return {
        "cluster": cluster,
        "addons": addons.no_addons(),
        "kubeconfig": None,
        "aws_auth": None,
        "conditions": conditions,
    }


def cluster_view(cluster: Mapping[str, Any] | None, oidc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The result's ``cluster`` from DescribeCluster's answer (or the one check mode predicts)."""
    if cluster is None:
        return None
    vpc = cluster.get("resourcesVpcConfig") or {}
    encryption = cluster.get("encryptionConfig") or []
    return {
        "name": cluster.get("name"),
        "arn": cluster.get("arn"),
        "version": cluster.get("version"),
        "status": cluster.get("status"),
        "endpoint": cluster.get("endpoint"),
        "certificate_authority_data": (cluster.get("certificateAuthority") or {}).get("data"),
        "role_arn": cluster.get("roleArn"),
        "security_group_id": vpc.get("clusterSecurityGroupId"),
        "subnet_ids": vpc.get("subnetIds", []),
        "security_group_ids": vpc.get("securityGroupIds", []),
        "endpoint_access": {
            "public": vpc.get("endpointPublicAccess", True),
            "private": vpc.get("endpointPrivateAccess", False),
            "public_cidrs": vpc.get("publicAccessCidrs", []),
        },
        "logging": {
            key: log_type in plan.observed_log_types(cluster.get("logging")) for key, log_type in plan.LOG_TYPES.items()
        },
        "encryption": {
            "provider": (encryption[0].get("provider") or {}).get("keyArn"),
            "resources": encryption[0].get("resources", []),
        }
        if encryption
        else None,
        "authentication_mode": plan.observed_auth_mode(cluster),
        "oidc": dict(oidc) if oidc else {"issuer": plan.issuer_of(cluster)},
        "tags": dict(cluster.get("tags") or {}),
    }


MAPPING = dict(
    username=dict(type="str"),
    groups=dict(type="list", elements="str", default=[]),
    policy_arn=dict(type="str"),
)


def module_argument_spec() -> dict[str, Any]:
    """capa_eks_cluster's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        wait_timeout=dict(type="int", default=1800),  # sized for EKS: see DOCUMENTATION
        **kubernetes_api_argument_spec(),
        name=dict(type="str"),
        version=dict(type="str"),
        role_arn=dict(type="str"),
        role_name=dict(type="str"),
        subnets=dict(type="list", elements="raw", default=[]),
        restrict_private_subnets=dict(type="bool", default=False),
        security_group_ids=dict(type="list", elements="str", default=[]),
        endpoint_access=dict(
            type="dict",
            default={},
            options=dict(
                public=dict(type="bool", default=True),
                private=dict(type="bool", default=False),
                public_cidrs=dict(type="list", elements="str", default=["0.0.0.0/0"]),
            ),
        ),
        logging=dict(
            type="dict",
            default={},
            options={
                key: dict(type="bool", default=False)
                for key in ("api_server", "audit", "authenticator", "controller_manager", "scheduler")
            },
        ),
        encryption_config=dict(
            type="dict",
            options=dict(
                provider=dict(type="str"),
                resources=dict(type="list", elements="str", default=["secrets"]),
            ),
        ),
        access_config=dict(
            type="dict",
            default={},
            options=dict(
                authentication_mode=dict(
                    type="str", default="CONFIG_MAP", choices=["CONFIG_MAP", "API", "API_AND_CONFIG_MAP"]
                ),
                bootstrap_cluster_creator_admin_permissions=dict(type="bool", default=True),
            ),
        ),
        addons=dict(
            type="list",
            elements="dict",
            options=dict(
                name=dict(type="str", required=True),
                version=dict(type="str"),
                configuration=dict(type="str"),
                service_account_role_arn=dict(type="str"),
                conflict_resolution=dict(type="str", default="overwrite", choices=["overwrite", "none", "preserve"]),
            ),
        ),
        associate_oidc_provider=dict(type="bool", default=False),
        oidc_thumbprint=dict(type="str"),
        iam_authenticator=dict(
            type="dict",
            default={},
            options=dict(
                map_roles=dict(
                    type="list",
                    elements="dict",
                    default=[],
                    options=dict(rolearn=dict(type="str", required=True), **MAPPING),
                ),
                map_users=dict(
                    type="list",
                    elements="dict",
                    default=[],
                    options=dict(userarn=dict(type="str", required=True), **MAPPING),
                ),
            ),
        ),
        node_role_arns=dict(type="list", elements="str", default=[]),
        node_instance_profiles=dict(type="list", elements="str", default=[]),
        output_dir=dict(type="path", default=".capa"),
    )
