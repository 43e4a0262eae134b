# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): the only gate for a mutation.

observe (one paginated describe per resource type) -> decide -> ``Operations.call`` for every mutating request.
``Operations.call`` is the only way a tier changes anything: it records the call in the plan and, outside check
mode, makes it. In check mode it returns a predicted response instead, with placeholder ids for what would be
created, so the plan in check mode comes from exactly the code that applies it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Union, runtime_checkable

from .errors import RemoteError
from .idempotency import send
from .local_files import read_text_if_any, write_private
from .session import RetryingClient

try:
    import botocore.exceptions
except ImportError:
    pass  # AnsibleAWSModule reports the missing SDK before any of this runs.

PLACEHOLDER_PREFIX = "planned:"


def placeholder(kind: str, name: str) -> str:
    """An id that stands for a resource check mode would create: ``planned:vpc:demo-vpc``."""
    return f"{PLACEHOLDER_PREFIX}{kind}:{name}"


def is_placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PLACEHOLDER_PREFIX)


def placeholders_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(option path, value)`` of every check-mode placeholder inside a module's parameters."""
    if is_placeholder(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from placeholders_in(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from placeholders_in(item, f"{path}[{index}]")


@dataclass
class PlannedCall:
    call: str
    resource: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"call": self.call, "resource": self.resource, "reason": self.reason}


@runtime_checkable
class Endpoint(Protocol):
    """A client of something other than AWS whose writes go through the same gate (the Kubernetes API, etcd).

    ``planned_name`` is how a call shows in the plan and in ``api_calls`` (``k8s:PatchNode``, ``etcd:MemberRemove``);
    ``invoke`` makes it and raises :class:`~.errors.RemoteError` when the other side refuses.
    """

    def planned_name(self, method: str) -> str: ...

    def invoke(self, method: str, params: dict[str, Any]) -> Any: ...


Client = Union[RetryingClient, Endpoint]


def _refusal_code(error: Exception) -> str:
    if isinstance(error, RemoteError):
        return error.code
    return getattr(error, "response", {}).get("Error", {}).get("Code", "")


# The pseudo-service of local actions in the plan (``file:WriteFile``): the controller's own files are changes too.
FILE = "file"
UNREAD = object()  # write_file's ``current`` when the caller has not read the file


class Operations:
    """Records and (outside check mode) makes the mutating calls of one run, in order.

    Nothing else adds to or removes from the plan: a call AWS refuses in a way the caller expected
    (``refused_ok``) is taken out again here, a call retried while a condition holds (``retry_if``) is planned
    once, and local file writes are planned by :meth:`write_file` / :meth:`delete_file`.
    """

    def __init__(
        self,
        check_mode: bool,
        remaining: Callable[[], float] = lambda: 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.check_mode = check_mode
        self.remaining = remaining  # seconds left of the run's wait budget (retries stay within it)
        self.sleep = sleep
        self.plan: list[PlannedCall] = []
        self.lost_responses: list[str] = []
        self.claimed: set[str] = set()

    def call(
        self,
        client: Client,
        method: str,
        resource: str,
        reason: str,
        predicted: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        retry_if: Callable[[Exception], bool] | None = None,
        retry_delay: float = 5.0,
        **params: Any,
    ) -> dict[str, Any]:
        """Make (or, in check mode, only plan) ``client.method(**params)``.

        ``predicted`` is what check mode returns in place of AWS's answer (placeholders for new ids).
        A parameter that still holds a placeholder can only happen in check mode; it is never sent.
        ``retry_if``: an error after which the same call is sent again, ``retry_delay`` seconds later, while the
        run's wait budget lasts (IAM's eventual consistency: a role created a second ago "cannot be assumed").
        It stays one call in the plan.
        """
        answer = self._make(client, method, resource, reason, predicted, (), retry_if, retry_delay, params)
        return answer if answer is not None else {}

    def call_unless_refused(
        self,
        client: Client,
        method: str,
        resource: str,
        reason: str,
        refused: tuple[str, ...],
        predicted: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> dict[str, Any] | None:
        """:meth:`call`, except that AWS refusing it with one of the ``refused`` codes is an answer, not a failure
        (a create that finds the resource already made by someone else): the call changed nothing, so it leaves
        the plan again, and ``None`` is returned."""
        return self._make(client, method, resource, reason, predicted, refused, None, 0.0, params)

    def _make(
        self,
        client: Client,
        method: str,
        resource: str,
        reason: str,
        predicted: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None,
        refused: tuple[str, ...],
        retry_if: Callable[[Exception], bool] | None,
        retry_delay: float,
        params: dict[str, Any],
    ) -> dict[str, Any] | None:
        if isinstance(client, RetryingClient):
            name = f"{client.meta.service_model.service_name}:{client.api_name(method)}"
        else:
            name = client.planned_name(method)
        entry = PlannedCall(name, resource, reason)
        self.plan.append(entry)
        if self.check_mode:
            value = predicted() if callable(predicted) else predicted
            return dict(value or {})
        while True:
            try:
                if not isinstance(client, RetryingClient):
                    return client.invoke(method, params)
                # A lost answer is resolved by token, by the create's own tags or by an "already done" answer,
                # never by a blind resend that could make a second resource (see kernel.idempotency).
                return send(client, method, params, self.lost_responses.append, self.claimed)
            except (botocore.exceptions.ClientError, RemoteError) as e:
                if _refusal_code(e) in refused:
                    self.plan.remove(entry)
                    return None
                if retry_if is None or not retry_if(e) or self.remaining() <= retry_delay:
                    raise
            self.sleep(retry_delay)

    def write_file(
        self, path: Path, text: str, what: str, reason: str | None = None, current: str | None | object = UNREAD
    ) -> bool:
        """Write a local file (mode 0600) unless it already holds ``text``; planned as ``file:WriteFile``.

        A file that already says the same is no change, so a run that changes nothing reports ``changed=false``
        even when it re-renders its outputs. The plan's reason is ``<what> missing`` / ``<what> differs``, or
        ``reason`` when the caller knows better why (a kubeconfig whose certificate expires soon). ``current`` is
        the file's text (None: no file) when the caller has read it already (for a diff), so it is read once.
        """
        if current is UNREAD:
            current = read_text_if_any(path)
        if current == text:
            return False
        reason = reason or (f"{what} missing" if current is None else f"{what} differs")
        self.plan.append(PlannedCall(f"{FILE}:WriteFile", str(path), reason))
        if not self.check_mode:
            write_private(path, text)
        return True

    def delete_file(self, path: Path, reason: str) -> bool:
        if not path.exists():
            return False
        self.plan.append(PlannedCall(f"{FILE}:DeleteFile", str(path), reason))
        if not self.check_mode:
            path.unlink()
        return True

    def write_output(self, path: Path, text: str) -> None:
        """Refresh a local output that is not state (a token that expires within minutes): never a change."""
        if not self.check_mode:
            write_private(path, text)

    @property
    def changed(self) -> bool:
        return bool(self.plan)

    def plan_as_list(self) -> list[dict[str, str]]:
        return [p.as_dict() for p in self.plan]
