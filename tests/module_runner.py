"""A module runner for the tests: the collection's modules run as the controller runs them for a local target.

For ``ansible_connection: local`` on the controller's own Python, Ansible runs this collection's modules in process
(plugins/plugin_utils/in_process.py): the controller imports boto3, botocore, amazon.aws and the collection once, and
each task's worker - a fork of it - runs the module with its arguments handed over by
``in_process.module_arguments``. This runner is that arrangement without the playbook around it: one process per
pytest worker imports what the controller preloads (every module of the collection among it), then forks a child for
each module call, which runs the module's file as ``__main__`` (as AnsiballZ starts a module) with the arguments,
environment and directory the test gave, its stdout and stderr in files. The child is a clean copy of the preloaded
runner every time: nothing one call leaves behind reaches the next, as between two tasks of a playbook.

Protocol (one JSON document per line): the test writes ``{"module", "arguments", "env", "cwd", "stdout",
"stderr"}`` on stdin; the runner answers ``{"pid": <child>}`` when the child started and ``{"rc": <exit code>}``
when it ended (a negative code: killed by that signal). End of stdin ends the runner.

Coverage (``make test``): the runner starts under coverage like every Python process of the suite
(``patch = subprocess``), and its children are ``multiprocessing`` forks, which tools/coverage_forks.py measures as
it measures Ansible's task workers.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import runpy
import sys
import traceback
from typing import Any

from ansible_collections.clusterapi.aws.plugins.plugin_utils import in_process


def run_module(request: dict[str, Any]) -> None:
    """In the forked child: run the module as a worker would; ends in SystemExit with its exit code."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    encoded = json.dumps({"ANSIBLE_MODULE_ARGS": request["arguments"]}).encode()
    with in_process.module_arguments(encoded):
        try:
            # As AnsiballZ starts a module: its file run as __main__ (its imports are already loaded here).
            runpy.run_module(in_process.python_name(request["module"]), run_name="__main__", alter_sys=True)
        except SystemExit:
            raise
        except BaseException:  # what a module process prints before it dies
            traceback.print_exc()
            raise SystemExit(1) from None


def serve(requests: Any, answers: Any) -> None:
    # A multiprocessing fork, as Ansible forks its task workers: make test's coverage hook (tools/coverage_forks.py)
    # measures this child exactly as it measures them.
    fork = multiprocessing.get_context("fork")
    for line in requests:
        answers.flush()
        child = fork.Process(target=run_module, args=(json.loads(line),))
        child.start()
        answers.write(json.dumps({"pid": child.pid}) + "\n")
        answers.flush()
        child.join()
        answers.write(json.dumps({"rc": child.exitcode}) + "\n")
        answers.flush()


if __name__ == "__main__":
    # The protocol gets its own descriptor; fd 1 is left to what a module prints by mistake outside its result.
    answers = os.fdopen(os.dup(1), "w")
    serve(sys.stdin, answers)
