# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of Service Quotas (the account's applied quota values).

Describe-style functions return ``None`` when AWS says the quota does not exist (:func:`.errors.is_not_found`)
and decide nothing else.
"""

from __future__ import annotations

from ..kernel.context import Context
from .errors import missing_as_none


def quota_value(ctx: Context, service_code: str, quota_code: str) -> float | None:
    """The applied value of one quota (GetServiceQuota), else AWS's default (GetAWSDefaultServiceQuota: a quota
    never changed in the account may have no applied value); ``None`` when Service Quotas knows neither."""
    client = ctx.client("service-quotas")
    answer = missing_as_none(client.get_service_quota, ServiceCode=service_code, QuotaCode=quota_code)
    if answer is None:
        answer = missing_as_none(client.get_aws_default_service_quota, ServiceCode=service_code, QuotaCode=quota_code)
    if answer is None:
        return None
    value = answer.get("Quota", {}).get("Value")
    return None if value is None else float(value)
