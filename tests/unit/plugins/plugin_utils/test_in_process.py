"""When a module of the collection runs in the controller (plugins/plugin_utils/in_process.py), and the state it
hands the module: arguments where AnsibleModule reads them, the task's environment for that run only, no warnings
left from an earlier loop item. tests/integration/test_in_process.py runs modules both ways through ansible-playbook
and compares their answers."""

from __future__ import annotations

import os
import sys
from unittest.mock import MagicMock

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import PROGRESS_LISTENERS, Context
from ansible_collections.clusterapi.aws.plugins.plugin_utils import in_process
from ansible_collections.clusterapi.aws.plugins.plugin_utils.in_process import (
    CollectionModuleAction,
    environment_applied,
    module_arguments,
    progress_displayed,
    python_name,
    same_python,
)


def action(transport="local", become=False, async_val=0) -> CollectionModuleAction:
    task = MagicMock()
    task.async_val = async_val
    connection = MagicMock()
    connection.transport = transport
    play_context = MagicMock()
    play_context.become = become
    templar = MagicMock()
    templar.template.side_effect = lambda value: value
    return CollectionModuleAction(task, connection, play_context, loader=None, templar=templar, shared_loader_obj=None)


HERE = {"ansible_python_interpreter": sys.executable}


@pytest.mark.parametrize(
    "kwargs, task_vars, reason",
    [
        ({}, HERE, None),
        ({}, {**HERE, "capa_in_process": False}, "capa_in_process is false"),
        ({}, {**HERE, "capa_in_process": "no"}, "capa_in_process is false"),
        ({"transport": "ssh"}, HERE, "connection ssh"),
        ({"become": True}, HERE, "become"),
        ({"async_val": 60}, HERE, "async"),
        ({}, {"ansible_python_interpreter": "/opt/other-venv/bin/python"}, "is not the controller's"),
        # Discovery has not answered yet: the module process discovers, later tasks may then run here.
        ({}, {"ansible_python_interpreter": "auto_silent"}, "interpreter None"),
        (
            {},
            {"ansible_python_interpreter": "auto", "ansible_facts": {"discovered_interpreter_python": sys.executable}},
            None,
        ),
    ],
)
def test_where_a_module_runs(kwargs, task_vars, reason):
    found = action(**kwargs)._why_not_in_process(task_vars)
    assert (found is None) if reason is None else (reason in found), found


def test_same_python_is_the_same_path_or_a_link_beside_it(tmp_path):
    assert same_python(sys.executable, sys.executable)
    assert not same_python(None, sys.executable) and not same_python("", sys.executable)
    beside = os.path.join(os.path.dirname(sys.executable), "python-capa-test-link")
    elsewhere = tmp_path / "python"
    elsewhere.symlink_to(os.path.realpath(sys.executable))
    # The same binary from another directory is another environment (a venv's python links to the system's).
    assert not same_python(str(elsewhere), sys.executable)
    assert not same_python(beside, sys.executable)  # does not exist: not the same


def test_python_name_of_a_module():
    assert python_name("clusterapi.aws.capa_vpc") == "ansible_collections.clusterapi.aws.plugins.modules.capa_vpc"


def test_arguments_are_where_ansible_module_reads_them_and_warnings_start_empty():
    """AnsiballZ's two globals on ansible-core 2.19 and later (the arguments and their profile), the arguments alone
    on 2.17 and 2.18, which have no profiles."""
    module_warnings.warn("left over from an earlier loop item")
    before = basic._ANSIBLE_ARGS, getattr(basic, "_ANSIBLE_PROFILE", None)
    with module_arguments(b'{"ANSIBLE_MODULE_ARGS": {}}'):
        assert basic._ANSIBLE_ARGS == b'{"ANSIBLE_MODULE_ARGS": {}}'
        assert getattr(basic, "_ANSIBLE_PROFILE", None) == ("legacy" if in_process.PROFILES else None)
        assert tuple(module_warnings.get_warning_messages()) == ()
    assert (basic._ANSIBLE_ARGS, getattr(basic, "_ANSIBLE_PROFILE", None)) == before


def test_arguments_are_encoded_as_ansiballz_encodes_them():
    """The module reads back what the task gave, on every ansible-core of the range (its profile on 2.19 and later,
    AnsibleJSONEncoder before)."""
    import json

    encoded = in_process.encode_arguments({"cluster_name": "demo", "replicas": 3, "tags": {"team": "a"}})
    assert json.loads(encoded) == {
        "ANSIBLE_MODULE_ARGS": {"cluster_name": "demo", "replicas": 3, "tags": {"team": "a"}}
    }


def test_a_modules_warnings_are_its_results_while_it_runs_in_the_worker(monkeypatch):
    """In the controller (ansible-core 2.19 marks it) a warning goes to the display; a module process records it and
    returns it with its result. In the worker the module is on the module's side, and the mark is back after it."""
    marked = in_process._core_internal is not None and hasattr(in_process._core_internal, "is_controller")
    if marked:  # ansible-core 2.19 and later; before, a warning is always recorded
        monkeypatch.setattr(in_process._core_internal, "is_controller", True)
    with pytest.raises(RuntimeError):
        with module_arguments(b'{"ANSIBLE_MODULE_ARGS": {}}'):
            assert not marked or in_process._core_internal.is_controller is False
            module_warnings.warn("the secondary block is kept")
            assert tuple(module_warnings.get_warning_messages()) == ("the secondary block is kept",)
            raise RuntimeError("the module failed")
    assert not marked or in_process._core_internal.is_controller is True


def test_the_tasks_environment_applies_for_the_run_only(monkeypatch):
    monkeypatch.setenv("CAPA_TEST_KEPT", "controller")
    monkeypatch.delenv("CAPA_TEST_NEW", raising=False)
    with environment_applied({"CAPA_TEST_KEPT": "task", "CAPA_TEST_NEW": 1}):
        assert os.environ["CAPA_TEST_KEPT"] == "task" and os.environ["CAPA_TEST_NEW"] == "1"
    assert os.environ["CAPA_TEST_KEPT"] == "controller" and "CAPA_TEST_NEW" not in os.environ


def test_preload_reports_what_it_could_not_import():
    assert in_process.preload(("json", "capa_no_such_module")) == ["capa_no_such_module"]
    assert in_process.preload() == []  # boto3, botocore, amazon.aws, the facade and every module are all here


def test_every_aws_service_the_collection_asks_is_warmed():
    """WARMED lists the services by hand: every client the code makes must be among them."""
    import re
    from pathlib import Path

    plugins = Path(in_process.__file__).resolve().parents[1]
    asked = {
        service
        for path in plugins.rglob("*.py")
        for service in re.findall(r"\.client\(\s*\"([a-z0-9-]+)\"", path.read_text())
    }
    assert "ec2" in asked and asked <= set(in_process.WARMED), sorted(asked - set(in_process.WARMED))


def test_every_module_of_the_collection_is_imported_before_the_workers_fork():
    names = in_process.collection_modules()
    assert "ansible_collections.clusterapi.aws.plugins.modules.capa_instance" in names and len(names) >= 20
    assert all(name in sys.modules for name in names)


def test_the_shared_loader_has_ec2_read_once_for_every_session():
    """preload() read EC2's model into the loader every later session shares (kernel/session.py)."""
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import session

    loader = session.shared_loader()
    assert session.new_session(region_name="us-east-1")._session.get_component("data_loader") is loader
    for service in in_process.WARMED:
        cached = {key[2] for key in loader._cache if key[0] == "load_service_model" and key[1] == service}
        assert {"service-2", "paginators-1"} <= cached, f"{service}'s models were not read into the shared loader"


def test_a_runs_progress_reaches_the_controllers_display_while_the_module_runs(monkeypatch):
    """The listener in_process adds for a module's run: each progress line of any Context of that run goes to the
    display (to stderr, with the host), and nothing after the run."""
    shown = MagicMock()
    monkeypatch.setattr(in_process.display, "display", shown)
    ctx = Context(session=None, cluster="demo-eks", check_mode=False)  # type: ignore[arg-type]
    with progress_displayed("demo-eks"):
        ctx.progress("waiting for EKS cluster demo-eks to be ACTIVE (CREATING): 30s waited, up to 29m30s left")
    ctx.progress("after the run")
    shown.assert_called_once_with(
        "[capa] demo-eks: waiting for EKS cluster demo-eks to be ACTIVE (CREATING): 30s waited, up to 29m30s left",
        color=in_process.C.COLOR_VERBOSE,
        stderr=True,
    )
    assert PROGRESS_LISTENERS == []


def test_the_listener_goes_when_the_module_fails():
    with pytest.raises(RuntimeError), progress_displayed("h1"):
        assert len(PROGRESS_LISTENERS) == 1
        raise RuntimeError("the module died")
    assert PROGRESS_LISTENERS == []


def test_a_forked_worker_leaves_the_controllers_objects_to_the_controller():
    """Importing in_process (as the controller does) makes every fork start with the parent's objects frozen: the
    worker's garbage collections skip them. The parent's own are unfrozen again at once."""
    import gc

    inherited = ["made by the controller"]
    gc.collect()  # nothing frozen or pending before the fork
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: how many objects it inherited frozen, and whether ours is among the tracked ones
        os.close(reader)
        frozen = gc.get_freeze_count()
        tracked = any(o is inherited for o in gc.get_objects())
        os.write(writer, f"{frozen} {tracked}".encode())
        os._exit(0)
    os.close(writer)
    answer = os.read(reader, 100).decode().split()
    os.close(reader)
    os.waitpid(pid, 0)
    assert int(answer[0]) > 10_000  # the whole heap: modules, boto3, the test's objects
    assert answer[1] == "False"
    assert gc.get_freeze_count() == 0
    assert any(o is inherited for o in gc.get_objects())


def test_the_controller_leaves_its_heap_to_the_exit():
    """Importing in_process registers one exit handler that freezes the heap: the interpreter's shutdown then skips
    the collections over what the run loaded (0.35-0.45 s of every run's end with boto3's models loaded). Shown on
    a child interpreter that loads the collection as the controller does: its exit handler runs with the heap frozen,
    and the process still exits with its own code after writing everything it had open."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import atexit, gc, sys
        # Registered before in_process's handler, so it runs after it (exit handlers run last-registered-first).
        atexit.register(lambda: print("frozen at the exit:", gc.get_freeze_count() > 10000, flush=True))
        from ansible_collections.clusterapi.aws.plugins.plugin_utils import in_process
        print("frozen while running:", gc.get_freeze_count() > 0, flush=True)
        out = open(sys.argv[1], "w")
        out.write("written before the exit")
        sys.exit(3)
        """
    )
    written = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"capa-exit-{os.getpid()}.txt")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", script, written], capture_output=True, text=True, env=env)
    try:
        with open(written, encoding="utf-8") as kept:
            assert kept.read() == "written before the exit"
    finally:
        os.unlink(written)
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["frozen while running: False", "frozen at the exit: True"], done.stdout


def test_the_controller_loads_the_template_plugins_every_worker_would_load():
    """Importing in_process where Ansible runs (its collection loader set up, as in the controller) loads
    ansible-core's Jinja filters and tests and the collection's filters once, for every forked worker to inherit
    (a worker's first template that names one loaded them all again). Where the collection loader is not set up (a
    plain import), the collection's filters cannot be looked up, and nothing breaks: a worker loads what is missing
    as it always did. Shown on child interpreters."""
    import subprocess
    import textwrap
    from pathlib import Path

    collections = str(Path(in_process.__file__).parents[5])
    script = textwrap.dedent(
        """
        import sys
        from ansible.plugins.loader import filter_loader, init_plugin_loader, test_loader
        if sys.argv[1] == "controller":
            init_plugin_loader([sys.argv[2]])
        from ansible_collections.clusterapi.aws.plugins.plugin_utils import in_process
        core = [len(loader._cached_non_collection_wrappers) for loader in (filter_loader, test_loader)]
        ours = sorted(n for n in sys.modules if n.startswith(in_process.FILTERS_PACKAGE + "."))
        print(core[0] > 50, core[1] > 20, ",".join(ours))
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    answers = {}
    for where in ("controller", "plain"):
        done = subprocess.run(
            [sys.executable, "-c", script, where, collections], capture_output=True, text=True, env=env, check=False
        )
        assert done.returncode == 0, done.stderr
        answers[where] = done.stdout.split()
    ours = ",".join(f"{in_process.FILTERS_PACKAGE}.{name}" for name in ("capa_describe", "capa_steps"))
    assert answers["controller"] == ["True", "True", ours]
    assert len(answers["plain"]) == 3  # the collection's filters cannot be looked up there: the import still works
