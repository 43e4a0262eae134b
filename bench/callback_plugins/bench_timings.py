"""The benchmark's task clock: each task's start and end on each host, one JSON line per task and host.

bench/run.py enables it for every measured ``ansible-playbook`` run of the phases (both sides) with
``ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins ANSIBLE_CALLBACKS_ENABLED=bench_timings`` and names the file in
``BENCH_TIMINGS_FILE``; BENCHMARKS.md's waterfall of where a create spends its time is made from these lines. It is
not part of the collection (nothing under plugins/ is timed by it or depends on it).

Each line: ``{"host", "role", "task", "start", "end", "status"}`` with epoch seconds; a loop is one line (from the
task's start on the host to its result). Under the ``free`` strategy hosts run tasks side by side, which is why the
start is taken per host (``v2_runner_on_start``) rather than per task banner as ``profile_tasks`` does.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: bench_timings
type: aggregate
short_description: Each task's start and end per host as JSON lines (bench/run.py)
description:
  - Writes one JSON line per task and host to the file named by the BENCH_TIMINGS_FILE environment variable.
requirements:
  - Enabled with ANSIBLE_CALLBACKS_ENABLED=bench_timings and BENCH_TIMINGS_FILE set.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timings"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ.get("BENCH_TIMINGS_FILE")
        self._started: dict[tuple[str, str], float] = {}

    def v2_runner_on_start(self, host: Any, task: Any) -> None:
        self._started[(host.get_name(), task._uuid)] = time.time()

    def _end(self, result: Any, status: str) -> None:
        host, task = result._host.get_name(), result._task
        start = self._started.pop((host, task._uuid), None)
        if not self._path or start is None:
            return
        role = task._role.get_name() if task._role else ""
        line = {"host": host, "role": role, "task": task.get_name(), "start": start, "end": time.time()}
        line["status"] = status
        with open(self._path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._end(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._end(result, "failed")

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._end(result, "skipped")

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._end(result, "unreachable")
