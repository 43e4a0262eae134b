# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of Secrets Manager (bootstrap data, the cluster PKI).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from ..kernel.context import Context
from .errors import missing_as_none


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
