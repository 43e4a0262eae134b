"""Coverage of the processes Ansible forks for its tasks, at the price of what they run (make test).

Ansible runs every task in a worker process forked from ansible-playbook (a ``multiprocessing`` process that ends in
``os._exit``), and this collection's modules run inside those workers for local targets
(plugins/plugin_utils/in_process.py). Coverage's own ``concurrency = multiprocessing`` starts a new ``Coverage`` in
every worker: it reads the configuration again, decides afresh for every file the worker touches whether to measure
it, and writes a data file - about 70 ms of CPU per task, most of the suite's coverage cost, paid by ``set_fact``
and ``include_role`` alike. A forked worker already has the controller's tracer running, with those decisions made.
So instead:

* before each fork, the parent writes what it measured so far to its own data file (nothing when it ran none of
  plugins/ since the last fork), so the worker starts with nothing of the parent's in memory;
* when the worker's ``_bootstrap`` ends, the worker stops its inherited tracer and saves what it measured: coverage
  opens a data file of its own because the pid changed (a worker that ran none of plugins/ writes none).

It is loaded by a ``.pth`` file in the suite's venv (``make venv`` installs tools/coverage_forks.pth) when
``CAPA_COVERAGE_FORKS`` names this file, which tools/test_all.sh sets only with coverage on; in a process that is
not measured it does nothing.
"""

from __future__ import annotations

import multiprocessing.process
import os
from typing import Any


def _current() -> Any:
    try:
        import coverage
    except ImportError:
        return None
    return coverage.Coverage.current()


def _write_parents_data() -> None:
    cov = _current()
    if cov is not None:
        cov.get_data()  # flushes what the tracer collected into this process's data file


def _measured_bootstrap(original: Any) -> Any:
    def _bootstrap(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            cov = _current()
            if cov is not None:
                cov.stop()
                cov.save()

    _bootstrap.capa_coverage_forks = True  # type: ignore[attr-defined]
    return _bootstrap


def install() -> None:
    bootstrap = multiprocessing.process.BaseProcess._bootstrap  # type: ignore[attr-defined]
    if getattr(bootstrap, "capa_coverage_forks", False):
        return
    multiprocessing.process.BaseProcess._bootstrap = _measured_bootstrap(bootstrap)  # type: ignore[attr-defined]
    os.register_at_fork(before=_write_parents_data)


install()
