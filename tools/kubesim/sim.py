"""The simulator process: watched clusters, the EC2 watcher (boot simulator), knobs, time scale."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from . import etcd
from .cluster import Cluster, NodeRuntime
from .journal import Journal, merge
from .kubeadm import Kubeadm
from .node import NodeBoot

OWNER_TAG = "sigs.k8s.io/cluster-api-provider-aws/cluster/{}"
ROLE_TAG = "sigs.k8s.io/cluster-api-provider-aws/role"
OBSERVER_HEADER = "X-Capa-Observer"

# Simulated seconds (multiplied by time_scale). The figures are what the real components take on AWS:
DEFAULT_DELAYS = {
    "boot": 40.0,  # EC2 running -> cloud-init runs user data (Ubuntu/AL2023 on t3: 30-45 s)
    "kubeadm_init": 60.0,  # kubeadm init until the API server answers (preflight, certs, static pods: 40-90 s)
    "kubeadm_join": 30.0,  # kubeadm join until discovery + TLS bootstrap are done (20-40 s)
    "cni_ready": 30.0,  # CNI DaemonSet present -> its pod writes the CNI config, Node Ready (calico-node: 20-40 s)
    "pod_start": 5.0,  # scheduled pod -> Running/Ready (image cached: a few seconds)
    "node_monitor_grace": 40.0,  # kube-controller-manager --node-monitor-grace-period (40 s; 50 s from 1.32)
    "ccm_start": 10.0,  # cloud controller manager pod starts and initialises nodes (5-15 s)
    "pod_gc": 40.0,  # pods of deleted nodes are removed by pod GC (quarantine 40 s)
    "discovery_timeout": 300.0,  # kubeadm discovery.timeout (5 min)
    "nodeadm": 30.0,  # nodeadm init until the kubelet registers (EKS AL2023 nodes: 20-40 s)
    "nodegroup_node": 90.0,  # EKS managed node group: CreateNodegroup -> Node registered (~1.5-3 min)
    "volume_detach": 15.0,  # last pod using an EBS volume left the node -> VolumeAttachment gone (10-20 s)
}
DEFAULT_CONFIG: dict[str, Any] = {
    "time_scale": 0.02,
    "delays": DEFAULT_DELAYS,
    # etcd runs in real time: kubeadm's etcd API timeout (v1beta4 timeouts.etcdAPICall, 2 min) is shortened to a
    # real 40 s - long enough for etcd's 5 s HealthInterval refusals, short enough for tests.
    "etcd_api_timeout": 40.0,
    "poll_interval": 0.2,
    # The instances are re-read when moto's state generation moved (GET /_capa/generation: some request that may
    # change state arrived), when the registered clusters changed, while an instance is pending or shutting down
    # (the AWS latency model moves it on by time alone), and at the latest this often.
    "full_poll_interval": 2.0,
    "quorum_interval": 0.2,
    "regions": ["us-east-1"],
    "cni": {
        "daemonsets": [
            "kube-system/calico-node",
            "kube-system/cilium",
            "kube-system/aws-node",
            "kube-flannel/kube-flannel-ds",
            "kube-system/kube-flannel-ds",
        ],
        "label_selector": "kubesim.io/cni=true",
    },
    "ccm_deletes_terminated_nodes": True,
    "apiserver_needs_quorum": True,
}
# EC2 states that end by themselves (under moto's latency model, tools/aws_latencies.py, after a time rather than on a
# request): while an instance is in one, the instances are re-read every poll_interval, not when the generation moves.
MOVING_STATES = ("pending", "shutting-down", "stopping")
KNOB_KEYS = ("never_boot", "register_delay", "etcd_never_starts", "etcd_learner", "etcd_never_promoted")


def owner_tags_of(cluster: Cluster) -> list[str]:
    """The tags that make an instance part of a cluster: CAPA's owner tag, and for EKS the cloud provider's."""
    tags = [OWNER_TAG.format(cluster.name)]
    if cluster.eks:
        tags.append(f"kubernetes.io/cluster/{cluster.eks['name']}")
    return tags


class Simulator:
    def __init__(self, state_dir: Path, moto_url: str, loop: asyncio.AbstractEventLoop) -> None:
        self.state_dir = state_dir
        self.moto_url = moto_url.rstrip("/")
        self.loop = loop
        self.journal = Journal()
        self.config: dict[str, Any] = copy.deepcopy(DEFAULT_CONFIG)
        self.clusters: dict[str, Cluster] = {}
        self.knobs: list[dict[str, Any]] = []
        self.lock = threading.RLock()
        self.control_url = ""
        self.proxy_url = ""  # the CONNECT proxy to every cluster's endpoint (proxy.py), set by __main__
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch_loop, name="ec2-watcher", daemon=True)
        self._clients: dict[str, Any] = {}
        self.watch_errors: list[str] = []
        self.eks = None  # phase 2: set by eks.attach()
        # What the last full read of the instances saw: moto's generation, the clusters, when.
        self._read_at: tuple[int | None, tuple[str, ...], float] = (None, (), 0.0)

    def start(self) -> None:
        self._watcher.start()

    # ---- configuration --------------------------------------------------------------------------------------
    def set_config(self, changes: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            for key, value in changes.items():
                if key == "delays":
                    self.config["delays"] = {**self.config["delays"], **value}
                elif key == "cni":
                    self.config["cni"] = {**self.config["cni"], **value}
                elif key in DEFAULT_CONFIG:
                    self.config[key] = value
                else:
                    raise ValueError(f"unknown setting {key!r}; known: {sorted(DEFAULT_CONFIG)}")
            return copy.deepcopy(self.config)

    def set_knob(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``{"instance_id": ...}`` or ``{"name_prefix": ...}`` (Name tag / machine name), plus knob values."""
        if not spec.get("instance_id") and not spec.get("name_prefix"):
            raise ValueError("a knob needs instance_id or name_prefix")
        unknown = set(spec) - set(KNOB_KEYS) - {"instance_id", "name_prefix", "cluster"}
        if unknown:
            raise ValueError(f"unknown knobs {sorted(unknown)}; known: {list(KNOB_KEYS)}")
        with self.lock:
            self.knobs.append(dict(spec))
        return spec

    def knobs_for(self, runtime: NodeRuntime) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with self.lock:
            for knob in self.knobs:
                if knob.get("cluster") and knob["cluster"] != runtime.cluster:
                    continue
                if knob.get("instance_id") and knob["instance_id"] != runtime.instance_id:
                    continue
                if knob.get("name_prefix") and not runtime.machine.startswith(knob["name_prefix"]):
                    continue
                found.update({k: v for k, v in knob.items() if k in KNOB_KEYS})
        return found

    # ---- clusters -------------------------------------------------------------------------------------------
    def register(self, name: str, kind: str = "kubeadm", **options: Any) -> Cluster:
        with self.lock:
            if name in self.clusters:
                return self.clusters[name]
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Bound but not listening until kubeadm init: connections are refused, as before a real init.
            sock.bind(("127.0.0.1", int(options.pop("port", 0) or 0)))
            cluster = Cluster(self, name, kind, sock, options)
            self.clusters[name] = cluster
            for region in options.get("regions") or []:
                if region not in self.config["regions"]:
                    self.config["regions"].append(region)
            self.journal.record("cluster", "registered", cluster=name, kind=kind, url=cluster.url)
            return cluster

    def unregister(self, name: str) -> None:
        with self.lock:
            cluster = self.clusters.pop(name, None)
        if cluster is not None:
            cluster.stop()

    def reset(self) -> None:
        with self.lock:
            names = list(self.clusters)
        for name in names:
            self.unregister(name)
        with self.lock:
            self.knobs.clear()
            self.config = copy.deepcopy(DEFAULT_CONFIG)
        self._read_at = (None, (), 0.0)
        self._moving = False  # the last read saw an instance in one of MOVING_STATES
        self.journal.clear()

    def stop(self) -> None:
        self._stop.set()
        self.reset()

    def resolve_endpoint(self, endpoint: str) -> Cluster | None:
        # Host names are case-insensitive: AWS hands out an EKS endpoint in upper case and kubectl CONNECTs to it so.
        endpoint = endpoint.lower()
        with self.lock:
            clusters = list(self.clusters.values())
        for cluster in clusters:
            aliases = {alias.lower() for alias in cluster.endpoint_aliases}
            if endpoint in aliases and cluster.api.listening:
                return cluster
        return None

    # ---- AWS (the simulator's own observation: not counted by moto's request counter) ------------------------
    def client(self, service: str, region: str) -> Any:
        key = f"{service}/{region}"
        if key not in self._clients:
            import boto3

            client = boto3.client(
                service,
                endpoint_url=self.moto_url,
                region_name=region,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )

            def mark(request: Any, **_: Any) -> None:
                request.headers[OBSERVER_HEADER] = "kubesim"

            client.meta.events.register("before-sign.*.*", mark)
            self._clients[key] = client
        return self._clients[key]

    def user_data(self, instance_id: str, region: str) -> bytes:
        answer = self.client("ec2", region).describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        value = (answer.get("UserData") or {}).get("Value")
        return base64.b64decode(value) if value else b""

    def moto_capa(self, path: str, timeout: float = 10) -> Any:
        """The answer of one of the moto server's own endpoints (``/_capa/...``), as JSON; raises OSError/ValueError."""
        with urllib.request.urlopen(f"{self.moto_url}/_capa/{path}", timeout=timeout) as response:
            return json.loads(response.read())

    def _moto_generation(self) -> int | None:
        """moto's state generation (it grows with every request that may change state), None when unknown."""
        try:
            return int(self.moto_capa("generation", timeout=5)["generation"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def moto_requests(self) -> list[dict[str, Any]]:
        try:
            records = self.moto_capa("requests")
        except (OSError, ValueError):
            return []
        return [{"source": "moto", "event": "request", **r} for r in records if "time" in r]

    def timeline(self, since: float | None = None, cluster: str | None = None, moto: bool = True) -> list[Any]:
        own = self.journal.entries(since=since, cluster=cluster)
        theirs = [r for r in self.moto_requests() if since is None or r["time"] >= since] if moto else []
        return merge(own, theirs)

    # ---- the EC2 watcher -------------------------------------------------------------------------------------
    def _watch_loop(self) -> None:
        while not self._stop.wait(float(self.config["poll_interval"])):
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - moto restarting, a reset in flight: try again next time
                self.watch_errors.append(f"{time.time():.3f} {type(exc).__name__}: {exc}")
                del self.watch_errors[:-50]

    def poll(self) -> None:
        with self.lock:
            clusters = dict(self.clusters)
            regions = list(self.config["regions"])
        if self.eks is not None:
            self.eks.poll()
        if not clusters:
            return
        generation = self._moto_generation()
        names = tuple(sorted(clusters))
        last_generation, last_names, last_at = self._read_at
        now = time.monotonic()
        if (
            generation is not None
            and generation == last_generation
            and names == last_names
            and now - last_at < float(self.config["full_poll_interval"])
            and not self._moving
        ):
            return  # nothing that could change an instance happened since the last read
        owner_tags = {n: owner_tags_of(c) for n, c in clusters.items()}
        wanted = sorted({t for tags in owner_tags.values() for t in tags})
        seen: set[str] = set()
        moving = False
        for region in regions:
            pages = (
                self.client("ec2", region)
                .get_paginator("describe_instances")
                .paginate(Filters=[{"Name": "tag-key", "Values": wanted}])
            )
            for page in pages:
                for reservation in page.get("Reservations", []):
                    for instance in reservation.get("Instances", []):
                        tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
                        moving = moving or instance.get("State", {}).get("Name") in MOVING_STATES
                        for name, cluster in clusters.items():
                            if any(tags.get(t) == "owned" for t in owner_tags[name]):
                                seen.add(instance["InstanceId"])
                                self.observe(cluster, instance, tags, region)
        for cluster in clusters.values():
            with cluster.lock:
                # Managed node group nodes are EKS's own instances: moto starts none, so they are never listed.
                gone = [
                    r
                    for r in cluster.nodes.values()
                    if r.instance_id not in seen and not r.instance_gone and r.role != "eks-managed"
                ]
            for runtime in gone:
                # The instance no longer exists at all (moto was reset): it is gone as if terminated.
                self.power_off(cluster, runtime, "instance vanished", terminated=True)
        self._read_at = (generation, names, now)  # only a read that went through counts
        self._moving = moving

    def observe(self, cluster: Cluster, instance: dict[str, Any], tags: dict[str, str], region: str) -> None:
        state = instance.get("State", {}).get("Name", "")
        instance_id = instance["InstanceId"]
        with cluster.lock:
            runtime = cluster.nodes.get(instance_id)
        if runtime is None:
            if state != "running":
                return
            runtime = NodeRuntime(
                instance_id=instance_id,
                cluster=cluster.name,
                machine=tags.get("Name", instance_id),
                az=instance.get("Placement", {}).get("AvailabilityZone", f"{region}a"),
                region=region,
                private_ip=instance.get("PrivateIpAddress", ""),
                name=instance.get("PrivateDnsName") or f"ip-{instance.get('PrivateIpAddress', '').replace('.', '-')}",
                instance_type=instance.get("InstanceType", "t3.large"),
                image_id=instance.get("ImageId", ""),
                cluster_ref=cluster,
            )
            with cluster.lock:
                cluster.nodes[instance_id] = runtime
            self.journal.record(
                "node",
                "instance-running",
                cluster=cluster.name,
                instance=instance_id,
                node=runtime.name,
                machine=runtime.machine,
                role_tag=tags.get(ROLE_TAG),
            )
            boot = NodeBoot(self, cluster, runtime, instance)
            threading.Thread(target=boot.run, name=f"boot-{instance_id}", daemon=True).start()
            return
        if state in ("shutting-down", "terminated") and not runtime.instance_gone:
            self.power_off(cluster, runtime, state, terminated=True)
        elif state in ("stopping", "stopped") and runtime.state != "off":
            self.power_off(cluster, runtime, state, terminated=False)
        elif state == "running" and runtime.state == "off" and not runtime.instance_gone:
            self.power_on(cluster, runtime)

    def power_off(self, cluster: Cluster, runtime: NodeRuntime, why: str, terminated: bool) -> None:
        """The instance lost power: etcd SIGKILLed (its member stays), kubelet gone, port-forwards closed."""
        runtime.kubelet_alive = False
        runtime.instance_gone = runtime.instance_gone or terminated
        previous = runtime.state
        runtime.state = "off"
        runtime.previous_state = previous  # type: ignore[attr-defined]
        killed = None
        runtime.kill_processes()
        if runtime.member is not None and runtime.member.running:
            killed = runtime.member.process.pid if runtime.member.process else None
            runtime.member.kill()
            self.journal.record(
                "node",
                "etcd-killed",
                cluster=cluster.name,
                instance=runtime.instance_id,
                node=runtime.name,
                member=runtime.member.name,
                pid=killed,
            )
        if cluster.api.listening:
            asyncio.run_coroutine_threadsafe(cluster.api.close_forwards(runtime.name), self.loop)
        self.journal.record(
            "node",
            "powered-off",
            cluster=cluster.name,
            instance=runtime.instance_id,
            node=runtime.name,
            machine=runtime.machine,
            state=why,
        )

    def power_on(self, cluster: Cluster, runtime: NodeRuntime) -> None:
        """A stopped instance runs again: kubelet and the etcd member restart from their data (no re-bootstrap)."""
        previous = getattr(runtime, "previous_state", "")
        runtime.state = previous or "joined"
        if runtime.registered:
            runtime.kubelet_alive = True
        member = runtime.member
        if member is not None and runtime.etcd_started and not member.running and member.data_dir.exists():
            root = runtime.root
            assert root is not None
            pki_dir = root / "etc/kubernetes/pki/etcd"
            member.start(
                etcd.TLSFiles(pki_dir / "ca.crt", pki_dir / "server.crt", pki_dir / "server.key"),
                f"{member.name}={member.peer_url}",
                "existing",
                cluster.token,
            )
        self.journal.record("node", "powered-on", cluster=cluster.name, instance=runtime.instance_id, node=runtime.name)

    def sleep_scaled(self, seconds: float, runtime: NodeRuntime) -> bool:
        """Sleep; False when the instance went away meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if runtime.instance_gone or runtime.state == "off" or self._stop.is_set():
                return False
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        return not (runtime.instance_gone or runtime.state == "off")

    # ---- node callbacks --------------------------------------------------------------------------------------
    def find_runtime(self, instance_id: str) -> tuple[Cluster, NodeRuntime] | None:
        with self.lock:
            clusters = list(self.clusters.values())
        for cluster in clusters:
            with cluster.lock:
                if instance_id in cluster.nodes:
                    return cluster, cluster.nodes[instance_id]
        return None

    def run_kubeadm(self, instance_id: str, args: list[str]) -> tuple[int, str]:
        found = self.find_runtime(instance_id)
        if found is None:
            return 1, "kubesim: unknown instance\n"
        cluster, runtime = found
        return Kubeadm(self, cluster, runtime).run(args)

    def run_ctr(self, instance_id: str, args: list[str]) -> tuple[int, str]:
        found = self.find_runtime(instance_id)
        if found is None:
            return 1, "kubesim: unknown instance\n"
        from .ctr import run_ctr

        return run_ctr(self, found[0], found[1], args)

    def run_nodeadm(self, instance_id: str, args: list[str]) -> tuple[int, str]:
        if self.eks is None:
            return 1, "kubesim: EKS simulation is not enabled\n"
        return self.eks.run_nodeadm(instance_id, args)

    def nodeadm_config(self, boot: NodeBoot, text: str) -> None:
        if self.eks is not None:
            self.eks.nodeadm_part(boot, text)

    # ---- state ----------------------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        with self.lock:
            clusters = list(self.clusters.values())
            knobs = list(self.knobs)
            config = copy.deepcopy(self.config)
        return {
            "clusters": {c.name: c.summary() for c in clusters},
            "knobs": knobs,
            "config": config,
            "proxy": self.proxy_url,
            "watch_errors": self.watch_errors[-10:],
            "eks_errors": self.eks.errors[-10:] if self.eks is not None else [],
        }
