# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): waiting within the run's one shared time budget."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from .errors import ReconcileError

if TYPE_CHECKING:
    from .context import Context

# A wait reports where it stands this often (the module's log, and the last lines in its result).
PROGRESS_EVERY = 30.0


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
    started = last_report = time.monotonic()
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
        if time.monotonic() - last_report >= PROGRESS_EVERY:
            last_report = time.monotonic()
            ctx.progress(
                f"waiting for {what}: {int(last_report - started)}s so far, "
                f"{int(ctx.remaining())}s of wait_timeout left"
            )
        time.sleep(min(delay, max(ctx.remaining(), 0.1)))
