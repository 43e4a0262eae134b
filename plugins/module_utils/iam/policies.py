# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the IAM policy documents of the IAM bootstrap (pure data and pure builders).

The controllers policies allow what this collection's modules call and nothing else: :data:`CONTROLLER_ACTIONS`
lists the API operations per tier file, and a unit test scans ``plugins/module_utils`` for every boto3 method the
code calls and checks it is allowed here, so the policy cannot drift from the code. The IAM bootstrap itself
(``_iam_bootstrap``) is not in the table: it runs once, with an administrator's credentials, before the
controllers role exists (CAPA's controllers cannot create their own policies either).

The control-plane and nodes policies are what runs on the machines: the in-tree/external cloud provider (CCM)
as CAPA grants it, the bootstrap-data backends, and the termination watcher (``_termination``).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

SECRETS_MANAGER = "secrets-manager"
SSM_PARAMETER_STORE = "ssm-parameter-store"
SECRET_BACKENDS = (SECRETS_MANAGER, SSM_PARAMETER_STORE)

SECRET_ARN = "arn:*:secretsmanager:*:*:secret:aws.cluster.x-k8s.io/*"
# The cluster's PKI secret (_kubeadm.SECRET_NAME_FORMAT, clusterapi.aws/<cluster>/pki) is the controllers' own: no
# machine reads it, so only the controllers policy names it.
PKI_SECRET_ARN = "arn:*:secretsmanager:*:*:secret:clusterapi.aws/*"
PARAMETER_ARN = "arn:*:ssm:*:*:parameter/cluster.x-k8s.io/*"
EKS_AMI_PARAMETER_ARN = "arn:*:ssm:*:*:parameter/aws/service/eks/optimized-ami/*"
# The etcd snapshot buckets (kubeadm/etcd_snapshot.py: <cluster>-etcd-snapshots-<account>-<region>) and their
# objects. A bucket named otherwise (the module's ``bucket``) needs a statement of its own (capa_iam's
# extra_statements).
SNAPSHOT_BUCKET_ARNS = ["arn:*:s3:::*-etcd-snapshots-*", "arn:*:s3:::*-etcd-snapshots-*/*"]
# S3's IAM actions are not its API operations' names: what each operation the snapshot tier makes needs (the
# presigned GET of a restore is signed with the controller's credentials, so it needs GetObject too).
S3_ACTIONS: dict[str, tuple[str, ...]] = {
    "CreateBucket": ("s3:CreateBucket", "s3:PutBucketOwnershipControls"),
    "DeleteBucket": ("s3:DeleteBucket",),
    "GetBucketTagging": ("s3:GetBucketTagging",),
    "PutBucketTagging": ("s3:PutBucketTagging",),
    "GetBucketEncryption": ("s3:GetEncryptionConfiguration",),
    "PutBucketEncryption": ("s3:PutEncryptionConfiguration",),
    "GetBucketVersioning": ("s3:GetBucketVersioning",),
    "PutBucketVersioning": ("s3:PutBucketVersioning",),
    "GetPublicAccessBlock": ("s3:GetBucketPublicAccessBlock",),
    "PutPublicAccessBlock": ("s3:PutBucketPublicAccessBlock",),
    "GetBucketLifecycleConfiguration": ("s3:GetLifecycleConfiguration",),
    "PutBucketLifecycleConfiguration": ("s3:PutLifecycleConfiguration",),
    "ListObjectVersions": ("s3:ListBucketVersions",),
    "PutObject": ("s3:PutObject", "s3:PutObjectTagging"),
    "CreateMultipartUpload": ("s3:PutObject", "s3:PutObjectTagging"),
    "UploadPart": ("s3:PutObject",),
    "CompleteMultipartUpload": ("s3:PutObject",),
    "AbortMultipartUpload": ("s3:AbortMultipartUpload",),
    "HeadObject": ("s3:GetObject", "s3:GetObjectVersion"),
    "GetObject": ("s3:GetObject", "s3:GetObjectVersion"),
    "DeleteObjects": ("s3:DeleteObject", "s3:DeleteObjectVersion"),
}
# SSE-KMS: writing a snapshot makes a data key, reading it (a restore's presigned GET) decrypts one - only through S3.
SNAPSHOT_KMS_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")

# The operations each tier makes, as IAM actions (service prefix : API operation). Actions scoped to a resource
# below (secrets, parameters, IAM) are listed here too; the builder moves them to their scoped statement.
CONTROLLER_ACTIONS: dict[str, tuple[str, ...]] = {
    "ami": ("ec2:DescribeImages", "ec2:DescribeInstanceTypes"),
    "ami_info": ("ec2:DescribeImages",),
    "asg": (
        "autoscaling:CancelInstanceRefresh",
        "autoscaling:CreateAutoScalingGroup",
        "autoscaling:CreateOrUpdateTags",
        "autoscaling:DeleteAutoScalingGroup",
        "autoscaling:DeleteTags",
        "autoscaling:DeleteLifecycleHook",
        "autoscaling:DescribeAutoScalingGroups",
        "autoscaling:DescribeInstanceRefreshes",
        "autoscaling:DescribeLifecycleHooks",
        "autoscaling:PutLifecycleHook",
        "autoscaling:ResumeProcesses",
        "autoscaling:StartInstanceRefresh",
        "autoscaling:SuspendProcesses",
        "autoscaling:UpdateAutoScalingGroup",
    ),
    "launch_template": (
        "ec2:CreateLaunchTemplate",
        "ec2:CreateLaunchTemplateVersion",
        "ec2:DeleteLaunchTemplate",
        "ec2:DeleteLaunchTemplateVersions",
        "ec2:DescribeLaunchTemplateVersions",
        "ec2:DescribeLaunchTemplates",
    ),
    "bootstrap_data": (
        "secretsmanager:CreateSecret",
        "secretsmanager:DeleteSecret",
        "secretsmanager:ListSecrets",
        "secretsmanager:TagResource",
        "ssm:PutParameter",
        "ssm:DeleteParameters",
        "ssm:AddTagsToResource",
    ),
    # capa_preflight: reads only, before the first change (one request per resource type).
    "preflight": (
        "ec2:DescribeAddresses",
        "ec2:DescribeAvailabilityZones",
        "ec2:DescribeImages",
        "ec2:DescribeInstanceTypeOfferings",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeInstances",
        "ec2:DescribeKeyPairs",
        "ec2:DescribeNatGateways",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeVpcs",
        "elasticloadbalancing:DescribeLoadBalancers",
        "iam:GetInstanceProfile",
        "kms:DescribeKey",
        "servicequotas:GetAWSDefaultServiceQuota",
        "servicequotas:GetServiceQuota",
        "tag:GetResources",
        # The permission check: what the run needs, simulated for the caller before the first change.
        "iam:SimulatePrincipalPolicy",
        "sts:GetCallerIdentity",
    ),
    "etcd_snapshots": tuple(sorted({a for actions in S3_ACTIONS.values() for a in actions})),
    "pki_store": (
        "secretsmanager:CreateSecret",
        "secretsmanager:DeleteSecret",
        "secretsmanager:GetSecretValue",
        "secretsmanager:ListSecrets",
        "secretsmanager:PutSecretValue",
        "secretsmanager:TagResource",
        "secretsmanager:UntagResource",
    ),
    "asg_info": ("autoscaling:DescribeAutoScalingGroups",),
    "blockers": (
        "ec2:DescribeInstances",
        "ec2:DescribeInternetGateways",
        "ec2:DescribeNatGateways",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeRouteTables",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeVpcEndpoints",
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeTags",
        "elasticloadbalancing:DescribeTargetGroups",
    ),
    "cluster_info": (
        "ec2:DescribeAddresses",
        "ec2:DescribeInstances",
        "ec2:DescribeInternetGateways",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribeNatGateways",
        "ec2:DescribeRouteTables",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeTags",
        "ec2:DescribeVpcs",
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeTags",
        "tag:GetResources",
    ),
    "connection": ("sts:AssumeRole",),
    "ec2": ("ec2:CreateTags", "ec2:DeleteTags", "ec2:DescribeNetworkInterfaces"),
    "elb": (
        "elasticloadbalancing:AddTags",
        "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
        "elasticloadbalancing:AttachLoadBalancerToSubnets",
        "elasticloadbalancing:ConfigureHealthCheck",
        "elasticloadbalancing:CreateListener",
        "elasticloadbalancing:CreateLoadBalancer",
        "elasticloadbalancing:CreateLoadBalancerListeners",
        "elasticloadbalancing:CreateTargetGroup",
        "elasticloadbalancing:DeleteListener",
        "elasticloadbalancing:DeleteLoadBalancer",
        "elasticloadbalancing:DeleteLoadBalancerListeners",
        "elasticloadbalancing:DeleteTargetGroup",
        "elasticloadbalancing:DescribeListeners",
        "elasticloadbalancing:DescribeLoadBalancerAttributes",
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeTags",
        "elasticloadbalancing:DescribeTargetGroupAttributes",
        "elasticloadbalancing:DescribeTargetGroups",
        "elasticloadbalancing:DetachLoadBalancerFromSubnets",
        "elasticloadbalancing:ModifyListener",
        "elasticloadbalancing:ModifyLoadBalancerAttributes",
        "elasticloadbalancing:ModifyTargetGroup",
        "elasticloadbalancing:ModifyTargetGroupAttributes",
        "elasticloadbalancing:RemoveTags",
        "elasticloadbalancing:SetSecurityGroups",
        "elasticloadbalancing:SetSubnets",
        "ec2:DescribeTags",
    ),
    "fleet": (
        "ec2:CreateFleet",
        "ec2:DeleteFleets",
        "ec2:DescribeFleetInstances",
        "ec2:DescribeFleets",
        "ec2:DescribeInstances",
        "ec2:ModifyFleet",
    ),
    "external_gc": (
        "ec2:DeleteSecurityGroup",
        "ec2:DescribeSecurityGroups",
        "ec2:RevokeSecurityGroupIngress",
        "elasticloadbalancing:DeleteLoadBalancer",
        "elasticloadbalancing:DeleteTargetGroup",
        "elasticloadbalancing:DescribeLoadBalancers",
        "elasticloadbalancing:DescribeTags",
        "tag:GetResources",
    ),
    "instances": (
        "ec2:CreateTags",
        "ec2:DescribeInstanceStatus",
        "ec2:DescribeInstances",
        "ec2:ModifyInstanceMetadataOptions",
        "ec2:RunInstances",
        "ec2:TerminateInstances",
        "elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
        "elasticloadbalancing:DeregisterTargets",
        "elasticloadbalancing:DescribeTargetHealth",
        "elasticloadbalancing:RegisterInstancesWithLoadBalancer",
        "elasticloadbalancing:RegisterTargets",
        # RunInstances with an instance profile, an ASG or a fleet launching one, passes the role.
        "iam:PassRole",
    ),
    "security_groups": (
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:CreateSecurityGroup",
        "ec2:DeleteSecurityGroup",
        "ec2:DescribeSecurityGroups",
        "ec2:RevokeSecurityGroupIngress",
    ),
    "subnets": (
        "ec2:AllocateAddress",
        "ec2:AssociateRouteTable",
        "ec2:CreateNatGateway",
        "ec2:CreateRoute",
        "ec2:CreateRouteTable",
        "ec2:CreateSubnet",
        "ec2:DeleteNatGateway",
        "ec2:DeleteRoute",
        "ec2:DeleteRouteTable",
        "ec2:DeleteSubnet",
        "ec2:DescribeAvailabilityZones",
        "ec2:DisassociateRouteTable",
        "ec2:ModifySubnetAttribute",
        "ec2:ReleaseAddress",
        "ec2:ReplaceRoute",
    ),
    "vpc": (
        "ec2:AssociateVpcCidrBlock",
        "ec2:AttachInternetGateway",
        "ec2:CreateInternetGateway",
        "ec2:CreateVpc",
        "ec2:DeleteInternetGateway",
        "ec2:DeleteVpc",
        "ec2:DescribeVpcAttribute",
        "ec2:DetachInternetGateway",
        "ec2:ModifyVpcAttribute",
    ),
}

# What only the EKS path calls (CAPA's separate controllers-eks policy).
CONTROLLER_EKS_ACTIONS: dict[str, tuple[str, ...]] = {
    "eks": (
        "eks:AssociateAccessPolicy",
        "eks:AssociateEncryptionConfig",
        "eks:CreateAccessEntry",
        "eks:CreateAddon",
        "eks:CreateCluster",
        "eks:DeleteAddon",
        "eks:DeleteCluster",
        "eks:DescribeAddon",
        "eks:DescribeCluster",
        "eks:DescribeUpdate",
        "eks:ListAccessEntries",
        "eks:ListAddons",
        "eks:ListAssociatedAccessPolicies",
        "eks:TagResource",
        "eks:UntagResource",
        "eks:UpdateAddon",
        "eks:UpdateClusterConfig",
        "eks:UpdateClusterVersion",
        "iam:AddClientIDToOpenIDConnectProvider",
        "iam:CreateOpenIDConnectProvider",
        "iam:DeleteOpenIDConnectProvider",
        "iam:GetOpenIDConnectProvider",
        "iam:ListOpenIDConnectProviders",
        "iam:TagOpenIDConnectProvider",
        "iam:UntagOpenIDConnectProvider",
        "iam:UpdateOpenIDConnectProviderThumbprint",
    ),
    "eks_fargate": (
        "eks:CreateFargateProfile",
        "eks:DeleteFargateProfile",
        "eks:DescribeFargateProfile",
        "eks:ListFargateProfiles",
    ),
    "eks_nodegroup": (
        "eks:CreateNodegroup",
        "eks:DeleteNodegroup",
        "eks:DescribeNodegroup",
        "eks:ListNodegroups",
        "eks:UpdateNodegroupConfig",
        "eks:UpdateNodegroupVersion",
    ),
    "iam": (
        "iam:AttachRolePolicy",
        "iam:CreateRole",
        "iam:DeleteRole",
        "iam:DeleteRolePermissionsBoundary",
        "iam:DeleteRolePolicy",
        "iam:DetachRolePolicy",
        "iam:GetRole",
        "iam:ListAttachedRolePolicies",
        "iam:ListInstanceProfilesForRole",
        "iam:ListRolePolicies",
        "iam:PutRolePermissionsBoundary",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:TagRole",
        "iam:UntagRole",
        "iam:UpdateAssumeRolePolicy",
        "iam:PassRole",
    ),
    "ami_info": ("ssm:GetParameters",),
    # capa_preflight on an EKS spec: is the version offered for new clusters.
    "eks_preflight": ("eks:DescribeClusterVersions",),
}

# CAPA's cloud-provider policy for control-plane machines (cloudformation/bootstrap/cluster_api_node.go).
CONTROL_PLANE_ACTIONS: tuple[str, ...] = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeTags",
    "ec2:AssignIpv6Addresses",
    "ec2:AttachVolume",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:CreateRoute",
    "ec2:CreateSecurityGroup",
    "ec2:CreateTags",
    "ec2:CreateVolume",
    "ec2:DeleteRoute",
    "ec2:DeleteSecurityGroup",
    "ec2:DeleteVolume",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeRegions",
    "ec2:DescribeRouteTables",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVolumes",
    "ec2:DescribeVpcs",
    "ec2:DetachVolume",
    "ec2:ModifyInstanceAttribute",
    "ec2:ModifyVolume",
    "ec2:RevokeSecurityGroupIngress",
    "elasticloadbalancing:AddTags",
    "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
    "elasticloadbalancing:AttachLoadBalancerToSubnets",
    "elasticloadbalancing:ConfigureHealthCheck",
    "elasticloadbalancing:CreateListener",
    "elasticloadbalancing:CreateLoadBalancer",
    "elasticloadbalancing:CreateLoadBalancerListeners",
    "elasticloadbalancing:CreateLoadBalancerPolicy",
    "elasticloadbalancing:CreateTargetGroup",
    "elasticloadbalancing:DeleteListener",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeleteLoadBalancerListeners",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
    "elasticloadbalancing:DeregisterTargets",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DescribeLoadBalancerPolicies",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetHealth",
    "elasticloadbalancing:DetachLoadBalancerFromSubnets",
    "elasticloadbalancing:ModifyListener",
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:RegisterInstancesWithLoadBalancer",
    "elasticloadbalancing:RegisterTargets",
    "elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer",
    "elasticloadbalancing:SetLoadBalancerPoliciesOfListener",
    "iam:CreateServiceLinkedRole",
    "kms:DescribeKey",
)

# The node's cloud provider, image pulls, Session Manager and the termination watcher.
NODE_ACTIONS: tuple[str, ...] = (
    "autoscaling:CompleteLifecycleAction",
    "autoscaling:DescribeAutoScalingInstances",
    "ec2:DescribeInstances",
    "ec2:DescribeRegions",
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:DescribeRepositories",
    "ecr:GetAuthorizationToken",
    "ecr:GetDownloadUrlForLayer",
    "ecr:GetRepositoryPolicy",
    "ecr:ListImages",
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
    "s3:GetEncryptionConfiguration",
)

# Permissions only the preflight's checks use (the controllers' tiers never call them). A policy without them still
# builds every cluster: the preflight skips the check a permission serves and the run warns which one, naming the
# permission. The generated policies keep them, in statements whose Sid starts with "Optional", so a security team
# that drops them does so knowingly. A unit test keeps this table equal to the preflight-only actions of the tables
# above.
OPTIONAL_SID_PREFIX = "Optional"
OPTIONAL_ACTIONS: dict[str, str] = {
    "ec2:DescribeInstanceTypeOfferings": "each group's instance types are offered in its zones",
    "ec2:DescribeKeyPairs": "the key pairs the spec names exist",
    "iam:GetInstanceProfile": "the instance profiles the spec names exist",
    "iam:SimulatePrincipalPolicy": (
        "the caller holds every permission the run needs, checked before the first change (IAM's policy simulation)"
    ),
    "kms:DescribeKey": "the EKS encryption key exists, is enabled and is for ENCRYPT_DECRYPT",
    "servicequotas:GetAWSDefaultServiceQuota": "the quotas leave room for what the run adds (AWS's default values)",
    "servicequotas:GetServiceQuota": "the quotas leave room for what the run adds (the account's applied values)",
    "eks:DescribeClusterVersions": "the EKS version is one AWS offers for new clusters",
}
# IAM's policy simulation of a principal acts on that principal: the identities that run the playbooks.
PRINCIPAL_ARNS = ["arn:*:iam::*:user/*", "arn:*:iam::*:role/*"]

SERVICE_LINKED_ROLE_SERVICES = (
    "autoscaling.amazonaws.com",
    "elasticloadbalancing.amazonaws.com",
    "spot.amazonaws.com",
)
EKS_SERVICE_LINKED_ROLE_SERVICES = ("eks.amazonaws.com", "eks-nodegroup.amazonaws.com", "eks-fargate.amazonaws.com")


def _statement(actions: Iterable[str], resources: str | list[str], sid: str, **extra: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": sorted(set(actions))}
    statement["Resource"] = resources
    statement.update(extra)
    return statement


def _document(statements: list[dict[str, Any]], extra: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [s for s in statements if s["Action"]] + [dict(s) for s in extra]}


def _flatten(table: Mapping[str, tuple[str, ...]]) -> set[str]:
    return {action for actions in table.values() for action in actions}


def _is_secret(action: str) -> bool:
    # ListSecrets takes no resource (IAM allows it on "*" only): it stays in the general statement.
    return action.startswith("secretsmanager:") and action != "secretsmanager:ListSecrets"


def _is_parameter(action: str) -> bool:
    return action in ("ssm:PutParameter", "ssm:DeleteParameter", "ssm:DeleteParameters", "ssm:AddTagsToResource")


def _backend_statements(backends: Iterable[str], secret_actions: set[str], parameter_actions: set[str]) -> list:
    statements = []
    if SECRETS_MANAGER in backends:
        statements.append(_statement(secret_actions, SECRET_ARN, "BootstrapSecrets"))
    if SSM_PARAMETER_STORE in backends:
        statements.append(_statement(parameter_actions, PARAMETER_ARN, "BootstrapParameters"))
    return statements


def unscoped_needed(tiers: Iterable[str]) -> list[str]:
    """The permissions the tiers named (keys of the tables above) need that the generated policies grant on any
    resource (``*``), optional ones left out: what IAM's policy simulation can judge without the resources' ARNs."""
    tables = {**CONTROLLER_ACTIONS, **CONTROLLER_EKS_ACTIONS}
    documents = (controllers_policy("", SECRET_BACKENDS), controllers_eks_policy())
    unscoped = {
        action
        for document in documents
        for statement in document["Statement"]
        if statement["Resource"] == "*" and "Condition" not in statement and not is_optional(statement)
        for action in statement["Action"]
    }
    return sorted({a for tier in tiers for a in tables[tier] if a in unscoped})


def is_optional(statement: Mapping[str, Any]) -> bool:
    """A statement of permissions the collection can do without (see :data:`OPTIONAL_ACTIONS`)."""
    return str(statement.get("Sid", "")).startswith(OPTIONAL_SID_PREFIX)


def controllers_policy(suffix: str, backends: Iterable[str], extra: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What the identity running the playbooks needs for self-managed clusters."""
    actions = _flatten(CONTROLLER_ACTIONS)
    optional = {a for a in actions if a in OPTIONAL_ACTIONS}
    general = {
        a for a in actions - optional if not (_is_secret(a) or _is_parameter(a) or a.startswith(("iam:", "s3:")))
    }
    statements = [
        _statement(general, "*", "Controllers"),
        _statement(["iam:PassRole"], f"arn:*:iam::*:role/*{suffix}", "PassClusterRoles"),
        _statement(
            ["iam:CreateServiceLinkedRole"],
            "arn:*:iam::*:role/aws-service-role/*",
            "ServiceLinkedRoles",
            Condition={"StringLike": {"iam:AWSServiceName": list(SERVICE_LINKED_ROLE_SERVICES)}},
        ),
    ]
    statements += [
        _statement({a for a in actions if a.startswith("s3:")}, SNAPSHOT_BUCKET_ARNS, "EtcdSnapshots"),
        _statement(
            SNAPSHOT_KMS_ACTIONS,
            "*",
            "EtcdSnapshotEncryption",
            Condition={"StringLike": {"kms:ViaService": "s3.*.amazonaws.com"}},
        ),
    ]
    # pki_store keeps the cluster's CA in Secrets Manager whatever the bootstrap-data backend.
    secret_actions = {a for a in actions if _is_secret(a)}
    statements.append(_statement(secret_actions, [SECRET_ARN, PKI_SECRET_ARN], "ClusterSecrets"))
    if SSM_PARAMETER_STORE in backends:
        statements.append(_statement({a for a in actions if _is_parameter(a)}, PARAMETER_ARN, "BootstrapParameters"))
    statements += [
        _statement({a for a in optional if not a.startswith("iam:")}, "*", "OptionalPreflightChecks"),
        # The preflight reads the instance profiles a spec names (any name: the user's or the bootstrap's).
        _statement(
            {a for a in optional if a == "iam:GetInstanceProfile"},
            "arn:*:iam::*:instance-profile/*",
            "OptionalInstanceProfileCheck",
        ),
        _statement(
            {a for a in optional if a == "iam:SimulatePrincipalPolicy"}, PRINCIPAL_ARNS, "OptionalPermissionCheck"
        ),
    ]
    return _document(statements, extra)


def controllers_eks_policy(extra: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What the EKS path adds: EKS itself, the cluster-owned roles and OIDC providers, the EKS AMI parameters."""
    actions = _flatten(CONTROLLER_EKS_ACTIONS)
    optional = {a for a in actions if a in OPTIONAL_ACTIONS}
    statements = [
        _statement({a for a in actions - optional if a.startswith("eks:")}, "*", "Eks"),
        _statement(
            {a for a in actions if a.startswith("iam:") and "OpenIDConnect" not in a},
            # iam:RemoveRoleFromInstanceProfile acts on the instance profile (AWS's service authorization reference).
            ["arn:*:iam::*:role/*", "arn:*:iam::*:instance-profile/*"],
            "EksRoles",
        ),
        _statement({a for a in actions if "OpenIDConnect" in a}, "*", "EksOidcProviders"),
        _statement({a for a in actions if a.startswith("ssm:")}, EKS_AMI_PARAMETER_ARN, "EksAmiParameters"),
        _statement(
            ["iam:CreateServiceLinkedRole"],
            "arn:*:iam::*:role/aws-service-role/*",
            "EksServiceLinkedRoles",
            Condition={"StringLike": {"iam:AWSServiceName": list(EKS_SERVICE_LINKED_ROLE_SERVICES)}},
        ),
        _statement(optional, "*", "OptionalEksPreflightChecks"),
    ]
    return _document(statements, extra)


def control_plane_policy(extra: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    return _document([_statement(CONTROL_PLANE_ACTIONS, "*", "CloudProvider")], extra)


def nodes_policy(backends: Iterable[str], extra: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    backends = list(backends)
    statements = [_statement(NODE_ACTIONS, "*", "Node")]
    statements += _backend_statements(
        backends,
        {"secretsmanager:GetSecretValue", "secretsmanager:DeleteSecret"},
        {"ssm:GetParameter", "ssm:DeleteParameter"},
    )
    return _document(statements, extra)


def policy_size(document: Mapping[str, Any]) -> int:
    """The length IAM counts against its 6,144-character limit (whitespace is not counted)."""
    return len(json.dumps(document, separators=(",", ":")))
