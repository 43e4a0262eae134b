# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_eks_cluster's test material: its parameters, DescribeCluster / DescribeAddon / update answers, one run.

A plain module (not a conftest), imported by the test files of this package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import cluster_plan
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster import EksClusterTier
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

CLUSTER = "demo"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE_TAG = "sigs.k8s.io/cluster-api-provider-aws/role"
ARN = "arn:aws:eks:us-east-1:123456789012:cluster/demo"
ROLE_ARN = "arn:aws:iam::123456789012:role/given"
NODE_ROLE = "arn:aws:iam::123456789012:role/nodes"
ADMIN_ROLE = "arn:aws:iam::123456789012:role/admins"
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_KEY = "arn:aws:kms:us-east-1:123456789012:key/ffffffff-12ab-34cd-56ef-1234567890ab"
ISSUER = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
PROVIDER_ARN = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
ALL_OFF = {
    "clusterLogging": [{"types": ["api", "audit", "authenticator", "controllerManager", "scheduler"], "enabled": False}]
}


def params(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """The module's parameters after argument-spec defaults."""
    out = {
        "cluster_name": CLUSTER,
        "state": "present",
        "name": None,
        "version": "1.31",
        "role_arn": ROLE_ARN,
        "role_name": None,
        "subnets": ["subnet-0a", "subnet-0b"],
        "restrict_private_subnets": False,
        "security_group_ids": [],
        "endpoint_access": {"public": True, "private": False, "public_cidrs": ["0.0.0.0/0"]},
        "logging": {k: False for k in cluster_plan.LOG_TYPES},
        "encryption_config": None,
        "access_config": {"authentication_mode": "CONFIG_MAP", "bootstrap_cluster_creator_admin_permissions": True},
        "addons": None,
        "associate_oidc_provider": False,
        "oidc_thumbprint": None,
        "iam_authenticator": {"map_roles": [], "map_users": []},
        "node_role_arns": [],
        "node_instance_profiles": [],
        "output_dir": str(tmp_path / "out"),
        "kubernetes_api": None,
    }
    out.update(extra)
    return out


def described(version: str = "1.31", status: str = "ACTIVE", **extra: Any) -> dict[str, Any]:
    """A DescribeCluster answer for a cluster this module made (tags and all)."""
    cluster = {
        "name": CLUSTER,
        "arn": ARN,
        "version": version,
        "status": status,
        "endpoint": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificateAuthority": {"data": "Q0EK"},
        "roleArn": ROLE_ARN,
        "resourcesVpcConfig": {
            "subnetIds": ["subnet-0a", "subnet-0b"],
            "endpointPublicAccess": True,
            "endpointPrivateAccess": False,
            "publicAccessCidrs": ["0.0.0.0/0"],
            "clusterSecurityGroupId": "sg-0eks",
        },
        "logging": ALL_OFF,
        "identity": {"oidc": {"issuer": ISSUER}},
        "accessConfig": {"authenticationMode": "CONFIG_MAP"},
        "tags": {OWNER: "owned", ROLE_TAG: "common", "Name": CLUSTER, f"kubernetes.io/cluster/{CLUSTER}": "owned"},
    }
    cluster.update(extra)
    return {"cluster": cluster}


def update(update_id: str, status: str = "InProgress", kind: str = "VersionUpdate") -> dict[str, Any]:
    """An answer of UpdateClusterVersion / UpdateClusterConfig / DescribeUpdate ..."""
    return {"update": {"id": update_id, "status": status, "type": kind}}


def addon(name: str, status: str = "ACTIVE", owned: bool = True, version: str = "v1", **extra: Any) -> dict[str, Any]:
    """A DescribeAddon answer; ``owned`` addons carry the cluster's ownership tag."""
    tags = {OWNER: "owned", ROLE_TAG: "common"} if owned else {}
    return {
        "addon": {
            "addonName": name,
            "clusterName": CLUSTER,
            "status": status,
            "addonVersion": version,
            "addonArn": f"arn:aws:eks:us-east-1:123456789012:addon/demo/{name}/x",
            "tags": tags,
            **extra,
        }
    }


def run(
    session: AwsSession, p: dict[str, Any], check: bool = False, wait: bool = True, **ctx_args: Any
) -> tuple[Context, Any]:
    """Validate and reconcile ``p`` as the runner does; returns the run's context and ``after``."""
    ctx = Context(session=session, cluster=CLUSTER, check_mode=check, wait=wait, wait_timeout=30, **ctx_args)
    _before, after = reconciled(EksClusterTier(), ctx, p)
    return ctx, after


def eks_calls(ctx: Context) -> list[str]:
    return [p.call for p in ctx.ops.plan if p.call.startswith("eks:")]


def aws_calls(ctx: Context) -> list[str]:
    """The planned calls that are AWS requests (not local files)."""
    return [p.call for p in ctx.ops.plan if not p.call.startswith("file:")]


def reconciled(tier: Any, ctx: Any, params: Any) -> tuple[Any, Any]:
    """``(before, after)`` of a tier run on module parameters, as capa.run_tier runs it: parse, validate, reconcile."""
    spec = tier.parse(params)
    tier.validate(spec, "us-east-1")
    outcome = tier.reconcile(ctx, spec)
    return outcome.before, outcome.after
