"""Shared pytest fixtures of the clusterapi.aws test harness.

Fixtures (all generic: none knows a module or role of the collection):

* ``moto_server`` (session): a ``tools/moto_server.py`` subprocess on a free port, one per
  pytest-xdist worker.  ``.url``, ``.requests()``, ``.mutating_requests()``,
  ``.reset_requests()``, ``.reset()``.
* ``aws`` (function): resets moto, points the AWS environment variables at it (monkeypatch) and
  yields an :class:`AwsEnv` with ``.client(service, region=None)``, ``.url``, ``.env``,
  ``.requests()``, ``.mutating_requests()``, ``.reset_requests()``.
* ``run_playbook`` (function): ``run_playbook(playbook_path, inventory=None, extra_vars=None,
  check=False, diff=False, env=None, expect_rc=0, cwd=None, timeout=900)`` runs
  ``ansible-playbook`` from this interpreter's venv against the working tree and returns a
  :class:`PlaybookResult`.
* ``run_module`` (function): ``run_module(module_fqcn, args, check=False, diff=False, env=None)``
  runs one module as the controller runs it for a local target (its file as ``__main__`` in a fork of a process
  that imported the collection once: tests/module_runner.py) and returns its result dict.

The plain functions :func:`run_playbook_cmd` and :func:`run_module_cmd` do the same without
fixtures (importable as ``from conftest import ...`` only where ``tests/`` is on ``sys.path``).

Every ansible-playbook run keeps its stdout and stderr under ``.build/test-output/<xdist worker>/``, so that
``tests/post_integration`` can search everything the suite printed for secrets once all workers are done.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubesim_fixtures import server_env

REPO = Path(__file__).resolve().parent.parent
# moto reads its AMI list when it is first imported: in-process moto (unit tests) gets the same published images as
# the embedded endpoint (tools/moto_server.py sets the same default).
os.environ.setdefault("MOTO_AMIS_PATH", str(REPO / "tools" / "moto_amis.json"))
BUILD = REPO / ".build"
COLLECTIONS_PATH = BUILD / "collections"
COLLECTION_LINK = COLLECTIONS_PATH / "ansible_collections" / "clusterapi" / "aws"
ANSIBLE_CFG = REPO / "ansible.cfg"
MOTO_SERVER_SCRIPT = REPO / "tools" / "moto_server.py"
VENV_BIN = Path(sys.executable).parent
READ_ONLY_PREFIXES = ("Describe", "List", "Get", "Head", "Simulate")
TEST_OUTPUT = BUILD / "test-output"
_RUNS = itertools.count()

AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
# Variables that would make boto3 / amazon.aws talk to something other than the moto server.
AWS_ENV_TO_CLEAR = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_URL",
    "EC2_URL",
    "EC2_ACCESS_KEY",
    "EC2_SECRET_KEY",
    "EC2_SECURITY_TOKEN",
    "EC2_REGION",
    "AWS_ACCESS_KEY",
    "AWS_SECRET_KEY",
)


def ensure_collection_link() -> Path:
    """Make ``.build/collections/ansible_collections/clusterapi/aws`` point at the working tree."""
    COLLECTION_LINK.parent.mkdir(parents=True, exist_ok=True)
    if not COLLECTION_LINK.exists():
        try:
            COLLECTION_LINK.symlink_to(os.path.relpath(REPO, COLLECTION_LINK.parent))
        except FileExistsError:  # created concurrently by another xdist worker
            pass
    return COLLECTION_LINK


# Unit tests import the collection as ``ansible_collections.clusterapi.aws...``: make that work
# from the working tree (amazon.aws is found in site-packages' ansible_collections namespace).
ensure_collection_link()
if str(COLLECTIONS_PATH) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_PATH))


def is_mutating(record: dict[str, str]) -> bool:
    """True for a counter record of an operation that is not Describe*/List*/Get*."""
    return not record.get("operation", "").startswith(READ_ONLY_PREFIXES)


# --------------------------------------------------------------------------------------
# moto server
# --------------------------------------------------------------------------------------
class MotoServer:
    """A running ``tools/moto_server.py`` process."""

    def __init__(self, workdir: Path, startup_timeout: float = 90.0) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.urlfile = workdir / "moto.url"
        self.pidfile = workdir / "moto.pid"
        self.logfile = workdir / "moto.log"
        self.urlfile.unlink(missing_ok=True)
        self._log = open(self.logfile, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(MOTO_SERVER_SCRIPT),
                "--urlfile",
                str(self.urlfile),
                "--pidfile",
                str(self.pidfile),
                "--exit-with-parent",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=str(REPO),
            env=server_env(),
        )
        self.url = self._wait_ready(startup_timeout)

    def _wait_ready(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto server exited with {self.process.returncode}: {self.log_tail()}")
            if self.urlfile.is_file():
                url = self.urlfile.read_text().strip()
                if url:
                    try:
                        with urllib.request.urlopen(f"{url}/_capa/requests", timeout=5):
                            return url
                    except (urllib.error.URLError, OSError):
                        pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto server did not answer within {timeout}s: {self.log_tail()}")

    def log_tail(self, size: int = 4000) -> str:
        try:
            return self.logfile.read_bytes()[-size:].decode("utf-8", "replace")
        except OSError:
            return ""

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"{self.url}{path}", method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
        return json.loads(body) if body else None

    def requests(self) -> list[dict[str, str]]:
        """Every AWS request moto saw since the last reset: ``[{"service": .., "operation": ..}, ...]``."""
        return self._call("GET", "/_capa/requests")

    def mutating_requests(self) -> list[dict[str, str]]:
        """The recorded requests whose operation is not Describe*/List*/Get*."""
        return [r for r in self.requests() if is_mutating(r)]

    def reset_requests(self) -> None:
        self._call("POST", "/_capa/requests/reset")

    def reset(self) -> None:
        """Forget all AWS state (``POST /moto-api/reset``) and the recorded requests."""
        self._call("POST", "/moto-api/reset")
        self.reset_requests()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._log.close()


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A moto server for this test session (per xdist worker), stopped at session end."""
    server = MotoServer(tmp_path_factory.mktemp("moto"))
    try:
        yield server
    finally:
        server.stop()


@dataclass
class AwsEnv:
    """What the ``aws`` fixture yields."""

    server: MotoServer
    env: dict[str, str]
    region: str = "us-east-1"

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, service: str, region: str | None = None, credentials: dict[str, str] | None = None) -> Any:
        """A boto3 client of the moto server: the test's keys, or ``credentials`` (an STS answer's, e.g. of an
        assumed role)."""
        import boto3

        keys = {
            "aws_access_key_id": self.env["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": self.env["AWS_SECRET_ACCESS_KEY"],
        }
        if credentials:
            keys = {
                "aws_access_key_id": credentials["AccessKeyId"],
                "aws_secret_access_key": credentials["SecretAccessKey"],
                "aws_session_token": credentials["SessionToken"],
            }
        return boto3.client(service, endpoint_url=self.server.url, region_name=region or self.region, **keys)

    def requests(self) -> list[dict[str, str]]:
        return self.server.requests()

    def mutating_requests(self) -> list[dict[str, str]]:
        return self.server.mutating_requests()

    def reset_requests(self) -> None:
        self.server.reset_requests()

    def reset(self) -> None:
        self.server.reset()


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[AwsEnv]:
    """Fresh moto state and AWS_* environment pointing at it, for one test."""
    moto_server.reset()
    for name in AWS_ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    env = {"AWS_ENDPOINT_URL": moto_server.url, **AWS_TEST_ENV}
    # Keep ~/.aws out of the picture.
    env["AWS_CONFIG_FILE"] = str(tmp_path / "aws-config-absent")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "aws-credentials-absent")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    yield AwsEnv(server=moto_server, env=env)


@pytest.fixture
def latency(aws: AwsEnv) -> Iterator[Any]:
    """The moto server's AWS latency model (``/_capa/latency``) at a scale the test picks: ``latency(0.01)``
    answers the server's ``{"scale": 0.01}``. Off again afterwards (a reset would turn it off too)."""

    def scale(value: float) -> dict[str, Any]:
        body = json.dumps({"scale": value}).encode()
        request = urllib.request.Request(f"{aws.url}/_capa/latency", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.loads(response.read()))

    yield scale
    scale(0)


# --------------------------------------------------------------------------------------
# ansible-playbook / modules
# --------------------------------------------------------------------------------------
@dataclass
class TaskResult:
    play: str
    name: str
    host: str
    result: dict[str, Any]

    @property
    def changed(self) -> bool:
        return bool(self.result.get("changed"))

    @property
    def failed(self) -> bool:
        return bool(self.result.get("failed"))

    @property
    def skipped(self) -> bool:
        return bool(self.result.get("skipped"))


@dataclass
class PlaybookResult:
    rc: int
    stdout: str
    stderr: str
    command: list[str]
    json: dict[str, Any] | None = None
    tasks: list[TaskResult] = field(default_factory=list)
    # {host: {"ok": n, "changed": n, "failed": n, "unreachable": n, "skipped": n, "rescued": n, "ignored": n}}
    stats: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def changed(self) -> int:
        """Total ``changed`` count over all hosts (PLAY RECAP)."""
        return sum(s.get("changed", 0) for s in self.stats.values())

    @property
    def failed(self) -> int:
        return sum(s.get("failed", 0) + s.get("unreachable", 0) for s in self.stats.values())

    @property
    def changed_tasks(self) -> list[TaskResult]:
        return [t for t in self.tasks if t.changed]

    def task(self, name: str, host: str | None = None) -> TaskResult:
        """The last result of the task called ``name`` (on ``host``)."""
        found = [t for t in self.tasks if t.name == name and (host is None or t.host == host)]
        if not found:
            raise KeyError(f"no task named {name!r}; tasks: {[t.name for t in self.tasks]}")
        return found[-1]

    def describe(self, limit: int = 6000) -> str:
        return (
            f"command: {' '.join(self.command)}\nrc: {self.rc}\n"
            f"--- stdout (tail) ---\n{self.stdout[-limit:]}\n--- stderr (tail) ---\n{self.stderr[-limit:]}"
        )


def ansible_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for ansible-* subprocesses: this venv, the working-tree collection, json output."""
    ensure_collection_link()
    result = dict(os.environ)
    result.update(
        {
            "ANSIBLE_CONFIG": str(ANSIBLE_CFG),
            "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS_PATH),
            "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    result.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    if env:
        result.update(env)
    return result


def _parse_json_callback(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start = text.find("{")  # tolerate stray lines (e.g. warnings) before the document
        if start < 0:
            return None
        try:
            return json.loads(text[start:])
        except json.JSONDecodeError:
            return None


def keep_output(playbook_path: str | os.PathLike[str], stdout: str, stderr: str) -> None:
    """Keep one run's output for the suite-wide secrets scan (one directory per xdist worker: no clashes)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0])[-120:]
    directory = TEST_OUTPUT / worker
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{os.getpid()}-{next(_RUNS):04d}-{Path(playbook_path).stem}-{test}"
    (directory / f"{stem}.stdout").write_text(stdout)
    (directory / f"{stem}.stderr").write_text(stderr)


def run_playbook_cmd(
    playbook_path: str | os.PathLike[str],
    inventory: str | os.PathLike[str] | None = None,
    extra_vars: dict[str, Any] | None = None,
    check: bool = False,
    diff: bool = False,
    env: dict[str, str] | None = None,
    expect_rc: int | None = 0,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 900,
    args: list[str] | None = None,
) -> PlaybookResult:
    """Run ``ansible-playbook`` against the working tree and parse its json callback output.

    ``inventory=None`` uses Ansible's implicit localhost.  ``expect_rc=None`` accepts any rc.
    """
    command = [str(VENV_BIN / "ansible-playbook"), str(playbook_path)]
    if inventory is not None:
        command += ["-i", str(inventory)]
    if extra_vars:
        command += ["-e", json.dumps(extra_vars)]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    command += list(args or [])
    proc = subprocess.run(
        command,
        env=ansible_env(env),
        cwd=str(cwd or REPO),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    keep_output(playbook_path, proc.stdout, proc.stderr)
    result = PlaybookResult(rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr, command=command)
    result.json = _parse_json_callback(proc.stdout)
    if result.json:
        for play in result.json.get("plays", []):
            play_name = play.get("play", {}).get("name", "")
            for task in play.get("tasks", []):
                task_name = task.get("task", {}).get("name", "")
                for host, host_result in task.get("hosts", {}).items():
                    result.tasks.append(TaskResult(play_name, task_name, host, host_result))
        for host, stats in result.json.get("stats", {}).items():
            stats = dict(stats)
            stats["failed"] = stats.get("failures", 0)
            result.stats[host] = stats
    if expect_rc is not None:
        assert result.rc == expect_rc, f"ansible-playbook rc {result.rc} != {expect_rc}\n{result.describe()}"
    return result


def run_module_cmd(
    module_fqcn: str,
    args: dict[str, Any] | None = None,
    check: bool = False,
    diff: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> dict[str, Any]:
    """Run one module and return its result dict, as Ansible runs it for a local target on the controller's
    Python: its file as ``__main__`` in a fork of a process that imported boto3 and the collection once
    (plugins/plugin_utils/in_process.py; here tests/module_runner.py), its arguments and Ansible's internal ones
    (``_ansible_check_mode``, ``_ansible_diff`` ...) handed over as ``in_process.module_arguments`` does, its JSON
    answer on stdout. A test that points ``ANSIBLE_COLLECTIONS_PATH`` at another copy of the collection gets that
    copy's module as a module process (``python -m``), as Ansible runs it on any other target. A module whose action
    plugin does more than run it (``capa_step``, ``capa_cluster_spec``: the action runs first, on the controller) is
    run through a one-task playbook instead, so that its action runs too. tests/integration/test_in_process.py shows
    that a module answers the same in process, as a module process and through a playbook.

    Why not always a playbook or a process: a module's own behaviour is what these tests assert, and starting
    ansible-playbook, or a Python that imports boto3, for each call cost more CPU than the module itself (the suite
    is CPU-bound); playbook runs (roles, site.yml, module_defaults, the callbacks) are tested through
    :func:`run_playbook_cmd`.

    A failing module does not raise: check ``result["failed"]``.
    """
    module = module_fqcn.split(".")[-1]
    if _action_does_more_than_run(module):
        return _run_module_in_a_playbook(module_fqcn, args, check, diff, env, timeout)
    arguments = {
        **(args or {}),
        "_ansible_check_mode": check,
        "_ansible_diff": diff,
        "_ansible_module_name": module_fqcn,
        "_ansible_no_log": False,
        "_ansible_verbosity": 0,
    }
    collections_path = (env or {}).get("ANSIBLE_COLLECTIONS_PATH") or str(COLLECTIONS_PATH)
    with tempfile.TemporaryDirectory(prefix="run-module-") as tmp:
        if collections_path == str(COLLECTIONS_PATH):
            returncode, stdout, stderr = _module_runner().run(module_fqcn, arguments, ansible_env(env), tmp, timeout)
        else:
            returncode, stdout, stderr = _module_process(module_fqcn, arguments, env, collections_path, tmp, timeout)
    keep_output(module, stdout, stderr)
    try:
        result = json.loads(stdout[stdout.index("{") :])
    except ValueError:
        output = f"{stdout[-3000:]}\n{stderr[-3000:]}"
        raise AssertionError(f"module {module_fqcn} answered no JSON (rc {returncode})\n{output}") from None
    result.setdefault("changed", False)
    if returncode != 0:
        result["failed"] = True
    return _as_the_controller_shows(result)


def _module_process(
    module_fqcn: str,
    arguments: dict[str, Any],
    env: dict[str, str] | None,
    collections_path: str,
    tmp: str,
    timeout: float,
) -> tuple[int, str, str]:
    """The module as a module process of its own (``python -m``), from ``collections_path``."""
    namespace, collection, module = module_fqcn.split(".")
    args_file = Path(tmp) / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": arguments}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            f"ansible_collections.{namespace}.{collection}.plugins.modules.{module}",
            str(args_file),
        ],
        env={**ansible_env(env), "PYTHONPATH": collections_path},
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


class ModuleRunner:
    """tests/module_runner.py, started once per pytest process: each call a fork of it that runs one module."""

    def __init__(self) -> None:
        self.log = BUILD / "module-runner" / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(REPO / "tests" / "module_runner.py")],
                env={**ansible_env(), "PYTHONPATH": str(COLLECTIONS_PATH)},
                cwd=str(BUILD),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self._unread = b""
        self._one_at_a_time = threading.Lock()  # one request, then its answers: a test's threads take turns

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(
        self, module_fqcn: str, arguments: dict[str, Any], env: dict[str, str], cwd: str, timeout: float
    ) -> tuple[int, str, str]:
        with self._one_at_a_time:
            return self._run(module_fqcn, arguments, env, cwd, timeout)

    def _run(
        self, module_fqcn: str, arguments: dict[str, Any], env: dict[str, str], cwd: str, timeout: float
    ) -> tuple[int, str, str]:
        stdout, stderr = Path(cwd) / "stdout", Path(cwd) / "stderr"
        request = {"module": module_fqcn, "arguments": arguments, "env": env, "cwd": cwd}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({**request, "stdout": str(stdout), "stderr": str(stderr)}).encode() + b"\n")
        self.process.stdin.flush()
        child = self._answer(60)["pid"]
        try:
            returncode = self._answer(timeout)["rc"]
        except subprocess.TimeoutExpired:
            os.kill(child, signal.SIGKILL)
            self._answer(60)
            raise subprocess.TimeoutExpired([module_fqcn], timeout) from None
        return returncode, stdout.read_text(), stderr.read_text()

    def _answer(self, timeout: float) -> dict[str, Any]:
        """The runner's next answer line, within ``timeout`` seconds."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._unread:
            readable = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]
            if not readable:
                raise subprocess.TimeoutExpired(["module_runner"], timeout)
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"the module runner ended (rc {self.process.wait()}): see {self.log}")
            self._unread += chunk
        line, self._unread = self._unread.split(b"\n", 1)
        return json.loads(line)

    def stop(self) -> None:
        if self.alive():
            assert self.process.stdin is not None
            self.process.stdin.close()  # end of requests: the runner exits (and saves its coverage data)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


_RUNNER: ModuleRunner | None = None


def _module_runner() -> ModuleRunner:
    global _RUNNER
    if _RUNNER is None or not _RUNNER.alive():
        _RUNNER = ModuleRunner()
        atexit.register(_RUNNER.stop)
    return _RUNNER


def _action_does_more_than_run(module: str) -> bool:
    action = REPO / "plugins" / "action" / f"{module}.py"
    return action.is_file() and "CollectionModuleAction as ActionModule" not in action.read_text()


def _as_the_controller_shows(result: dict[str, Any]) -> dict[str, Any]:
    """ansible-core 2.19 modules send warnings and deprecations as structured summaries, which the controller turns
    into the messages a task result carries; older cores send the messages themselves."""
    for key in ("warnings", "deprecations"):
        entries = []
        for entry in result.get(key) or []:
            if isinstance(entry, dict) and isinstance(entry.get("event"), dict):
                message = entry["event"].get("msg", "")
                entry = message if key == "warnings" else {"msg": message}
            entries.append(entry)
        if key in result:
            result[key] = entries
    return result


def _run_module_in_a_playbook(
    module_fqcn: str,
    args: dict[str, Any] | None,
    check: bool,
    diff: bool,
    env: dict[str, str] | None,
    timeout: float,
) -> dict[str, Any]:
    play = [
        {
            "name": "run_module",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [{"name": module_fqcn, module_fqcn: args or {}}],
        }
    ]
    with tempfile.TemporaryDirectory(prefix="run-module-") as tmp:
        playbook = Path(tmp) / "module.yml"
        playbook.write_text(json.dumps(play))
        result = run_playbook_cmd(playbook, check=check, diff=diff, env=env, expect_rc=None, cwd=tmp, timeout=timeout)
    if not result.tasks:
        raise AssertionError(f"module {module_fqcn} produced no result\n{result.describe()}")
    return result.tasks[-1].result


@pytest.fixture
def run_playbook() -> Any:
    """``run_playbook(playbook_path, inventory=None, extra_vars=None, check=False, diff=False, env=None,
    expect_rc=0, cwd=None, timeout=900)`` -> :class:`PlaybookResult`."""
    return run_playbook_cmd


@pytest.fixture
def run_module() -> Any:
    """``run_module(module_fqcn, args, check=False, diff=False, env=None)`` -> module result dict."""
    return run_module_cmd
