# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): the two errors a tier raises; the runner turns them into one failure, at the top.

Modules do not import this file; they use :mod:`capa` (the public facade).
"""

from __future__ import annotations


class SpecError(Exception):
    """Bad input, found before any AWS call. ``field`` is the option path the user has to fix."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ReconcileError(Exception):
    """A reconcile that cannot go on (an AWS state the spec cannot be reconciled with)."""


class RemoteError(Exception):
    """Something other than AWS (the Kubernetes API, etcd) refused a request. ``code`` says how, in its own words
    (``TooManyRequests``, ``NotFound``, ``etcdserver: unhealthy cluster``); ``status`` is the HTTP status if any."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
