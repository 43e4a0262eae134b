# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of IAM (roles, policies, instance profiles, OIDC providers).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from .errors import missing_as_none


def get_role(ctx: Context, name: str) -> dict[str, Any] | None:
    """GetRole, ``None`` when there is no such role."""
    answer = missing_as_none(ctx.client("iam").get_role, RoleName=name)
    return None if answer is None else answer["Role"]


def attached_role_policy_arns(ctx: Context, name: str) -> list[str]:
    """The managed policies attached to role ``name`` (not part of GetRole's answer); ``[]`` for no such role."""
    pages = missing_as_none(ctx.client("iam").paginate, "list_attached_role_policies", RoleName=name) or {}
    return [p["PolicyArn"] for p in pages.get("AttachedPolicies", [])]


def inline_role_policy_names(ctx: Context, name: str) -> list[str]:
    pages = missing_as_none(ctx.client("iam").paginate, "list_role_policies", RoleName=name) or {}
    return list(pages.get("PolicyNames", []))


def instance_profiles_of_role(ctx: Context, name: str) -> list[dict[str, Any]]:
    pages = missing_as_none(ctx.client("iam").paginate, "list_instance_profiles_for_role", RoleName=name) or {}
    return list(pages.get("InstanceProfiles", []))


def get_instance_profile(ctx: Context, name: str) -> dict[str, Any] | None:
    """GetInstanceProfile, ``None`` when there is no such instance profile (IAM has no batch read of them)."""
    answer = missing_as_none(ctx.client("iam").get_instance_profile, InstanceProfileName=name)
    return None if answer is None else answer["InstanceProfile"]
