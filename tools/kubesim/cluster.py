"""One simulated workload cluster: its API server, controllers, nodes (kubelets) and real etcd members, plus the
quorum monitor and the membership journal that watch those members."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import etcd, pki
from .apiserver import NODE_APISERVER, APIServer
from .controllers import ControllerManager
from .store import ApiError

if TYPE_CHECKING:
    from .sim import Simulator


MIN_REAL_SECONDS = {"discovery_timeout": 60.0}


@dataclass
class NodeRuntime:
    """What a node (EC2 instance) is doing, as its kubelet, etcd and cloud see it."""

    instance_id: str
    cluster: str
    machine: str
    az: str
    region: str
    private_ip: str
    name: str
    instance_type: str
    image_id: str = ""  # the AMI: its name carries the kubelet/kubeadm version baked into it (capa-ami-...-v1.32.0)
    role: str = ""  # init, control-plane, worker, eks-node
    state: str = "pending"  # pending, booting, bootstrapping, registered, joined, rejected, failed, off
    kubelet_alive: bool = False
    registered: bool = False
    instance_gone: bool = False
    member: etcd.Member | None = None
    etcd_started: bool = False
    reason: str = ""
    root: Path | None = None
    network_since: float | None = None
    pod_cidr: str = ""
    cluster_ref: Cluster | None = field(default=None, repr=False)
    processes: set[Any] = field(default_factory=set, repr=False)
    # kube-apiserver's serving certificate on this node (kubeadm: one year from the join; the control API moves it)
    apiserver_not_after: float | None = None  # epoch seconds
    apiserver_endpoint: tuple[str, int] | None = field(default=None, repr=False)
    apiserver_server: Any = field(default=None, repr=False)
    _pod_seq: int = 0

    def kill_processes(self) -> None:
        """A powered-off machine runs nothing: boot hooks and runcmd scripts die with it."""
        for proc in list(self.processes):
            etcd.kill_group(proc)

    def network_ready(self) -> bool:
        if self.cluster_ref is None or not self.kubelet_alive:
            return False
        if not self.cluster_ref.cni_present():
            self.network_since = None
            return False
        if self.network_since is None:
            self.network_since = time.monotonic()
        return time.monotonic() - self.network_since >= self.cluster_ref.delay("cni_ready")

    def pod_ip(self) -> str:
        self._pod_seq += 1
        base = self.pod_cidr.split("/", maxsplit=1)[0].rsplit(".", 1)[0] if self.pod_cidr else "192.168.0"
        return f"{base}.{(self._pod_seq % 250) + 2}"

    def summary(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "machine": self.machine,
            "node": self.name,
            "role": self.role,
            "state": self.state,
            "reason": self.reason,
            "kubelet_alive": self.kubelet_alive,
            "registered": self.registered,
            "etcd": None
            if self.member is None
            else {
                "name": self.member.name,
                "client_url": self.member.client_url,
                "peer_url": self.member.peer_url,
                "running": self.member.running,
                "frozen": self.member.frozen,
                "pid": self.member.process.pid if self.member.running and self.member.process else None,
            },
            "private_ip": self.private_ip,
            "az": self.az,
        }


class Cluster:
    def __init__(self, sim: Simulator, name: str, kind: str, sock: socket.socket, options: dict[str, Any]) -> None:
        self.sim = sim
        self.name = name
        self.kind = kind
        self.journal = sim.journal
        self.options = options
        self.state_dir = sim.state_dir / "clusters" / name
        # A registration is a new cluster on new disks: etcd ignores --initial-cluster when its data directory
        # exists, so a previous cluster's data of the same name would bring back its members and peer URLs.
        shutil.rmtree(self.state_dir, ignore_errors=True)
        self.state_dir.mkdir(parents=True)
        self.port = sock.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.api = APIServer(name, sim.journal, sock, f"127.0.0.1:{self.port}", self.state_dir, self)
        self.api.anonymous_auth = bool(options.get("anonymous_auth", True))
        self.kcm = ControllerManager(self)
        self.nodes: dict[str, NodeRuntime] = {}
        self.lock = threading.RLock()
        self.endpoint_aliases: set[str] = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        if options.get("endpoint"):
            self.endpoint_aliases.add(str(options["endpoint"]))
        self.etcd_ca: pki.CA | None = None
        self.gateway: etcd.Gateway | None = None
        self.token = f"kubesim-{name}-{int(time.time() * 1000)}"
        self.monitor: QuorumMonitor | None = None
        self.init_lock = threading.Lock()
        self.initialized = threading.Event()
        self.kubeadm_config: dict[str, Any] = {}
        self.cluster_ca: pki.CA | None = None
        self.eks: dict[str, Any] | None = None

    @property
    def config(self) -> dict[str, Any]:
        return {**self.sim.config, **self.options}

    @property
    def scale(self) -> float:
        return float(self.config["time_scale"])

    def delay(self, name: str) -> float:
        scaled = float(self.config["delays"][name]) * self.scale
        # Timeouts that wait for unscaled work (the AWS CLI, etcd) keep a floor in real seconds.
        return max(scaled, MIN_REAL_SECONDS.get(name, 0.0))

    # ---- node runtime ---------------------------------------------------------------------------------------
    def node_runtime(self, name: str) -> NodeRuntime | None:
        with self.lock:
            found = [n for n in self.nodes.values() if n.name == name and n.registered]
            return found[-1] if found else None

    def cni_present(self) -> bool:
        rule = self.config["cni"]
        ds = self.api.table.find("apps", "v1", "daemonsets")
        from . import objects as ob

        selector = ob.parse_label_selector(rule.get("label_selector") or "") if rule.get("label_selector") else None
        for obj in self.api.store.items(ds):
            meta = obj["metadata"]
            if f"{meta['namespace']}/{meta['name']}" in rule.get("daemonsets", []):
                return True
            if selector and ob.labels_match(selector, meta.get("labels")):
                return True
        return False

    def apiserver_available(self) -> bool:
        if self.kind == "eks":
            return self.api.listening  # the EKS control plane is AWS's, always there once ACTIVE
        with self.lock:
            return any(
                n.kubelet_alive and n.etcd_started for n in self.nodes.values() if n.role in ("init", "control-plane")
            )

    def etcd_writable(self) -> bool:
        if self.kind == "eks" or self.monitor is None or not self.config.get("apiserver_needs_quorum", True):
            return True
        return self.monitor.has_quorum

    def kubelet_reachable(self, node: str | None) -> tuple[bool, str]:
        runtime = self.node_runtime(node or "")
        if runtime is None:
            return False, f"node {node} not found"
        if not runtime.kubelet_alive:
            return False, f"dial tcp {runtime.private_ip}:10250: connect: no route to host"
        return True, ""

    def portforward_target(self, pod: dict[str, Any], port: int) -> tuple[tuple[str, int] | None, str]:
        runtime = self.node_runtime(pod["spec"].get("nodeName", ""))
        if runtime is None or not runtime.kubelet_alive:
            return None, "connect: no route to host"
        name = pod["metadata"]["name"]
        if pod["metadata"].get("namespace") == "kube-system":
            if name == f"etcd-{runtime.name}" and port == 2379:
                member = runtime.member
                if member is not None and member.running:
                    return ("127.0.0.1", member.client_port), ""
                return None, "connect: connection refused"
            if name == f"kube-apiserver-{runtime.name}" and port == 6443:
                return NODE_APISERVER, runtime.name  # this node's own serving endpoint (node_apiserver)
        return None, "connect: connection refused"

    async def node_apiserver(self, node: str) -> tuple[str, int] | None:
        """The node's kube-apiserver as a TLS endpoint with its own serving certificate (signed by the cluster CA,
        valid until ``apiserver_not_after``): what a client that reads a node's certificate expiry (KCP) sees. It
        answers ``GET /healthz``; the cluster's API itself is the one shared endpoint."""
        runtime = self.node_runtime(node)
        if runtime is None or self.cluster_ca is None:
            return None
        if runtime.apiserver_endpoint is not None:
            return runtime.apiserver_endpoint
        if runtime.apiserver_not_after is None:
            runtime.apiserver_not_after = time.time() + 365 * 86400
        days = (runtime.apiserver_not_after - time.time()) / 86400
        cert, key = self.cluster_ca.sign(
            "kube-apiserver",
            server=True,
            dns_names=[node, "kubernetes"],
            ips=[runtime.private_ip, "127.0.0.1"],
            days=days,  # type: ignore[arg-type]
        )
        directory = self.state_dir / "apiservers"
        cert_file, key_file = pki.write_pair(directory, node, cert, key)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(cert_file), str(key_file))

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
                body = b"ok" if request.startswith(b"GET /healthz") else b"not found"
                status = b"200 OK" if body == b"ok" else b"404 Not Found"
                writer.write(
                    b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )
                await writer.drain()
            except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, ssl.SSLError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
        runtime.apiserver_server = server
        runtime.apiserver_endpoint = ("127.0.0.1", server.sockets[0].getsockname()[1])
        return runtime.apiserver_endpoint

    def renew_apiserver_certificate(self, node: str, expires_in_days: float) -> None:
        """The control API: the node's serving certificate now expires in ``expires_in_days`` (a new one is made
        at the next connection)."""
        runtime = self.node_runtime(node)
        if runtime is None:
            raise KeyError(node)
        runtime.apiserver_not_after = time.time() + expires_in_days * 86400
        if runtime.apiserver_server is not None:
            runtime.apiserver_server.close()
        runtime.apiserver_server, runtime.apiserver_endpoint = None, None

    def evict(self, ns: str, name: str, body: dict[str, Any], user: Any) -> dict[str, Any]:
        return self.kcm.evict(ns, name, body)

    # ---- etcd -----------------------------------------------------------------------------------------------
    def setup_etcd_client(self, etcd_ca: pki.CA) -> None:
        self.etcd_ca = etcd_ca
        directory = self.state_dir / "etcd-client"
        cert, key = etcd_ca.sign("kube-apiserver-etcd-client", ["system:masters"], client=True)
        cert_file, key_file = pki.write_pair(directory, "client", cert, key)
        ca_file = directory / "ca.crt"
        ca_file.write_text(etcd_ca.cert_pem)
        self.gateway = etcd.Gateway(etcd.TLSFiles(ca_file, cert_file, key_file))

    def members(self) -> list[etcd.Member]:
        with self.lock:
            return [n.member for n in self.nodes.values() if n.member is not None]

    def member_by_peer(self, peer_url: str) -> NodeRuntime | None:
        with self.lock:
            for n in self.nodes.values():
                if n.member is not None and n.member.peer_url == peer_url:
                    return n
        return None

    def live_endpoints(self) -> list[str]:
        members = self.members()
        running = [m for m in members if m.running and not m.frozen]
        frozen = [m for m in members if m.running and m.frozen]
        return [m.client_url for m in running + frozen]

    def etcd_view(self) -> dict[str, Any]:
        """Member list and leader as etcd reports them (through any live member), with node names."""
        if self.gateway is None:
            return {"members": [], "leader": None, "error": "no etcd yet"}
        last = "no live member"
        for endpoint in self.live_endpoints():
            try:
                listed = self.gateway.member_list(endpoint, timeout=1.0)
                status = self.gateway.status(endpoint, timeout=1.0)
            except etcd.EtcdError as exc:
                last = str(exc)
                continue
            members = []
            for m in listed:
                peer = (m.get("peerURLs") or [""])[0]
                node = self.member_by_peer(peer)
                members.append(
                    {
                        "id": m.get("ID"),
                        "name": m.get("name", ""),
                        "node": node.name if node else None,
                        "peer_url": peer,
                        "is_learner": bool(m.get("isLearner")),
                        "started": bool(m.get("name")),
                        "running": bool(node and node.member and node.member.running),
                    }
                )
            leader = status.get("leader")
            leader_name = next((m["name"] or m["node"] for m in members if m["id"] == leader), None)
            return {"members": members, "leader": leader, "leader_name": leader_name, "via": endpoint}
        return {"members": [], "leader": None, "error": last}

    # ---- lifecycle ------------------------------------------------------------------------------------------
    def start_monitor(self) -> None:
        if self.monitor is None and self.gateway is not None:
            self.monitor = QuorumMonitor(self)
            self.monitor.start()

    async def start_api(self, ca: pki.CA, sans: list[str], version: str) -> None:
        await self.api.start(ca, sans, version)
        self.kcm.start()

    def stop(self) -> None:
        if self.monitor is not None:
            self.monitor.stop()
        self.kcm.stop()
        with self.lock:
            runtimes = list(self.nodes.values())
        for n in runtimes:
            n.kubelet_alive = False
            n.instance_gone = True
            n.state = "off"
            n.kill_processes()
            if n.member is not None:
                n.member.stop()
        loop = self.sim.loop
        future = asyncio.run_coroutine_threadsafe(self.api.stop(), loop)
        try:
            future.result(timeout=10)
        except Exception:  # noqa: BLE001 - shutting down
            pass

    def summary(self) -> dict[str, Any]:
        with self.lock:
            nodes = [n.summary() for n in self.nodes.values()]
        return {
            "name": self.name,
            "kind": self.kind,
            "port": self.port,
            "url": self.url,
            "apiserver": {"listening": self.api.listening, "available": self.apiserver_available()},
            "initialized": self.initialized.is_set(),
            "endpoint_aliases": sorted(self.endpoint_aliases),
            "ca_cert": self.cluster_ca.cert_pem if self.cluster_ca else None,
            "etcd_ca_cert": self.etcd_ca.cert_pem if self.etcd_ca else None,
            "instances": nodes,
            "quorum": self.monitor.summary() if self.monitor else None,
            "controller_errors": self.kcm.errors[-20:],
        }

    def ensure(self, plural: str, obj: dict[str, Any], manager: str, group: str = "", version: str = "v1") -> None:
        res = self.api.table.find(group, version, plural)
        assert res is not None, plural
        try:
            self.api.store.ensure(res, obj, manager)
        except ApiError as exc:
            self.journal.record(
                "cluster", "bootstrap-object-failed", cluster=self.name, plural=plural, error=exc.message
            )


class QuorumMonitor:
    """Writes through etcd every ``quorum_interval`` (200 ms) and polls member list + leader every 150 ms.

    etcd 3.4 answers ``member list`` from its local state even without quorum, so only the write tells whether the
    cluster can commit: a failed window opens at the first failed write and closes at the next good one.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.windows: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None
        self.has_quorum = True
        self.writes = 0
        self.failures = 0
        self.known: dict[str, dict[str, Any]] = {}
        self.leader: str | None = None
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._write_loop, name=f"quorum-{cluster.name}", daemon=True),
            threading.Thread(target=self._member_loop, name=f"members-{cluster.name}", daemon=True),
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)

    def summary(self) -> dict[str, Any]:
        windows = list(self.windows) + ([dict(self.open, end=None)] if self.open else [])
        return {
            "has_quorum": self.has_quorum,
            "writes": self.writes,
            "failures": self.failures,
            "failed_windows": windows,
        }

    def _write_loop(self) -> None:
        gateway = self.cluster.gateway
        assert gateway is not None
        interval = float(self.cluster.config["quorum_interval"])
        while not self._stop.wait(interval):
            endpoints = self.cluster.live_endpoints()
            error = "no live etcd member"
            ok = False
            for endpoint in endpoints:
                try:
                    gateway.put(endpoint, "/kubesim/quorum-probe", repr(time.time()), timeout=1.0)
                    ok = True
                    break
                except etcd.EtcdError as exc:
                    error = str(exc)
                    if "learner" in error:
                        continue
            if not endpoints and not self.cluster.members():
                continue
            self.writes += 1
            now = time.time()
            if ok:
                if self.open is not None:
                    self.open["end"] = now
                    self.windows.append(self.open)
                    self.cluster.journal.record("quorum", "write-recovered", cluster=self.cluster.name, **self.open)
                    self.open = None
                self.has_quorum = True
            else:
                self.failures += 1
                if self.open is None:
                    self.open = {"start": now, "end": None, "error": error, "failures": 0}
                    self.cluster.journal.record(
                        "quorum", "write-failed", cluster=self.cluster.name, start=now, error=error
                    )
                self.open["failures"] += 1
                self.has_quorum = False

    def _member_loop(self) -> None:
        gateway = self.cluster.gateway
        assert gateway is not None
        journal = self.cluster.journal
        name = self.cluster.name
        while not self._stop.wait(0.15):
            listed = None
            status = None
            for endpoint in self.cluster.live_endpoints():
                try:
                    listed = gateway.member_list(endpoint, timeout=0.5)
                    status = gateway.status(endpoint, timeout=0.5)
                    break
                except etcd.EtcdError:
                    continue
            if listed is None:
                continue
            current = {}
            for m in listed:
                peer = (m.get("peerURLs") or [""])[0]
                node = self.cluster.member_by_peer(peer)
                current[m["ID"]] = {
                    "id": m["ID"],
                    "etcd_name": m.get("name", ""),
                    "member": node.name if node else m.get("name", ""),
                    "peer_url": peer,
                    "is_learner": bool(m.get("isLearner")),
                }
            for mid, m in current.items():
                old = self.known.get(mid)
                if old is None:
                    journal.record("etcd", "member-added", cluster=name, **m)
                    if m["etcd_name"]:
                        journal.record("etcd", "member-started", cluster=name, **m)
                    continue
                if not old["etcd_name"] and m["etcd_name"]:
                    journal.record("etcd", "member-started", cluster=name, **m)
                if old["is_learner"] and not m["is_learner"]:
                    journal.record("etcd", "member-promoted", cluster=name, **m)
            for mid, m in self.known.items():
                if mid not in current:
                    journal.record("etcd", "member-removed", cluster=name, **m)
            previous = self.known
            self.known = current
            leader = (status or {}).get("leader")
            if leader in ("0", 0):
                leader = None
            if leader != self.leader and leader is not None:
                before = previous.get(self.leader or "", {}).get("member") if self.leader else None
                journal.record(
                    "etcd",
                    "leader-changed",
                    cluster=name,
                    id=leader,
                    member=current.get(leader, {}).get("member"),
                    previous=before,
                    previous_id=self.leader,
                )
                self.leader = leader
