# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of EKS (clusters, node groups, Fargate profiles, addons, access entries).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from .errors import error_code, error_message, missing_as_none, require_operation

# The refusal of a delete whose resource is already gone: an answer, not a failure
# (``ctx.ops.call_unless_refused(..., refused=GONE)``).
GONE = ("ResourceNotFoundException",)


def describe_cluster(ctx: Context, name: str) -> dict[str, Any] | None:
    answer = missing_as_none(ctx.client("eks").describe_cluster, name=name)
    return answer["cluster"] if answer else None


def cluster_versions(ctx: Context) -> list[dict[str, Any]]:
    """The Kubernetes versions AWS offers for new EKS clusters (DescribeClusterVersions, all pages).

    Without ``includeAll`` AWS lists the versions in standard or extended support: one past extended support, or
    never offered, is absent from the answer.
    """
    client = ctx.client("eks")
    require_operation(client, "describe_cluster_versions")  # newer than the botocore floor
    pages = client.paginate("describe_cluster_versions")
    return list(pages.get("clusterVersions", []))


def describe_update(ctx: Context, cluster: str, update_id: str, addon: str | None = None) -> dict[str, Any]:
    extra = {"addonName": addon} if addon else {}
    return ctx.client("eks").describe_update(name=cluster, updateId=update_id, **extra)["update"]


def describe_nodegroup(ctx: Context, cluster: str, name: str) -> dict[str, Any] | None:
    answer = missing_as_none(ctx.client("eks").describe_nodegroup, clusterName=cluster, nodegroupName=name)
    return answer["nodegroup"] if answer else None


def describe_fargate_profile(ctx: Context, cluster: str, name: str) -> dict[str, Any] | None:
    answer = missing_as_none(ctx.client("eks").describe_fargate_profile, clusterName=cluster, fargateProfileName=name)
    return answer["fargateProfile"] if answer else None


def describe_addon(ctx: Context, cluster: str, name: str) -> dict[str, Any] | None:
    answer = missing_as_none(ctx.client("eks").describe_addon, clusterName=cluster, addonName=name)
    return answer["addon"] if answer else None


def _names(ctx: Context, method: str, key: str, **params: Any) -> list[str]:
    """Every page of a List call, ``[]`` when the cluster it lists from does not exist."""
    answer = missing_as_none(ctx.client("eks").paginate, method, **params)
    return list((answer or {}).get(key, []))


def list_addons(ctx: Context, cluster: str) -> list[str]:
    return _names(ctx, "list_addons", "addons", clusterName=cluster)


def list_nodegroups(ctx: Context, cluster: str) -> list[str]:
    return _names(ctx, "list_nodegroups", "nodegroups", clusterName=cluster)


def list_fargate_profiles(ctx: Context, cluster: str) -> list[str]:
    return _names(ctx, "list_fargate_profiles", "fargateProfileNames", clusterName=cluster)


def list_access_entries(ctx: Context, cluster: str) -> list[str]:
    return _names(ctx, "list_access_entries", "accessEntries", clusterName=cluster)


def associated_access_policies(ctx: Context, cluster: str, principal_arn: str) -> set[str]:
    """The ARNs of the access policies associated with one access entry."""
    answer = ctx.client("eks").paginate(
        "list_associated_access_policies", clusterName=cluster, principalArn=principal_arn
    )
    return {a["policyArn"] for a in answer.get("associatedAccessPolicies", [])}


def role_not_assumable_yet(error: Exception) -> bool:
    """EKS's answer for a role IAM has not propagated yet ("could not be assumed"): worth sending again."""
    return error_code(error) == "InvalidParameterException" and "role" in error_message(error).lower()
