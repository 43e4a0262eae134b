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


def caller_account(ctx: Context) -> str:
    """The account the run's requests are signed in (STS GetCallerIdentity)."""
    return str(ctx.client("sts").get_caller_identity()["Account"])


def caller_arn(ctx: Context) -> str:
    """The ARN of the identity the run's requests are signed as (STS GetCallerIdentity: never denied by IAM)."""
    return str(ctx.client("sts").get_caller_identity()["Arn"])


def principal_of(caller: str) -> str | None:
    """The IAM principal whose policies apply to ``caller``: a user as it is, an assumed role's role (without its
    path, which the session ARN does not carry); None for the root user and federated sessions, which IAM's policy
    simulation does not take."""
    if ":assumed-role/" in caller:
        account, _sep, session = caller.partition(":assumed-role/")
        return f"{account.replace(':sts:', ':iam:', 1)}:role/{session.split('/', 1)[0]}"
    if caller.endswith(":root") or ":federated-user/" in caller:
        return None
    return caller


# IAM's simulator takes at most this many actions per request (and pages its answer).
SIMULATED_PER_REQUEST = 100


def simulate_principal(ctx: Context, principal: str, actions: list[str]) -> list[dict[str, Any]]:
    """IAM's ``EvaluationResults`` for ``actions`` on any resource (``*``) by ``principal``'s policies."""
    results: list[dict[str, Any]] = []
    for start in range(0, len(actions), SIMULATED_PER_REQUEST):
        pages = ctx.client("iam").paginate(
            "simulate_principal_policy",
            PolicySourceArn=principal,
            ActionNames=actions[start : start + SIMULATED_PER_REQUEST],
        )
        results += pages.get("EvaluationResults", [])
    return results
