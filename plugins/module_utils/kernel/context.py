# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): what a tier needs from its module run, as plain values (no module object)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .operations import Operations
from .session import AwsSession, RetryingClient
from .tags import OWNED, cluster_tag_key, owned_tags
from .waiting import POLL, Backoff, Wait

PROGRESS_KEPT = 20  # progress lines a result keeps (the log has them all)

# Who else hears a run's progress while it happens: each is called with every progress line. The action plugin of
# a module that runs in the controller's worker process (plugins/plugin_utils/in_process.py) adds the controller's
# display here for the module's run, so a terminal and an AWX job show a long wait as it goes (the kernel knows
# nothing of Ansible's controller). A module process has none: its progress reaches the log and, afterwards, the
# result.
PROGRESS_LISTENERS: list[Callable[[str], None]] = []


@dataclass
class Context:
    """One module run: the session, the cluster, check mode, the shared wait budget, the plan and warnings."""

    session: AwsSession
    cluster: str
    check_mode: bool
    additional_tags: dict[str, str] = field(default_factory=dict)
    wait: bool = True
    wait_timeout: int = 600
    # The run's time: every wait reads this clock and sleeps through this function (a unit test passes fakes).
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    started: float = -1.0  # set from ``clock`` when not given
    warnings: list[str] = field(default_factory=list)
    # Where progress of a long wait goes as it happens (the module's log: syslog / journald on the controller).
    reporter: Callable[[str], None] = field(default=lambda _message: None, repr=False)
    progress_log: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()
        self.ops = Operations(self.check_mode, self.remaining, self.sleep)

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
        return max(0.0, self.wait_timeout - (self.clock() - self.started))

    def wait_for(
        self, what: str, limit: float = 0.0, backoff: Backoff = POLL, sleep: Callable[[float], None] | None = None
    ) -> Wait:
        """A wait of this run (:mod:`.waiting`): paced by ``backoff``, within the run's budget and ``limit``;
        ``sleep`` pauses it instead of the run's own (one that may end early: a watch that sees the change)."""
        return Wait(what, self.remaining, self.progress, limit, backoff, self.clock, sleep or self.sleep)

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def progress(self, message: str) -> None:
        """A long wait says where it stands: now to the log and to :data:`PROGRESS_LISTENERS`, and in the result
        (the last few) afterwards."""
        stamped = f"{int(self.clock() - self.started)}s: {message}"
        self.reporter(stamped)
        for listener in list(PROGRESS_LISTENERS):
            listener(message)
        self.progress_log.append(stamped)
        del self.progress_log[:-PROGRESS_KEPT]
