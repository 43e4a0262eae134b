"""Real etcd 3.4 members (Debian's binary in ``.build/etcd``) and a client for their v3 JSON gateway.

Members listen for clients on ``https://127.0.0.1:<port>`` with ``--client-cert-auth`` (server certificate minted
from the cluster's etcd CA, as kubeadm does) and talk to their peers over plain HTTP on 127.0.0.1: peer TLS would
only cost CPU here and no test looks at peer traffic. Timings are etcd's own and run in real time (they are not
scaled): ``--heartbeat-interval 100 --election-timeout 1000``, and etcd's 5 s ``HealthInterval`` that refuses
membership changes right after a member started.

Processes are started from one long-lived thread with ``PR_SET_PDEATHSIG=SIGKILL``: if the simulator dies, however
it dies, the kernel kills its etcd members (the signal is tied to the thread that forked, hence one thread that
lives as long as the process).
"""

from __future__ import annotations

import base64
import ctypes
import http.client
import json
import os
import queue
import signal
import socket
import ssl
import subprocess
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ETCD = REPO / ".build" / "etcd" / "usr" / "bin" / "etcd"
PR_SET_PDEATHSIG = 1


def etcd_binary() -> Path:
    path = Path(os.environ.get("KUBESIM_ETCD", str(DEFAULT_ETCD)))
    if not path.is_file():
        raise FileNotFoundError(
            f"etcd not found at {path}: run `make system-deps` "
            "(apt-get download etcd-server etcd-client + dpkg -x into .build/etcd)"
        )
    return path


def hold_port() -> socket.socket:
    """A loopback port held for an etcd member for as long as the member exists.

    The socket is bound with ``SO_REUSEADDR`` and never listens. etcd (Go sets ``SO_REUSEADDR`` on its listeners)
    can still bind and listen on the port, also again after a power-off, while the kernel hands the port to no other
    ``bind(0)`` and to no outgoing connection as its source port. Picking a free port and closing it leaves a window
    in which, under parallel tests, any other connection can take the port; etcd then exits with "address already
    in use" and its node never initializes.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Spawner:
    """Starts every child process from one thread that lives as long as the simulator (see module docstring)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="kubesim-spawner", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            fn, future = self._queue.get()
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        future: Future[subprocess.Popen[bytes]] = Future()
        self._queue.put((lambda: subprocess.Popen(args, preexec_fn=_die_with_parent, **kwargs), future))
        return future.result()


SPAWNER = _Spawner()


def run(
    args: list[str], timeout: float, track: set[subprocess.Popen[bytes]] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[bytes]:
    """``subprocess.run`` for short-lived children (boot hooks), also killed if the simulator dies. ``track``
    holds the running child so a power-off can kill it (in its own process group, with its children)."""
    proc = SPAWNER.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kwargs)
    if track is not None:
        track.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return subprocess.CompletedProcess(args, -9, out, err + b"\n(kubesim: timed out)")
    finally:
        if track is not None:
            track.discard(proc)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class EtcdError(Exception):
    """An error answer of etcd (``message`` as etcdctl prints it, e.g. ``etcdserver: unhealthy cluster``)."""


@dataclass
class TLSFiles:
    ca: Path
    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.ca))
        ctx.load_cert_chain(str(self.cert), str(self.key))
        return ctx


class Gateway:
    """Calls etcd's v3 JSON gateway (``POST /v3/...``) over TLS with a client certificate; no etcd library."""

    def __init__(self, tls: TLSFiles) -> None:
        self.tls = tls
        self._ctx = tls.context()
        # One kept-alive connection per endpoint and thread: the quorum monitor asks every member several times a
        # second, and a TLS handshake per request was a sixth of the simulator's CPU.
        self._local = threading.local()

    def _connections(self) -> dict[str, http.client.HTTPSConnection]:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = {}
        return pool

    def call(self, endpoint: str, path: str, body: dict[str, Any] | None = None, timeout: float = 2.0) -> Any:
        pool = self._connections()
        for attempt in (0, 1):
            reused = endpoint in pool
            conn = pool.pop(endpoint, None) or self._connect(endpoint, timeout)
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request("POST", path, body=json.dumps(body or {}), headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if reused and attempt == 0 and not isinstance(exc, (socket.timeout, TimeoutError)):
                    continue  # the member closed the kept connection (it restarted): once more on a new one
                raise EtcdError(_transport_error(exc)) from None
            pool[endpoint] = conn
            break
        try:
            answer = json.loads(data or b"{}")
        except ValueError:
            raise EtcdError(f"unreadable answer (HTTP {response.status}): {data[:200]!r}") from None
        if response.status != 200 or (isinstance(answer, dict) and "error" in answer and "code" in answer):
            message = answer.get("message") or answer.get("error") if isinstance(answer, dict) else None
            raise EtcdError(str(message or f"HTTP {response.status}"))
        return answer

    def _connect(self, endpoint: str, timeout: float) -> http.client.HTTPSConnection:
        host, port = endpoint.removeprefix("https://").rsplit(":", 1)
        return http.client.HTTPSConnection(host, int(port), context=self._ctx, timeout=timeout)

    # The calls kubeadm, KCP and the simulator make.
    def member_list(self, endpoint: str, timeout: float = 2.0) -> list[dict[str, Any]]:
        return self.call(endpoint, "/v3/cluster/member/list", {}, timeout).get("members", [])

    def status(self, endpoint: str, timeout: float = 2.0) -> dict[str, Any]:
        return self.call(endpoint, "/v3/maintenance/status", {}, timeout)

    def put(self, endpoint: str, key: str, value: str, timeout: float = 1.0) -> dict[str, Any]:
        body = {"key": base64.b64encode(key.encode()).decode(), "value": base64.b64encode(value.encode()).decode()}
        return self.call(endpoint, "/v3/kv/put", body, timeout)

    def get(self, endpoint: str, key: str, timeout: float = 2.0) -> str | None:
        """The value of ``key`` (a linearizable read: it needs quorum), ``None`` when there is none."""
        answer = self.call(endpoint, "/v3/kv/range", {"key": base64.b64encode(key.encode()).decode()}, timeout)
        kvs = answer.get("kvs") or []
        return base64.b64decode(kvs[0].get("value", "")).decode() if kvs else None

    def member_add(self, endpoint: str, peer_url: str, learner: bool, timeout: float = 5.0) -> dict[str, Any]:
        return self.call(endpoint, "/v3/cluster/member/add", {"peerURLs": [peer_url], "isLearner": learner}, timeout)

    def member_promote(self, endpoint: str, member_id: str, timeout: float = 5.0) -> dict[str, Any]:
        return self.call(endpoint, "/v3/cluster/member/promote", {"ID": member_id}, timeout)

    def member_remove(self, endpoint: str, member_id: str, timeout: float = 5.0) -> dict[str, Any]:
        return self.call(endpoint, "/v3/cluster/member/remove", {"ID": member_id}, timeout)

    def move_leader(self, endpoint: str, member_id: str, timeout: float = 5.0) -> dict[str, Any]:
        return self.call(endpoint, "/v3/maintenance/transfer-leadership", {"targetID": member_id}, timeout)


def _transport_error(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "context deadline exceeded (no answer in time)"
    return f"{type(exc).__name__}: {exc}"


@dataclass
class Member:
    """One etcd member process of a node."""

    name: str
    data_dir: Path
    process: subprocess.Popen[bytes] | None = None
    frozen: bool = False
    holds: tuple[socket.socket, socket.socket] = field(
        default_factory=lambda: (hold_port(), hold_port()), repr=False, compare=False
    )
    client_port: int = field(init=False)
    peer_port: int = field(init=False)

    def __post_init__(self) -> None:
        self.client_port, self.peer_port = (int(hold.getsockname()[1]) for hold in self.holds)

    @property
    def client_url(self) -> str:
        return f"https://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, server: TLSFiles, initial_cluster: str, state: str, token: str) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir.parent / f"{self.data_dir.name}.log", "ab")  # noqa: SIM115 - owned by the child
        args = [
            str(etcd_binary()),
            "--name",
            self.name,
            "--data-dir",
            str(self.data_dir),
            "--listen-client-urls",
            self.client_url,
            "--advertise-client-urls",
            self.client_url,
            "--listen-peer-urls",
            self.peer_url,
            "--initial-advertise-peer-urls",
            self.peer_url,
            "--initial-cluster",
            initial_cluster,
            "--initial-cluster-state",
            state,
            "--initial-cluster-token",
            token,
            "--cert-file",
            str(server.cert),
            "--key-file",
            str(server.key),
            "--trusted-ca-file",
            str(server.ca),
            "--client-cert-auth",
            "--heartbeat-interval",
            "100",
            "--election-timeout",
            "1000",
            "--snapshot-count",
            "10000",
            "--logger",
            "zap",
        ]
        try:
            self.process = SPAWNER.popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            log.close()
        self.frozen = False

    def kill(self) -> None:
        """Power-off: SIGKILL, no member removal."""
        if self.process is not None and self.process.poll() is None:
            if self.frozen:
                os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=10)
        self.frozen = False

    def stop(self, grace: float = 3.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds, and the ports let go (simulator shutdown)."""
        try:
            if self.process is None or self.process.poll() is not None:
                return
            if self.frozen:
                os.kill(self.process.pid, signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        finally:
            for hold in self.holds:
                hold.close()

    def freeze(self, frozen: bool) -> None:
        """SIGSTOP/SIGCONT: the process exists and holds its ports but answers nothing (an unhealthy member)."""
        if self.running:
            assert self.process is not None
            os.kill(self.process.pid, signal.SIGSTOP if frozen else signal.SIGCONT)
            self.frozen = frozen

    def rss_kib(self) -> int | None:
        if not self.running:
            return None
        assert self.process is not None
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def cpu_seconds(self) -> float | None:
        if not self.running:
            return None
        assert self.process is not None
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
