# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): reading AWS's errors, and the one rule for "it does not exist".

AWS says "not found" in many spellings: ``InvalidVpcID.NotFound`` (EC2, one per resource type),
``LoadBalancerNotFound`` / ``AccessPointNotFound`` (ELB), ``TargetGroupNotFound`` (ELBv2),
``ResourceNotFoundException`` (EKS, Secrets Manager), ``NoSuchEntity`` (IAM), ``ParameterNotFound`` (SSM),
``NoSuchResourceException`` (Service Quotas).
The service wrappers turn every one of them into ``None`` (or an empty list) with :func:`is_not_found`, so no tier
decides it again.
"""

from __future__ import annotations

from typing import Any

NOT_FOUND_CODES = frozenset(
    {
        "NoSuchEntity",
        "ResourceNotFoundException",
        "NotFoundException",
        "AccessPointNotFound",
        "ParameterNotFound",
        # Service Quotas: a quota (or a service) it does not know.
        "NoSuchResourceException",
    }
)


def error_code(error: Exception) -> str:
    return getattr(error, "response", {}).get("Error", {}).get("Code", "")


def error_message(error: Exception) -> str:
    return getattr(error, "response", {}).get("Error", {}).get("Message", "") or error_code(error) or str(error)


def is_not_found(error: Exception) -> bool:
    """True when AWS answered that the resource asked for does not exist (any service's spelling)."""
    code = error_code(error)
    # EC2 spells a few as ``<Kind>.NotFoundException`` (``InvalidLaunchTemplateName.NotFoundException``).
    return code.endswith(("NotFound", "NotFoundException")) or code in NOT_FOUND_CODES


def missing_as_none(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``, or None when AWS answers that the resource does not exist."""
    import botocore.exceptions  # the SDK is checked by AnsibleAWSModule before any tier runs

    try:
        return call(*args, **kwargs)
    except botocore.exceptions.ClientError as e:
        if is_not_found(e):
            return None
        raise
