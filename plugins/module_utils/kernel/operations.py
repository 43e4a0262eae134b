# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): the only gate for a mutation.

observe (one paginated describe per resource type) -> decide -> ``Operations.call`` for every mutating request.
``Operations.call`` is the only way a tier changes anything: it records the call in the plan and, outside check
mode, makes it. In check mode it returns a predicted response instead, with placeholder ids for what would be
created, so the plan in check mode comes from exactly the code that applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .idempotency import send
from .session import RetryingClient

PLACEHOLDER_PREFIX = "planned:"


def placeholder(kind: str, name: str) -> str:
    """An id that stands for a resource check mode would create: ``planned:vpc:demo-vpc``."""
    return f"{PLACEHOLDER_PREFIX}{kind}:{name}"


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PLACEHOLDER_PREFIX)


@dataclass
class PlannedCall:
    call: str
    resource: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"call": self.call, "resource": self.resource, "reason": self.reason}


class Operations:
    """Records and (outside check mode) makes the mutating calls of one run, in order."""

    def __init__(self, check_mode: bool) -> None:
        self.check_mode = check_mode
        self.plan: list[PlannedCall] = []
        self.lost_responses: list[str] = []
        self.claimed: set[str] = set()

    def call(
        self,
        client: RetryingClient,
        method: str,
        resource: str,
        reason: str,
        predicted: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """Make (or, in check mode, only plan) ``client.method(**params)``.

        ``predicted`` is what check mode returns in place of AWS's answer (placeholders for new ids).
        A parameter that still holds a placeholder can only happen in check mode; it is never sent.
        """
        self.plan.append(
            PlannedCall(f"{client.meta.service_model.service_name}:{client.api_name(method)}", resource, reason)
        )
        if self.check_mode:
            value = predicted() if callable(predicted) else predicted
            return dict(value or {})
        # A lost answer is resolved by token, by the create's own tags or by an "already done" answer, never by
        # a blind resend that could make a second resource (see kernel.idempotency).
        return send(client, method, params, self.lost_responses.append, self.claimed)

    @property
    def changed(self) -> bool:
        return bool(self.plan)

    def plan_as_list(self) -> list[dict[str, str]]:
        return [p.as_dict() for p in self.plan]
