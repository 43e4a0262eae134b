# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): CAPA-style conditions (``{"status", "reason", "message"}``), the shape every tier reports."""

from __future__ import annotations

from typing import Any


def condition(status: bool, reason: str, message: str = "") -> dict[str, Any]:
    return {"status": status, "reason": reason, "message": message}
