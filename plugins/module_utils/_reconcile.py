# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the reconcile pattern every tier uses.

observe (one paginated describe per resource type) -> decide -> ``Operations.call`` for every mutating request.
``Operations.call`` is the only way a tier changes AWS: it records the call in the plan and, outside check mode,
makes it. In check mode it returns a predicted response instead, with placeholder ids for what would be
created, so the plan in check mode comes from exactly the code that applies it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ._connection import AwsSession, RetryingClient
from ._idempotency import send
from ._ownership import OWNED, ROLE_TAG, cluster_tag_key, owned_tags

PLACEHOLDER_PREFIX = "planned:"


def placeholder(kind: str, name: str) -> str:
    """An id that stands for a resource check mode would create: ``planned:vpc:demo-vpc``."""
    return f"{PLACEHOLDER_PREFIX}{kind}:{name}"


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PLACEHOLDER_PREFIX)


class SpecError(Exception):
    """Bad input, found before any AWS call. ``field`` is the option path the user has to fix."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ReconcileError(Exception):
    """A reconcile that cannot go on (an AWS state the spec cannot be reconciled with)."""


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
        # a blind resend that could make a second resource (see _idempotency).
        return send(client, method, params, self.lost_responses.append, self.claimed)

    @property
    def changed(self) -> bool:
        return bool(self.plan)

    def plan_as_list(self) -> list[dict[str, str]]:
        return [p.as_dict() for p in self.plan]


@dataclass
class Context:
    """What a tier needs from its module run, as plain values (no module object)."""

    session: AwsSession
    cluster: str
    check_mode: bool
    additional_tags: dict[str, str] = field(default_factory=dict)
    wait: bool = True
    wait_timeout: int = 600
    started: float = field(default_factory=time.monotonic)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ops = Operations(self.check_mode)

    def client(self, service: str, region: str | None = None) -> RetryingClient:
        """The run's client; another ``region`` only for reads that span regions (``capa_ami_info``)."""
        return self.session.client(service, region) if region else self.session.client(service)

    @property
    def region(self) -> str | None:
        return self.session.region

    def tags(self, role: str, name: str | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return owned_tags(self.cluster, role, name, self.additional_tags, extra)

    def owner_filters(self) -> list[dict[str, Any]]:
        """The describe filter that finds what this cluster owns."""
        return [{"Name": f"tag:{cluster_tag_key(self.cluster)}", "Values": [OWNED]}]

    def remaining(self) -> float:
        """Seconds left of the run's shared wait budget."""
        return max(0.0, self.wait_timeout - (time.monotonic() - self.started))

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def wait_until(
    describe: Callable[[], Any],
    done: Callable[[Any], bool],
    ctx: Context,
    what: str,
    delay: float = 5.0,
    failed: Callable[[Any], str | None] | None = None,
) -> Any:
    """Poll ``describe`` until ``done`` holds, within the run's remaining wait budget.

    Every waiter of a run shares one budget (``wait_timeout`` from the start of the run), so a run never
    waits longer than the user allowed, however many resources it waits for.
    """
    while True:
        observed = describe()
        if done(observed):
            return observed
        if failed is not None:
            reason = failed(observed)
            if reason:
                raise ReconcileError(f"{what}: {reason}")
        if ctx.remaining() <= 0:
            raise ReconcileError(f"timed out after {ctx.wait_timeout}s waiting for {what}")
        time.sleep(min(delay, max(ctx.remaining(), 0.1)))


def role_of(tags: Mapping[str, str]) -> str | None:
    return tags.get(ROLE_TAG)


def new_client_token() -> str:
    """An idempotency token (ClientToken / ClientRequestToken), new for each create intent.

    AWS answers a repeat of a token it knows (same parameters) with the FIRST resource, even one deleted since: a
    token derived from names would hand a resource re-created after a delete its dead predecessor. The token only
    has to survive the resends of one create within the run (``_idempotency``); a create lost in a killed run is
    found by its tags on the next run. 37 ASCII characters: within every AWS limit (EC2 64, Secrets Manager 32-64).
    """
    return "capa-" + uuid.uuid4().hex
