# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of SSM Parameter Store (bootstrap data, public AMI parameters).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations

from ..kernel.context import Context

GET_PARAMETERS_MAX = 10  # names per GetParameters request


def parameter_values(ctx: Context, names: list[str], region: str | None = None) -> dict[str, str]:
    """``{name: value}`` of those ``names`` that exist, one ``GetParameters`` per ten names.

    GetParameters, not GetParameter: a missing name is an answer (``InvalidParameters``), not an error.
    """
    ssm = ctx.client("ssm", region)
    found: dict[str, str] = {}
    for start in range(0, len(names), GET_PARAMETERS_MAX):
        answer = ssm.get_parameters(Names=names[start : start + GET_PARAMETERS_MAX])
        found.update({p["Name"]: p["Value"] for p in answer.get("Parameters", [])})
    return found
