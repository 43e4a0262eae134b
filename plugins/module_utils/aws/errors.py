# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): reading AWS's errors, and the one rule for "it does not exist".

AWS says "not found" in many spellings: ``InvalidVpcID.NotFound`` (EC2, one per resource type),
``LoadBalancerNotFound`` / ``AccessPointNotFound`` (ELB), ``TargetGroupNotFound`` (ELBv2),
``ResourceNotFoundException`` (EKS, Secrets Manager), ``NoSuchEntity`` (IAM), ``ParameterNotFound`` (SSM),
``NoSuchResourceException`` (Service Quotas).
The service wrappers turn every one of them into ``None`` (or an empty list) with :func:`is_not_found`, so no tier
decides it again.

A read can also fail for a reason that says nothing about the resource: the caller may not make it (a policy
without the permission) or the endpoint does not implement it (a partition or an AWS-compatible endpoint without the
service). :func:`cannot_read` names those two; a read that only serves a check becomes a warning then, never a
failure of the run.
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


DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",  # EC2
        "UnauthorizedAccess",
        "AuthorizationError",  # SNS-style query APIs
        "Forbidden",
    }
)
UNSUPPORTED_CODES = frozenset(
    {
        "InvalidAction",  # query APIs: an Action the endpoint does not know
        "UnknownOperationException",  # JSON APIs
        "UnsupportedOperation",
        "UnsupportedOperationException",
        "NotImplemented",
        "OperationNotSupportedException",
    }
)


class NotInSdk(Exception):
    """The installed botocore does not know the operation (it predates it): the read cannot be made with this SDK."""

    def __init__(self, service: str, operation: str) -> None:
        import botocore

        super().__init__(f"botocore {botocore.__version__} does not know {service}:{operation}")
        self.response = {"Error": {"Code": "NotInSdk", "Message": str(self)}}


def require_operation(client: Any, method: str) -> None:
    """Raise :class:`NotInSdk` when ``client``'s botocore predates ``method`` (a newer AWS read on the floors)."""
    if method not in client.meta.method_to_api_mapping:
        raise NotInSdk(client.meta.service_model.service_name, method)


def error_code(error: Exception) -> str:
    return getattr(error, "response", {}).get("Error", {}).get("Code", "")


def error_message(error: Exception) -> str:
    return getattr(error, "response", {}).get("Error", {}).get("Message", "") or error_code(error) or str(error)


def is_not_found(error: Exception) -> bool:
    """True when AWS answered that the resource asked for does not exist (any service's spelling)."""
    code = error_code(error)
    # EC2 spells a few as ``<Kind>.NotFoundException`` (``InvalidLaunchTemplateName.NotFoundException``).
    return code.endswith(("NotFound", "NotFoundException")) or code in NOT_FOUND_CODES


def http_status(error: Exception) -> int | None:
    return getattr(error, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")


def cannot_read(error: Exception) -> str | None:
    """``"denied"`` when the caller may not make the request, ``"unsupported"`` when the endpoint does not implement
    it, ``"sdk"`` when the installed botocore predates it, None when the answer is about the thing read (not found,
    invalid, throttled ...)."""
    code, status = error_code(error), http_status(error)
    if isinstance(error, NotInSdk):
        return "sdk"
    if code in DENIED_CODES or status == 403:
        return "denied"
    if code in UNSUPPORTED_CODES or status == 501:
        return "unsupported"
    # A REST API answers an unknown path with a bare 404: no resource was named, so nothing was "not found".
    if status == 404 and not is_not_found(error):
        return "unsupported"
    return None


def missing_as_none(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)``, or None when AWS answers that the resource does not exist."""
    import botocore.exceptions  # the SDK is checked by AnsibleAWSModule before any tier runs

    try:
        return call(*args, **kwargs)
    except botocore.exceptions.ClientError as e:
        if is_not_found(e):
            return None
        raise
