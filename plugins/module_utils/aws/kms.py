# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of KMS (the keys a spec names for encryption).

Describe-style functions return ``None`` when AWS says the resource does not exist (:func:`.errors.is_not_found`)
and decide nothing else.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from .errors import missing_as_none


def describe_key(ctx: Context, key_id: str) -> dict[str, Any] | None:
    """DescribeKey's ``KeyMetadata`` (by id, ARN or alias), ``None`` when there is no such key."""
    answer = missing_as_none(ctx.client("kms").describe_key, KeyId=key_id)
    return None if answer is None else answer["KeyMetadata"]
