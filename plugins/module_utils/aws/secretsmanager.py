# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of Secrets Manager (bootstrap data, the cluster PKI).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from .errors import missing_as_none


def get_secret_value(ctx: Context, secret_id: str) -> dict[str, Any] | None:
    """GetSecretValue's answer (the current version), ``None`` when there is no such secret."""
    return missing_as_none(ctx.client("secretsmanager").get_secret_value, SecretId=secret_id)


def list_secrets(ctx: Context, name_prefix: str) -> list[dict[str, Any]]:
    """ListSecrets' entries (ARN, description, tags; no value) whose names start with ``name_prefix``."""
    client = ctx.client("secretsmanager")
    return client.paginate("list_secrets", Filters=[{"Key": "name", "Values": [name_prefix]}]).get("SecretList", [])


def delete_secret(ctx: Context, name: str, reason: str) -> None:
    """Remove a secret for good (no recovery window); one already gone is fine (it stays a planned call)."""
    missing_as_none(
        ctx.ops.call,
        ctx.client("secretsmanager"),
        "delete_secret",
        resource=name,
        reason=reason,
        SecretId=name,
        ForceDeleteWithoutRecovery=True,
    )
