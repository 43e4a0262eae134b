# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: IAM roles a cluster creates and owns (EKS control plane, node groups, Fargate pod execution).

CAPA marks such a role with ``kubernetes.io/cluster/<cluster>=owned`` (pkg/cloud/services/eks/roles.go); we add
CAPA's usual ownership, role and Name tags too. A role with either ownership tag of the cluster is managed:
its trust policy, attached managed policies, permissions boundary and tags are reconciled and it is deleted
with the cluster. Any other role of that name is used as it is, never changed or deleted.

Observing a role costs ``GetRole`` plus, for a managed role, ``ListAttachedRolePolicies`` (the attachments are
not part of GetRole's answer); both reads are ``aws.iam``'s.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping

from ..aws.errors import missing_as_none
from ..aws.iam import attached_role_policy_arns, get_role, inline_role_policy_names, instance_profiles_of_role
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import OWNED, ROLE_COMMON, cloud_provider_tag_key, dict_to_tags, is_owned, repair_tags, tags_to_dict

ROLE_PLACEHOLDER_KIND = "iam-role"


def aws_partition(region: str | None) -> str:
    if region and region.startswith("cn-"):
        return "aws-cn"
    if region and region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def managed_policy_arn(region: str | None, name: str) -> str:
    """ARN of an AWS managed policy (``AmazonEKSClusterPolicy`` …) in the region's partition."""
    return f"arn:{aws_partition(region)}:iam::aws:policy/{name}"


def role_is_owned(role_tags: Mapping[str, str] | None, cluster: str) -> bool:
    """CAPA's EKS marker (``kubernetes.io/cluster/<cluster>=owned``) or CAPA's ownership tag."""
    tags = role_tags or {}
    return tags.get(cloud_provider_tag_key(cluster)) == OWNED or is_owned(tags, cluster)


# Services whose trust statement also needs sts:TagSession: EKS Pod Identity tags the session it opens with the
# pod's cluster, namespace and service account (clusterawsadm's controllers role when EKS is enabled).
TAG_SESSION_SERVICES = frozenset({"pods.eks.amazonaws.com"})


def trust_policy(services: str | Iterable[str]) -> dict[str, Any]:
    """A trust policy letting AWS services assume the role (``eks.amazonaws.com`` …)."""
    principals = [services] if isinstance(services, str) else sorted(services)
    plain = [p for p in principals if p not in TAG_SESSION_SERVICES]
    tagging = [p for p in principals if p in TAG_SESSION_SERVICES]
    statements = []
    for group, actions in ((plain, "sts:AssumeRole"), (tagging, ["sts:AssumeRole", "sts:TagSession"])):
        if group:
            principal = {"Service": group[0] if len(group) == 1 else group}
            statements.append({"Effect": "Allow", "Principal": principal, "Action": actions})
    return {"Version": "2012-10-17", "Statement": statements}


def _allow_statements(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    statements = (document or {}).get("Statement", [])
    statements = [statements] if isinstance(statements, dict) else statements
    return [s for s in statements if s.get("Effect") == "Allow"]


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def trusted_services(document: Any) -> set[str]:
    """The services a trust policy lets assume the role (GetRole returns the document decoded or as text)."""
    services: set[str] = set()
    for statement in _allow_statements(document):
        services.update(_as_list((statement.get("Principal") or {}).get("Service")))
    return services


def trust_grants(document: Any) -> set[tuple[str, str]]:
    """(service, action) pairs a trust policy allows: what two trust policies are compared by."""
    grants: set[tuple[str, str]] = set()
    for statement in _allow_statements(document):
        for service in _as_list((statement.get("Principal") or {}).get("Service")):
            grants.update((service, action) for action in _as_list(statement.get("Action")))
    return grants


def role_placeholder_arn(name: str) -> str:
    return placeholder(ROLE_PLACEHOLDER_KIND, name)


def ensure_role(
    ctx: Context,
    name: str,
    trust_service: str | list[str],
    policy_arns: list[str],
    path: str = "/",
    permissions_boundary: str | None = None,
    tags: Mapping[str, str] | None = None,
    owns: Callable[[Mapping[str, str]], bool] | None = None,
) -> dict[str, Any]:
    """Create or reconcile the owned role ``name``; a role we do not own is returned as it is.

    ``tags`` and ``owns`` replace the cluster's tags and ownership test for roles that belong to no cluster
    (the account-level roles of the IAM bootstrap).

    Returns ``{name, arn, managed, created, policy_arns}``; in check mode a role to create has the ARN
    ``planned:iam-role:<name>``.
    """
    role = get_role(ctx, name)
    desired_tags = tags or ctx.tags(ROLE_COMMON, name, {cloud_provider_tag_key(ctx.cluster): OWNED})
    if role is None:
        return _create_role(ctx, name, trust_service, policy_arns, path, permissions_boundary, desired_tags)
    tags = tags_to_dict(role.get("Tags"))
    if not (owns(tags) if owns else role_is_owned(tags, ctx.cluster)):
        return {"name": name, "arn": role["Arn"], "managed": False, "created": False, "policy_arns": None}
    if role.get("Path", "/") != path:
        raise ReconcileError(f"IAM role {name} has path {role.get('Path')}, not {path}; a role's path cannot change")
    _reconcile_trust(ctx, name, role, trust_service)
    _reconcile_boundary(ctx, name, role, permissions_boundary)
    attached = _reconcile_policies(ctx, name, attached_role_policy_arns(ctx, name), policy_arns)
    repair_tags(ctx, "iam-role", name, name, tags, desired_tags)
    return {"name": name, "arn": role["Arn"], "managed": True, "created": False, "policy_arns": attached}


def _create_role(
    ctx: Context,
    name: str,
    trust_service: str | list[str],
    policy_arns: list[str],
    path: str,
    permissions_boundary: str | None,
    tags: Mapping[str, str],
) -> dict[str, Any]:
    iam = ctx.client("iam")
    request: dict[str, Any] = {
        "RoleName": name,
        "Path": path,
        "AssumeRolePolicyDocument": json.dumps(trust_policy(trust_service)),
        "Description": f"clusterapi.aws: role of cluster {ctx.cluster}",
        "Tags": dict_to_tags(tags),
    }
    if permissions_boundary:
        request["PermissionsBoundary"] = permissions_boundary
    answer = ctx.ops.call(
        iam,
        "create_role",
        resource=name,
        reason="missing",
        predicted={"Role": {"RoleName": name, "Arn": role_placeholder_arn(name)}},
        **request,
    )
    for arn in policy_arns:
        ctx.ops.call(iam, "attach_role_policy", resource=name, reason=f"attach {arn}", RoleName=name, PolicyArn=arn)
    return {"name": name, "arn": answer["Role"]["Arn"], "managed": True, "created": True, "policy_arns": policy_arns}


def _reconcile_trust(ctx: Context, name: str, role: Mapping[str, Any], trust_service: str | list[str]) -> None:
    wanted = {trust_service} if isinstance(trust_service, str) else set(trust_service)
    if trust_grants(role.get("AssumeRolePolicyDocument")) != trust_grants(trust_policy(trust_service)):
        ctx.ops.call(
            ctx.client("iam"),
            "update_assume_role_policy",
            resource=name,
            reason=f"trusted services differ from {', '.join(sorted(wanted))}",
            RoleName=name,
            PolicyDocument=json.dumps(trust_policy(trust_service)),
        )


def _reconcile_boundary(ctx: Context, name: str, role: Mapping[str, Any], boundary: str | None) -> None:
    current = (role.get("PermissionsBoundary") or {}).get("PermissionsBoundaryArn")
    if current == boundary:
        return
    iam = ctx.client("iam")
    if boundary:
        ctx.ops.call(
            iam,
            "put_role_permissions_boundary",
            resource=name,
            reason=f"permissions boundary {current or 'none'} -> {boundary}",
            RoleName=name,
            PermissionsBoundary=boundary,
        )
    else:
        ctx.ops.call(
            iam, "delete_role_permissions_boundary", resource=name, reason="no boundary in the spec", RoleName=name
        )


def _reconcile_policies(ctx: Context, name: str, attached: list[str], wanted: list[str]) -> list[str]:
    """Like CAPA's EnsurePoliciesAttached: detach what is not wanted, attach what is missing."""
    iam = ctx.client("iam")
    for arn in attached:
        if arn not in wanted:
            ctx.ops.call(iam, "detach_role_policy", resource=name, reason=f"detach {arn}", RoleName=name, PolicyArn=arn)
    for arn in wanted:
        if arn not in attached:
            ctx.ops.call(iam, "attach_role_policy", resource=name, reason=f"attach {arn}", RoleName=name, PolicyArn=arn)
    return list(wanted)


def delete_owned_role(ctx: Context, name: str, owns: Callable[[Mapping[str, str]], bool] | None = None) -> None:
    """Delete the role if the cluster owns it (policies detached, inline policies and profiles removed first).

    ``owns`` replaces the cluster ownership test, as in :func:`ensure_role`.
    """
    if is_placeholder(name):
        return
    role = get_role(ctx, name)
    if role is None:
        return
    tags = tags_to_dict(role.get("Tags"))
    if not (owns(tags) if owns else role_is_owned(tags, ctx.cluster)):
        ctx.warn(f"IAM role {name} is not owned by cluster {ctx.cluster}; left alone")
        return
    iam = ctx.client("iam")
    for arn in attached_role_policy_arns(ctx, name):
        ctx.ops.call(iam, "detach_role_policy", resource=name, reason="role deleted", RoleName=name, PolicyArn=arn)
    for policy in inline_role_policy_names(ctx, name):
        ctx.ops.call(iam, "delete_role_policy", resource=name, reason="role deleted", RoleName=name, PolicyName=policy)
    for profile in instance_profiles_of_role(ctx, name):
        ctx.ops.call(
            iam,
            "remove_role_from_instance_profile",
            resource=profile["InstanceProfileName"],
            reason=f"role {name} deleted",
            InstanceProfileName=profile["InstanceProfileName"],
            RoleName=name,
        )
    # Gone meanwhile (another run deleted it) is what was wanted.
    missing_as_none(ctx.ops.call, iam, "delete_role", resource=name, reason="state absent", RoleName=name)
