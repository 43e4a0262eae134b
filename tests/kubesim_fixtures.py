"""pytest fixtures for the workload-cluster simulator (tools/kubesim), imported by tests/integration/conftest.py.

* ``kubesim_server`` (session): a ``python -m kubesim`` process bound to this worker's moto server (one per
  pytest-xdist worker; free ports everywhere), stopped - with all its etcd members - at session end.
* ``kubesim`` (function): the simulator reset for the test (clusters, knobs, journal, settings), after the ``aws``
  fixture reset moto; a :class:`KubeSim` client. Reset again when the test ends, so no etcd outlives its test.

``KubeSim``: ``register(name, **options) -> SimCluster`` (the API server's port/URL are known at once),
``config(**settings)``, ``knob(instance_id=|name_prefix=, never_boot=, register_delay=, etcd_never_starts=,
etcd_learner=)``, ``journal(since=, cluster=, source=, moto=True)``, ``state()``, ``wait(predicate, timeout, what)``.

``SimCluster``: ``summary()``, ``instances()``, ``api_client(user, groups)`` (official ``kubernetes`` client with a
client certificate from the cluster CA), ``kubeconfig(path, user, groups)``, ``credentials(...)``,
``create(*objects)``, ``etcd()`` (members, leader, quorum windows), ``etcd_member(name, power=, frozen=)``,
``usage()``, ``wait_initialized()``, ``wait_nodes(count, ready=None)``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"


def server_env(**extra: str) -> dict[str, str]:
    """The environment of a server the tests start (moto, the simulator): theirs, without coverage's subprocess
    configuration: they run none of plugins/, so tracing every request they serve would only cost CPU."""
    env = {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}
    env.update(extra)
    return env


class KubeSimError(RuntimeError):
    pass


class KubeSimServer:
    """A running ``python -m kubesim`` process."""

    def __init__(self, workdir: Path, moto_url: str, startup_timeout: float = 60.0) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.urlfile = workdir / "kubesim.url"
        self.logfile = workdir / "kubesim.log"
        self._log = open(self.logfile, "wb")  # noqa: SIM115 - closed in stop()
        env = server_env(PYTHONPATH=str(TOOLS))
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesim",
                "--state",
                str(workdir / "state"),
                "--moto",
                moto_url,
                "--urlfile",
                str(self.urlfile),
                "--exit-with-parent",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=str(TOOLS),
            env=env,
        )
        deadline = time.monotonic() + startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise KubeSimError(f"kubesim exited with {self.process.returncode}: {self.log_tail()}")
            if self.urlfile.is_file() and self.urlfile.read_text().strip():
                self.url = self.urlfile.read_text().strip()
                return
            time.sleep(0.1)
        self.stop()
        raise KubeSimError(f"kubesim did not start within {startup_timeout}s: {self.log_tail()}")

    def log_tail(self, size: int = 6000) -> str:
        try:
            return self.logfile.read_bytes()[-size:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()


def _call(base: str, method: str, path: str, body: Any = None, timeout: float = 120) -> Any:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(
        f"{base}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise KubeSimError(f"{method} {path}: HTTP {exc.code} {exc.read().decode('utf-8', 'replace')}") from None


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class SimCluster:
    def __init__(self, sim: KubeSim, summary: dict[str, Any]) -> None:
        self.sim = sim
        self.name = summary["name"]
        self.port = summary["port"]
        self.url = summary["url"]
        self._tmp = Path(tempfile.mkdtemp(prefix=f"kubesim-{self.name}-"))

    def summary(self) -> dict[str, Any]:
        return self.sim.call("GET", f"/clusters/{self.name}")

    def instances(self) -> list[dict[str, Any]]:
        return self.summary()["instances"]

    def instance(self, instance_id: str) -> dict[str, Any]:
        """The simulator's view of one instance (``{}`` until the EC2 watcher has seen it)."""
        return next((i for i in self.instances() if i["instance_id"] == instance_id), {})

    def credentials(
        self, user: str = "kubesim-admin", groups: tuple[str, ...] = ("system:masters",), ca: str = "cluster"
    ) -> dict[str, str]:
        return self.sim.call(
            "POST", f"/clusters/{self.name}/credentials", {"user": user, "groups": list(groups), "ca": ca}
        )

    def cert_files(
        self, user: str = "kubesim-admin", groups: tuple[str, ...] = ("system:masters",), ca: str = "cluster"
    ) -> tuple[str, str, str]:
        cred = self.credentials(user, groups, ca)
        stem = self._tmp / f"{ca}-{user.replace(':', '_')}"
        paths = []
        for part in ("cert", "key", "ca"):
            path = Path(f"{stem}.{part}")
            path.write_text(cred[part])
            paths.append(str(path))
        return paths[0], paths[1], paths[2]

    def api_client(self, user: str = "kubesim-admin", groups: tuple[str, ...] = ("system:masters",)) -> Any:
        from kubernetes import client

        cert, key, ca = self.cert_files(user, groups)
        config = client.Configuration()
        config.host = self.url
        config.ssl_ca_cert = ca
        config.cert_file = cert
        config.key_file = key
        return client.ApiClient(config)

    def kubeconfig(
        self, path: Path, user: str = "kubesim-admin", groups: tuple[str, ...] = ("system:masters",)
    ) -> Path:
        cred = self.credentials(user, groups)

        def b64(text: str) -> str:
            return base64.b64encode(text.encode()).decode()

        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": self.name,
                    "clusters": [
                        {
                            "name": self.name,
                            "cluster": {"server": self.url, "certificate-authority-data": b64(cred["ca"])},
                        }
                    ],
                    "users": [
                        {
                            "name": user,
                            "user": {"client-certificate-data": b64(cred["cert"]), "client-key-data": b64(cred["key"])},
                        }
                    ],
                    "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": user}}],
                }
            )
        )
        return path

    def create(self, *objects: dict[str, Any]) -> list[dict[str, Any]]:
        results = self.sim.call("POST", f"/clusters/{self.name}/objects", {"objects": list(objects)})["results"]
        errors = [r for r in results if "error" in r]
        if errors:
            raise KubeSimError(f"creating objects failed: {errors}")
        return results

    def etcd(self) -> dict[str, Any]:
        return self.sim.call("GET", f"/clusters/{self.name}/etcd")

    def etcd_member(self, name: str, **action: Any) -> dict[str, Any]:
        return self.sim.call("POST", f"/clusters/{self.name}/etcd/{name}", action)

    def etcd_kv(self, put: dict[str, str] | None = None, get: list[str] | None = None) -> dict[str, str | None]:
        """Write and read keys through the cluster's real etcd."""
        return self.sim.call("POST", f"/clusters/{self.name}/etcd-kv", {"put": put or {}, "get": get or []})["values"]

    def usage(self) -> dict[str, Any]:
        return self.sim.call("GET", f"/clusters/{self.name}/usage")

    def kubelet(self, node: str, running: bool) -> dict[str, Any]:
        """Stop (or start again) a node's kubelet while its instance keeps running: the Node goes Ready=Unknown."""
        return self.sim.call("POST", f"/clusters/{self.name}/nodes/{node}/kubelet", {"running": running})

    def certificates(self, node: str, expires_in_days: float) -> dict[str, Any]:
        """The node's kube-apiserver serving certificate now expires that soon (a cluster left alone for a year)."""
        return self.sim.call(
            "POST", f"/clusters/{self.name}/nodes/{node}/certificates", {"expires_in_days": expires_in_days}
        )

    def wait_initialized(self, timeout: float = 90) -> dict[str, Any]:
        def ready() -> Any:
            summary = self.summary()
            failed = [i for i in summary["instances"] if i["state"] in ("failed", "rejected")]
            if failed:
                raise AssertionError(f"a node failed: {failed}")
            return summary if summary["initialized"] else None

        return wait_for(ready, timeout, f"cluster {self.name} to initialize")

    def wait_nodes(self, count: int, ready: bool | None = None, timeout: float = 90) -> list[Any]:
        from kubernetes import client

        api = client.CoreV1Api(self.api_client())

        def check() -> Any:
            nodes = api.list_node().items
            if ready is not None:
                nodes = [n for n in nodes if _ready(n) == ready]
            return nodes if len(nodes) >= count else None

        return wait_for(check, timeout, f"{count} nodes (ready={ready}) in {self.name}")


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


class KubeSim:
    """Client of a simulator's control API."""

    def __init__(self, url: str, moto_url: str) -> None:
        self.url = url
        self.moto_url = moto_url
        self.clusters: list[SimCluster] = []

    def call(self, method: str, path: str, body: Any = None, timeout: float = 120) -> Any:
        return _call(self.url, method, path, body, timeout)

    def reset(self) -> None:
        self.call("POST", "/reset", {})

    def config(self, **settings: Any) -> dict[str, Any]:
        return self.call("POST", "/config", settings)

    def register(self, name: str, **options: Any) -> SimCluster:
        cluster = SimCluster(self, self.call("POST", "/clusters", {"name": name, **options}))
        self.clusters.append(cluster)
        return cluster

    def cleanup(self) -> None:
        """Remove the client certificates the test's clusters wrote."""
        for cluster in self.clusters:
            shutil.rmtree(cluster._tmp, ignore_errors=True)
        self.clusters.clear()

    def knob(self, **spec: Any) -> dict[str, Any]:
        return self.call("POST", "/knobs", spec)

    def state(self) -> dict[str, Any]:
        return self.call("GET", "/state")

    @property
    def proxy(self) -> str:
        """The CONNECT proxy to every cluster's endpoint names (tools/kubesim/proxy.py)."""
        return str(self.state()["proxy"])

    def journal(
        self, since: float | None = None, cluster: str | None = None, source: str | None = None, moto: bool = True
    ) -> list[dict[str, Any]]:
        query = [f"moto={1 if moto else 0}"]
        if since is not None:
            query.append(f"since={since}")
        if cluster:
            query.append(f"cluster={cluster}")
        if source:
            query.append(f"source={source}")
        return self.call("GET", "/journal?" + "&".join(query))

    wait = staticmethod(wait_for)


@pytest.fixture(scope="session")
def kubesim_server(moto_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeSimServer]:
    server = KubeSimServer(tmp_path_factory.mktemp("kubesim"), moto_server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kubesim(aws: Any, kubesim_server: KubeSimServer) -> Iterator[KubeSim]:
    sim = KubeSim(kubesim_server.url, aws.url)
    sim.reset()
    try:
        yield sim
    finally:
        sim.reset()
        sim.cleanup()
