# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run the collection's modules inside the controller when the target is the controller itself.

Every module of this collection talks to AWS and to the workload cluster over the network; the host it runs on is
only where its Python process starts. For the usual target - ``localhost`` over ``ansible_connection: local`` - that
process costs more than the reconcile: a new interpreter, AnsiballZ's payload, then boto3, botocore and amazon.aws
imported again for every task (about 0.3 CPU-seconds each time, most of a no-op run's wall time). So for a local
target whose Python is the controller's own, the action plugin runs the module's ``main()`` in the worker process
Ansible already forked for the task, where boto3 is already imported (this file imports it once, in the
controller, before the workers fork).

It is the same module, with the same bytes on the wire: the arguments are encoded as Ansible encodes them for a
module process (the module's serialization profile), the module reads them through ``AnsibleModule`` as always, and
its printed result is parsed by the same code that parses a module process's output - so check mode, diff,
``no_log``, warnings, ``module_defaults`` and errors behave exactly as they do out of process. The task's
``environment`` applies to the module's ``os.environ`` while it runs. Ansible's netcommon does the same for network
modules (its ``import_modules`` option).

Anything else runs the module as a module process, unchanged: another connection, ``become``, ``async``, an
interpreter that is not the controller's (``ansible_python_interpreter`` pointing at another venv), or the host
variable ``capa_in_process: false``.

A module that runs here also shows its long waits while they last: every progress line of the run (an EKS control
plane being created, nodes joining, a drain; at least every 30 seconds of a wait, module_utils/kernel/waiting.py)
goes to the controller's display as ``[capa] <host>: waiting for ...``. In the worker that display is a proxy:
ansible-core hands each line to the main process, which prints it at once - in a terminal, and in
ansible-runner's stdout and job events (event ``verbose``), which is what an AWX job shows. The lines go to
stderr, as warnings do, so a machine-readable stdout callback (``json``) stays one document. A module process has
no such channel: its progress reaches the host's log (syslog / journald) as it happens and the task's result
(``progress``) when it ends.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import json
import os
import pkgutil
import sys
import traceback
from collections.abc import Iterator
from typing import Any

from ansible import constants as C
from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import context as kernel_context

# ansible-core 2.19 and later hand a module its arguments and take its result through a serialization profile, and
# mark the controller's process; 2.17 and 2.18 (meta/runtime.yml's floor is 2.17) encode with AnsibleJSONEncoder and
# have neither. Each difference is taken where it is used, by what the running ansible-core has.
try:
    from ansible.module_utils.common.json import Direction, get_module_encoder
except ImportError:  # ansible-core 2.17 and 2.18
    Direction = get_module_encoder = None
try:
    from ansible.module_utils import _internal as _core_internal
except ImportError:  # ansible-core 2.17
    _core_internal = None
# A module result's internal keys: removed from the parsed dict up to 2.20, by the parsed result object itself
# (``UnifiedTaskResult.remove_internal_keys``) from 2.21, which has no such function.
try:
    from ansible.vars.clean import remove_internal_keys
except ImportError:  # ansible-core 2.21 and later
    remove_internal_keys = None

# Imported here, in the controller, so that every worker Ansible forks for a task has them already (Ansible's
# strategy loads an action plugin's class in the controller before it forks the task's worker). A module that
# misses one reports it as it does out of process.
PRELOADED = (
    "boto3",
    "botocore.session",
    "ansible_collections.amazon.aws.plugins.module_utils.modules",
    "ansible_collections.clusterapi.aws.plugins.module_utils.capa",
)
# The collection's modules too, with everything they import: Ansible's collection loader compiles a module's source
# whenever it is imported (it keeps no bytecode), so each task's worker compiled its module and the module_utils it
# brings - once per task and host. Here it is once per run.
MODULES_PACKAGE = "ansible_collections.clusterapi.aws.plugins.modules"


# The models of every service the collection's clients use, read once into the shared loader (kernel/session.py)
# the workers inherit: otherwise each worker lists botocore's data directories and parses the models of the
# services its module asks (EC2's alone takes a tenth of a second).
WARMED = (
    "autoscaling",
    "ec2",
    "eks",
    "elb",
    "elbv2",
    "iam",
    "kms",
    "resourcegroupstaggingapi",
    "s3",
    "secretsmanager",
    "service-quotas",
    "ssm",
    "sts",
)


def collection_modules() -> tuple[str, ...]:
    """The Python names of the collection's modules."""
    package = importlib.import_module(MODULES_PACKAGE)
    return tuple(f"{MODULES_PACKAGE}.{found.name}" for found in pkgutil.iter_modules(package.__path__))


def preload(names: tuple[str, ...] | None = None, services: tuple[str, ...] = WARMED) -> list[str]:
    """Import ``names`` (:data:`PRELOADED` and the collection's modules) and read the models of ``services`` now;
    the names that could not be imported."""
    missing = []
    for name in names if names is not None else PRELOADED + collection_modules():
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if not missing:
        session = importlib.import_module("ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session")
        session.warm_models(services)
    return missing


def keep_workers_off_the_controllers_heap() -> None:
    """Every worker Ansible forks for a task leaves the controller's objects to the controller's garbage collector.

    A forked worker shares the controller's memory until it writes to it, and a garbage collection writes to every
    object it traverses (its reference bookkeeping). So a collection in a worker over the heap it inherited - Ansible,
    the play, every host's variables, boto3 and botocore's models - copies the pages that hold it, though nothing
    there can become garbage in a worker that lives for one task. Freezing the heap for the fork keeps the worker's
    collections to the objects it makes itself; the controller unfreezes at once, so its own collections are as
    before. A no-op of one cluster costs about a tenth less CPU, of 20 clusters in one run about a sixth
    (BENCHMARKS.md).
    """
    os.register_at_fork(before=gc.freeze, after_in_parent=gc.unfreeze)


def leave_the_heap_to_the_exit() -> None:
    """At the controller's exit, its garbage collector leaves alone what the run built up.

    The interpreter's shutdown collects the heap several times over while it tears the modules down; with boto3,
    botocore's models and the collection loaded here (:func:`preload`) that took 0.35-0.45 s after the play recap
    (0.04 s without them), at the end of every ``ansible-playbook`` run - a tenth of a no-op. The process's memory
    goes back to the system at once anyway. An exit handler freezes the heap (registered when the first step loads,
    so it runs before Ansible's own, which still run: its temporary files, logging's flush, multiprocessing's
    clean-up; what they make is collected as before). Objects freed by their reference count (open files among them)
    are freed as always: only the collections' passes over the heap are skipped. A worker never runs it: it leaves
    through ``os._exit``.
    """
    atexit.register(gc.freeze)


# The collection's Jinja filters: a package of plugin files, each naming its filters (FilterModule.filters).
FILTERS_PACKAGE = "ansible_collections.clusterapi.aws.plugins.filter"


def collection_filters() -> tuple[str, ...]:
    """The fully qualified names of the collection's Jinja filters."""
    package = importlib.import_module(FILTERS_PACKAGE)
    names = []
    for found in pkgutil.iter_modules(package.__path__):
        plugin = importlib.import_module(f"{FILTERS_PACKAGE}.{found.name}")
        names += [f"clusterapi.aws.{name}" for name in plugin.FilterModule().filters()]
    return tuple(sorted(names))


def load_template_plugins() -> None:
    """Load Ansible's Jinja filters and tests (and the collection's filters) here, once, for every worker to inherit.

    A worker's first template that names a filter or a test (a ``default``, an ``is defined``) makes Ansible's plugin
    loader load all of its own - ansible-core's filter and test files, read and run in that worker - and a
    collection's filter is loaded from its source; the controller of a ``strategy: free`` play templates nothing of a
    task, so every worker did it again, for every task and host. Loaded in the controller before the first fork,
    ``filter_loader`` and ``test_loader`` hold them and each worker finds them loaded: a task that only evaluates its
    ``when`` costs its worker a third less (17 -> 11 ms), the workers of a no-op of one cluster about a tenth less
    (BENCHMARKS.md). Only loading: nothing is templated here.
    """
    from ansible.plugins.loader import filter_loader, test_loader

    try:
        for loader in (filter_loader, test_loader):
            for _plugin in loader.all():
                pass  # all() loads (and caches) every plugin of ansible-core's files as it lists them
        for name in collection_filters():
            filter_loader.get(name)
    except Exception as e:  # a head start only: whatever is not loaded here, a worker loads as it always did
        display.vvv(f"clusterapi.aws: the template plugins were not loaded ahead of the workers: {e}")


display = Display()
preload()
# Once per controller process: this module is imported there once, before the first worker forks.
load_template_plugins()
keep_workers_off_the_controllers_heap()
leave_the_heap_to_the_exit()

# The modules of this collection declare no serialization profile: Ansible gives them this one.
PROFILE = "legacy"
PROFILES = get_module_encoder is not None  # ansible-core 2.19 and later
# The host variable that turns in-process execution off (for a module process, e.g. to debug one).
SWITCH = "capa_in_process"
# How a progress line of a module run here reads on the controller's display.
PROGRESS_LINE = "[capa] {host}: {message}"


class Refused(Exception):
    """The task's arguments cannot name a module call; the message says why (the task fails, nothing runs)."""


class CollectionModuleAction(ActionBase):
    """The action plugin of a module of this collection: in process where it can, as a module process where not."""

    _supports_check_mode = True
    _supports_async = True
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: Any = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        try:
            fqcn, module_args = self.module_call(task_vars)
        except Refused as e:
            result.update(failed=True, msg=str(e))
            return result
        return merge_hash(result, self.run_module(fqcn, module_args, task_vars))

    def module_call(self, task_vars: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The module this task runs and its arguments: the task's own (``capa_step`` names another module)."""
        return self._task.resolved_action, dict(self._task.args)

    def run_module(self, fqcn: str, module_args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        reason = self._why_not_in_process(task_vars)
        if reason:
            display.vvv(f"{fqcn}: a module process ({reason})", host=self._play_context.remote_addr)
            wrap_async = bool(self._task.async_val) and not self._connection.has_native_async
            result = self._execute_module(
                module_name=fqcn, module_args=module_args, task_vars=task_vars, wrap_async=wrap_async
            )
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        display.vvv(f"{fqcn}: in the controller's worker process", host=self._play_context.remote_addr)
        return self._execute_in_process(fqcn, module_args, task_vars)

    def _why_not_in_process(self, task_vars: dict[str, Any]) -> str | None:
        """Why this task's module must run as a module process; None when it can run here."""
        if not boolean(self._templar.template(task_vars.get(SWITCH, True)), strict=False):
            return f"{SWITCH} is false"
        if self._connection.transport != "local":
            return f"connection {self._connection.transport}"
        if self._play_context.become:
            return "become"
        if self._task.async_val:
            return "async"
        interpreter = self._target_python(task_vars)
        if not same_python(interpreter, sys.executable):
            return f"interpreter {interpreter} is not the controller's {sys.executable}"
        return None

    def _target_python(self, task_vars: dict[str, Any]) -> str | None:
        """The Python the module process would run on, as far as it is known without discovering it."""
        configured = task_vars.get("ansible_python_interpreter") or C.config.get_config_value(
            "INTERPRETER_PYTHON", variables=task_vars
        )
        interpreter = str(self._templar.template(configured)) if configured else ""
        if interpreter.startswith("auto"):
            # Interpreter discovery's answer, once a module process on this host has made it.
            interpreter = task_vars.get("ansible_facts", {}).get("discovered_interpreter_python") or ""
        return interpreter or None

    def _execute_in_process(self, fqcn: str, module_args: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        self._update_module_args(fqcn, module_args, task_vars)
        environment: dict[str, str] = {}
        self._compute_environment_string(environment)
        encoded = encode_arguments(module_args)
        module = importlib.import_module(python_name(fqcn))
        stdout, stderr = io.StringIO(), io.StringIO()
        rc = 0
        host = str(task_vars.get("inventory_hostname") or self._play_context.remote_addr)
        with module_arguments(encoded), environment_applied(environment), progress_displayed(host):
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    module.main()
                except SystemExit as e:
                    rc = e.code if isinstance(e.code, int) else 1
                except Exception:
                    # What a module process would print before dying: the traceback, parsed below into
                    # Ansible's "MODULE FAILURE" result with module_stderr.
                    traceback.print_exc()
                    rc = 1
        return self._module_result({"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "rc": rc})

    def _module_result(self, returned: dict[str, Any]) -> dict[str, Any]:
        """The module's printed result, parsed and cleaned as ``ActionBase._execute_module`` parses and cleans a
        module process's: a dict on ansible-core 2.17 to 2.20 (through the module's profile from 2.19), a
        ``UnifiedTaskResult`` from 2.21, which removes its internal keys itself and gives the task's result dict."""
        if not PROFILES:
            data = self._parse_returned_data(returned)
            remove_internal_keys(data)
            return data
        parsed = self._parse_returned_data(returned, PROFILE)
        if isinstance(parsed, dict):
            remove_internal_keys(parsed)
            return parsed
        parsed.remove_internal_keys()
        return parsed.as_result_dict(for_round_trip=True)


def encode_arguments(module_args: dict[str, Any]) -> bytes:
    """The module's arguments as AnsiballZ encodes them for a module process: the module's serialization profile
    (ansible-core 2.19 and later), ``AnsibleJSONEncoder`` with vaulted values as text before."""
    params = {"ANSIBLE_MODULE_ARGS": module_args}
    if PROFILES:
        return json.dumps(params, cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)).encode()
    # Imported here: the encoder of the releases before profiles, which later ones need not keep.
    from ansible.module_utils.common.json import AnsibleJSONEncoder

    return json.dumps(params, cls=AnsibleJSONEncoder, vault_to_text=True).encode()


def python_name(fqcn: str) -> str:
    """``clusterapi.aws.capa_vpc`` -> the Python module the collection loader imports for it."""
    namespace, collection, name = fqcn.split(".", 2)
    return f"ansible_collections.{namespace}.{collection}.plugins.modules.{name}"


def same_python(interpreter: str | None, executable: str) -> bool:
    """Whether ``interpreter`` is the running Python: the same path, or a link beside it to the same binary.

    A venv's ``python`` is a link to the system's binary, so resolving links alone would take the system Python,
    which has none of the venv's packages, for the venv's.
    """
    if not interpreter:
        return False
    if os.path.normpath(interpreter) == os.path.normpath(executable):
        return True
    return os.path.dirname(os.path.abspath(interpreter)) == os.path.dirname(
        os.path.abspath(executable)
    ) and os.path.realpath(interpreter) == os.path.realpath(executable)


@contextlib.contextmanager
def module_arguments(encoded: bytes) -> Iterator[None]:
    """Hand the module its arguments where ``AnsibleModule`` reads them (AnsiballZ sets the same two globals), and
    let ansible-core's module side act as in a module process while it runs (:func:`module_side`)."""
    saved = basic._ANSIBLE_ARGS, getattr(basic, "_ANSIBLE_PROFILE", None)
    basic._ANSIBLE_ARGS = encoded
    if PROFILES:
        basic._ANSIBLE_PROFILE = PROFILE
    # A module process starts with no warnings; a loop runs its items in one worker, one after another.
    module_warnings._global_warnings.clear()
    module_warnings._global_deprecations.clear()
    try:
        with module_side():
            yield
    finally:
        basic._ANSIBLE_ARGS = saved[0]
        if PROFILES:
            basic._ANSIBLE_PROFILE = saved[1]


@contextlib.contextmanager
def module_side() -> Iterator[None]:
    """ansible-core 2.19 and later mark the controller's process (``module_utils._internal.is_controller``), and
    there a module's ``warn()`` and ``deprecate()`` go straight to the display instead of into the result. In the
    worker the module is on the target's side: its warnings and deprecations are recorded and returned with its
    result, as a module process returns them - the controller shows them from the result, and callbacks (the json
    one, AWX's job events) see them on the task. Older ansible-core has no such mark and always records them."""
    if _core_internal is None or not hasattr(_core_internal, "is_controller"):
        yield
        return
    saved = _core_internal.is_controller
    _core_internal.is_controller = False
    try:
        yield
    finally:
        _core_internal.is_controller = saved


@contextlib.contextmanager
def environment_applied(environment: dict[str, str]) -> Iterator[None]:
    """The task's ``environment`` as the module process would have had it, for the module's run only."""
    saved = {key: os.environ.get(key) for key in environment}
    os.environ.update({key: str(value) for key, value in environment.items()})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def show_progress(host: str, message: str) -> None:
    """One progress line of a module run, on the controller's display (from a worker: proxied to the main process,
    which prints it at once)."""
    display.display(PROGRESS_LINE.format(host=host, message=message), color=C.COLOR_VERBOSE, stderr=True)


@contextlib.contextmanager
def progress_displayed(host: str) -> Iterator[None]:
    """The module's progress on the controller's display while it runs (kernel/context.py PROGRESS_LISTENERS)."""

    def listener(message: str) -> None:
        show_progress(host, message)

    kernel_context.PROGRESS_LISTENERS.append(listener)
    try:
        yield
    finally:
        kernel_context.PROGRESS_LISTENERS.remove(listener)
