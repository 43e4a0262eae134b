"""kubeadm on a simulated node: ``kubeadm init`` and ``kubeadm join [--control-plane]`` acting on the documents
cloud-init wrote (``--config /run/kubeadm/kubeadm.yaml`` inside the node's sandbox), in kubeadm's phase order.

``init``: certificates from the CAs in ``/etc/kubernetes/pki`` (generated when absent, as kubeadm does), a real
1-member etcd, the API server, the bootstrap objects kubeadm uploads (bootstrap token Secrets, ``kubeadm-config``,
``kube-public/cluster-info`` - signed for each token by the bootstrap signer -, RBAC), the Node, the static pods'
mirror pods and the addons (kube-proxy DaemonSet, CoreDNS Deployment).

``join``: token discovery over HTTPS exactly as kubeadm does it (anonymous GET of ``cluster-info``, the JWS
signature for the token id, the CA public key pinned by ``caCertHashes``), TLS bootstrap (a CSR created with the
bootstrap token: the API server authenticates it), then for control planes ``check-etcd`` (every member answers
``status`` or the join fails), kubelet-start (the Node registers), etcd learner add with retries, start with
``--initial-cluster-state existing``, promote with retries, mark-control-plane. Kubernetes < 1.29 (or
``EtcdLearnerMode: false``) adds a voting member instead, as kubeadm did then.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from . import etcd, pki
from .controllers import CONTROL_PLANE_TAINT, UNINITIALIZED, set_condition
from .node import in_root
from .store import ApiError, now_iso

if TYPE_CHECKING:
    from .cluster import Cluster, NodeRuntime
    from .sim import Simulator

ETCD_HEALTHY = 120  # seconds a new member gets to serve writes (kubeadm: 4 minutes for the control plane)
KUBEADM = "kubeadm"
DEFAULT_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"


class KubeadmError(Exception):
    pass


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jws_detached(payload: str, token_id: str, token_secret: str) -> str:
    """The bootstrap signer's detached JWS (HS256, kid = token id) over the cluster-info kubeconfig."""
    header = _b64url(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    body = _b64url(payload.encode())
    signature = hmac.new(token_secret.encode(), f"{header}.{body}".encode(), hashlib.sha256).digest()
    return f"{header}..{_b64url(signature)}"


def verify_jws(signature: str, payload: str, token_id: str, token_secret: str) -> bool:
    return hmac.compare_digest(signature, jws_detached(payload, token_id, token_secret))


# The etcd image kubeadm uses per minor (cmd/kubeadm/app/constants: SupportedEtcdVersion), for
# ``kubeadm config images list``; a minor not listed gets the newest.
ETCD_IMAGES = {(1, 29): "3.5.16-0", (1, 30): "3.5.15-0", (1, 31): "3.5.15-0", (1, 32): "3.5.16-0", (1, 33): "3.5.21-0"}


def images(version: str) -> list[str]:
    """What ``kubeadm config images list --kubernetes-version`` prints for ``version``."""
    minor = version_tuple(version)
    etcd_tag = ETCD_IMAGES.get(minor, ETCD_IMAGES[max(ETCD_IMAGES)])
    v = version if version.startswith("v") else f"v{version}"
    names = [f"registry.k8s.io/{c}:{v}" for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")]
    return [
        *names,
        f"registry.k8s.io/kube-proxy:{v}",
        "registry.k8s.io/coredns/coredns:v1.11.3",
        "registry.k8s.io/pause:3.10",
        f"registry.k8s.io/etcd:{etcd_tag}",
    ]


def _flag(args: list[str], name: str) -> str | None:
    """``--name value`` or ``--name=value``."""
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def parse_duration(text: str | None) -> float | None:
    """Go durations as kubeadm writes ttl (``24h0m0s``, ``0s``); ``None`` = never expires."""
    if text is None:
        return 24 * 3600.0
    total = 0.0
    for value, unit in re.findall(r"([\d.]+)(h|ms|m|s)", str(text)):
        total += float(value) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[unit]
    return None if total == 0 else total


def extra_args(value: Any) -> dict[str, str]:
    """kubeadm extraArgs: a map (v1beta3) or a list of {name, value} (v1beta4)."""
    if isinstance(value, list):
        return {str(i.get("name")): str(i.get("value")) for i in value if isinstance(i, dict)}
    return {str(k): str(v) for k, v in (value or {}).items()}


def version_tuple(version: str) -> tuple[int, int]:
    match = re.match(r"v?(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else (1, 31)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Kubeadm:
    def __init__(self, sim: Simulator, cluster: Cluster, runtime: NodeRuntime) -> None:
        self.sim = sim
        self.cluster = cluster
        self.runtime = runtime
        assert runtime.root is not None
        self.root: Path = runtime.root
        self.lines: list[str] = []
        self.ignored: set[str] = set()  # --ignore-preflight-errors

    def log(self, text: str) -> None:
        self.lines.append(text)

    def record(self, event: str, **fields: Any) -> None:
        self.sim.journal.record(
            "node",
            event,
            cluster=self.cluster.name,
            instance=self.runtime.instance_id,
            node=self.runtime.name,
            machine=self.runtime.machine,
            **fields,
        )

    def run(self, args: list[str]) -> tuple[int, str]:
        command = args[0] if args else ""
        if args[:3] == ["config", "images", "list"]:
            return 0, "\n".join(images(_flag(args, "--kubernetes-version") or "v1.31.0")) + "\n"
        self.ignored = set()
        for flag in ("--ignore-preflight-errors",):
            value = _flag(args, flag)
            if value:
                self.ignored |= {v.strip() for v in value.split(",")}
        config_path = None
        if "--config" in args:
            config_path = args[args.index("--config") + 1]
        for a in args:
            if a.startswith("--config="):
                config_path = a.split("=", 1)[1]
        self.record("kubeadm", args=args)
        try:
            if config_path is None:
                raise KubeadmError("kubesim simulates kubeadm only with --config")
            docs = [d for d in yaml.safe_load_all(Path(config_path).read_text()) if isinstance(d, dict)]
            kinds = {d.get("kind"): d for d in docs}
            if command == "init":
                self.init(kinds.get("InitConfiguration") or {}, kinds.get("ClusterConfiguration") or {})
            elif command == "join":
                join = kinds.get("JoinConfiguration")
                if join is None:
                    raise KubeadmError("no JoinConfiguration in the config file")
                self.join(join)
            else:
                raise KubeadmError(f"kubesim does not simulate 'kubeadm {command}'")
        except (KubeadmError, OSError, yaml.YAMLError) as exc:
            reason = str(exc)
            if self.runtime.state not in ("rejected",):
                self.runtime.state = "failed"
                self.runtime.reason = reason
                self.record("failed", reason=reason, phase=command)
            self.log(f"error execution phase: {reason}")
            return 1, "\n".join(self.lines) + "\n"
        return 0, "\n".join(self.lines) + "\n"

    def reject(self, reason: str) -> KubeadmError:
        self.runtime.state = "rejected"
        self.runtime.reason = reason
        self.record("rejected", reason=reason)
        return KubeadmError(reason)

    # ---- helpers ------------------------------------------------------------------------------------------
    def pki_dir(self) -> Path:
        return in_root(self.root, "/etc/kubernetes/pki")

    def load_ca(self, stem: str, common_name: str) -> pki.CA:
        cert, key = self.pki_dir() / f"{stem}.crt", self.pki_dir() / f"{stem}.key"
        if cert.is_file() and key.is_file():
            return pki.CA.load(cert, key)
        if cert.is_file():
            raise KubeadmError(f"{stem}.crt exists but {stem}.key is missing (external CA mode is not simulated)")
        ca = pki.CA.generate(common_name)
        pki.write_pair(cert.parent, cert.stem, ca.cert_pem, ca.key_pem)
        self.log(f'[certs] Generating "{common_name}" certificate and key')
        return ca

    def etcd_server_files(self, etcd_ca: pki.CA) -> etcd.TLSFiles:
        r = self.runtime
        cert, key = etcd_ca.sign(
            r.name, server=True, client=True, dns_names=[r.name, "localhost"], ips=["127.0.0.1", r.private_ip]
        )
        cert_file, key_file = pki.write_pair(self.pki_dir() / "etcd", "server", cert, key)
        return etcd.TLSFiles(self.pki_dir() / "etcd" / "ca.crt", cert_file, key_file)

    def node_gateway(self, etcd_ca: pki.CA) -> etcd.Gateway:
        """The etcd client this node's kubeadm uses (healthcheck-client cert from the node's own etcd CA)."""
        cert, key = etcd_ca.sign("kube-etcd-healthcheck-client", client=True)
        cert_file, key_file = pki.write_pair(self.pki_dir() / "etcd", "healthcheck-client", cert, key)
        return etcd.Gateway(etcd.TLSFiles(self.pki_dir() / "etcd" / "ca.crt", cert_file, key_file))

    def registration(self, config: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]] | None, bool]:
        reg = config.get("nodeRegistration") or {}
        args = extra_args(reg.get("kubeletExtraArgs"))
        labels = {}
        for item in (args.get("node-labels") or "").split(","):
            if "=" in item:
                k, v = item.split("=", 1)
                labels[k] = v
        taints = reg.get("taints")
        if taints is not None:
            taints = list(taints)
        for item in (args.get("register-with-taints") or "").split(","):
            if item:
                kv, _colon, effect = item.partition(":")
                key, _equals, value = kv.partition("=")
                taints = (taints or []) + [{"key": key, "value": value, "effect": effect}]
        return labels, taints, args.get("cloud-provider") == "external"

    def check_name(self, config: dict[str, Any]) -> None:
        name = (config.get("nodeRegistration") or {}).get("name")
        if name and name != self.runtime.name:
            self.runtime.name = str(name)

    # ---- init ---------------------------------------------------------------------------------------------
    def init(self, init: dict[str, Any], cc: dict[str, Any]) -> None:
        cluster, r = self.cluster, self.runtime
        self.check_name(init)
        local = (cc.get("etcd") or {}).get("local") or {}
        data_dir = in_root(self.root, str(local.get("dataDir") or "/var/lib/etcd"))
        restored = (data_dir / "member").is_dir()
        if restored and not self.ignored & {"DirAvailable--var-lib-etcd", "all"}:
            raise KubeadmError(
                "[preflight] Some fatal errors occurred: [ERROR DirAvailable--var-lib-etcd]: /var/lib/etcd is not empty"
            )
        with cluster.init_lock:
            # A restore (etcd's data directory filled from a snapshot) is kubeadm init on a cluster whose control
            # plane is gone: the same endpoint and CAs, a new first member with the old data.
            if (cluster.initialized.is_set() or cluster.api.listening) and (
                not restored or cluster.apiserver_available()
            ):
                raise KubeadmError(
                    "kubeadm init on a second machine: a real node would start a separate one-node cluster "
                    "(not simulated)"
                )
            r.role = "init"
            version = str(cc.get("kubernetesVersion") or "v1.31.0")
            endpoint = str(cc.get("controlPlaneEndpoint") or f"{r.private_ip}:6443")
            if ":" not in endpoint.rsplit("]", 1)[-1]:
                endpoint += ":6443"
            ca = self.load_ca("ca", "kubernetes")
            etcd_ca = self.load_ca("etcd/ca", "etcd-ca")
            self.load_ca("front-proxy-ca", "front-proxy-ca")
            cluster.cluster_ca = ca
            cluster.kubeadm_config = {"ClusterConfiguration": cc, "version": version, "endpoint": endpoint}
            if not self.sim.sleep_scaled(cluster.delay("kubeadm_init"), r):
                raise KubeadmError("the instance went away during kubeadm init")
            knobs = self.sim.knobs_for(r)
            cluster.setup_etcd_client(etcd_ca)
            if restored:
                # The member the restore made (ctr etcdutl snapshot restore): its peer URL is in the restored data.
                member = r.member
                if member is None or member.data_dir != data_dir:
                    raise KubeadmError(f"{data_dir} was not restored through etcdutl on this node (kubesim)")
            else:
                member = etcd.Member(name=r.name, data_dir=cluster.state_dir / "etcd" / r.instance_id)
                r.member = member
            if knobs.get("etcd_never_starts"):
                raise KubeadmError(
                    "[wait-control-plane] etcd never started (knob etcd_never_starts): timed out "
                    "waiting for the condition"
                )
            member.start(self.etcd_server_files(etcd_ca), f"{r.name}={member.peer_url}", "new", cluster.token)
            gateway = cluster.gateway
            assert gateway is not None
            # kubeadm waits up to 4 minutes for the control plane; a loaded test machine can need more than 30 s.
            if not etcd.wait_until(lambda: _writes(gateway, member.client_url), timeout=ETCD_HEALTHY, interval=0.1):
                raise KubeadmError(f"[etcd] the etcd member did not become healthy within {ETCD_HEALTHY}s")
            r.etcd_started = True
            self.record(
                "etcd-started",
                member=r.name,
                client_url=member.client_url,
                peer_url=member.peer_url,
                pid=member.process.pid if member.process else None,
                restored=restored,
            )
            host = endpoint.rsplit(":", 1)[0].strip("[]")
            sans = [host, r.name, r.private_ip, *[str(s) for s in (cc.get("apiServer") or {}).get("certSANs") or []]]
            r.kubelet_alive = True
            if not cluster.api.listening:
                future = asyncio.run_coroutine_threadsafe(cluster.start_api(ca, sans, version), self.sim.loop)
                future.result(timeout=30)
            cluster.endpoint_aliases.add(endpoint)
            self.record("apiserver-up", url=cluster.url, endpoint=endpoint)
            self.upload(init, cc, ca, endpoint, version)
            labels, taints, external = self.registration(init)
            self.register_node(labels, taints, external, self.kubelet_version(version), control_plane=True)
            self.static_pods(version, etcd=True)
            self.mark_control_plane(taints)
            self.addons(version, cc)
            cluster.start_monitor()
            cluster.initialized.set()
            r.state = "joined"
            self.record("initialized", version=version)
            self.log("Your Kubernetes control-plane has initialized successfully!")

    def upload(self, init: dict[str, Any], cc: dict[str, Any], ca: pki.CA, endpoint: str, version: str) -> None:
        c = self.cluster
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            c.ensure("namespaces", {"metadata": {"name": ns}}, "kube-apiserver")
        for _kind, plural, objs in rbac_bootstrap():
            for obj in objs:
                c.ensure(plural, obj, "kube-apiserver", "rbac.authorization.k8s.io")
        c.ensure(
            "services",
            {
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "clusterIP": "10.96.0.1",
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                },
            },
            "kube-apiserver",
        )
        full_cc = dict(cc)
        full_cc.setdefault("kubernetesVersion", version)
        full_cc["controlPlaneEndpoint"] = endpoint
        c.ensure(
            "configmaps",
            {
                "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
                "data": {"ClusterConfiguration": yaml.safe_dump(full_cc, sort_keys=True)},
            },
            KUBEADM,
        )
        c.ensure(
            "configmaps",
            {
                "metadata": {"name": "kubelet-config", "namespace": "kube-system"},
                "data": {
                    "kubelet": yaml.safe_dump(
                        {
                            "apiVersion": "kubelet.config.k8s.io/v1beta1",
                            "kind": "KubeletConfiguration",
                            "cgroupDriver": "systemd",
                        }
                    )
                },
            },
            KUBEADM,
        )
        tokens = init.get("bootstrapTokens")
        if not tokens:
            import secrets as pysecrets
            import string

            alphabet = string.ascii_lowercase + string.digits
            token = (
                "".join(pysecrets.choice(alphabet) for _i in range(6))
                + "."
                + "".join(pysecrets.choice(alphabet) for _i in range(16))
            )
            tokens = [{"token": token, "ttl": "24h0m0s"}]
        for spec in tokens:
            create_token_secret(c, spec)
        kubeconfig = yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "",
                        "cluster": {"certificate-authority-data": b64(ca.cert_pem), "server": f"https://{endpoint}"},
                    }
                ],
                "contexts": [],
                "current-context": "",
                "preferences": {},
                "users": [],
            },
            sort_keys=False,
        )
        c.ensure(
            "configmaps",
            {"metadata": {"name": "cluster-info", "namespace": "kube-public"}, "data": {"kubeconfig": kubeconfig}},
            KUBEADM,
        )
        sign_cluster_info(c)

    def cluster_version(self) -> str:
        """``kubernetesVersion`` of the ClusterConfiguration in kube-system/kubeadm-config, as kubeadm join reads it."""
        cluster = self.cluster
        configmaps = cluster.api.table.find("", "v1", "configmaps")
        found = None
        if configmaps is not None:
            with cluster.api.store.lock:
                found = cluster.api.store.peek(configmaps, "kube-system", "kubeadm-config")
        text = ((found or {}).get("data") or {}).get("ClusterConfiguration") or ""
        named = (yaml.safe_load(text) or {}).get("kubernetesVersion") if text else None
        return str(named or cluster.kubeadm_config.get("version") or cluster.api.version)

    def kubelet_version(self, fallback: str) -> str:
        """The kubelet of the machine's image: the version in the AMI's name, else ``fallback``."""
        r = self.runtime
        if not r.image_id:
            return fallback
        try:
            images = self.sim.client("ec2", r.region).describe_images(ImageIds=[r.image_id])["Images"]
        except Exception:  # noqa: BLE001 - an image moto does not know: the cluster's version
            return fallback
        match = re.search(r"-v?(1\.\d+\.\d+)(?:-|$)", images[0].get("Name", "")) if images else None
        return f"v{match.group(1)}" if match else fallback

    def register_node(
        self,
        labels: dict[str, str],
        taints: list[dict[str, Any]] | None,
        external: bool,
        version: str,
        control_plane: bool,
    ) -> None:
        """kubelet-start: the kubelet registers its Node (cloud-provider external: uninitialized, no providerID)."""
        c, r = self.cluster, self.runtime
        knobs = self.sim.knobs_for(r)
        if knobs.get("register_delay"):
            if not self.sim.sleep_scaled(float(knobs["register_delay"]) * c.scale, r):
                raise KubeadmError("the instance went away before the kubelet registered")
        spec_taints = list(taints or []) if taints is not None else []
        if taints is None and control_plane:
            spec_taints = []  # mark-control-plane adds the control-plane taint later
        if external:
            spec_taints.insert(0, {"key": UNINITIALIZED, "value": "true", "effect": "NoSchedule"})
        node_labels = {
            "kubernetes.io/hostname": r.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            **labels,
        }
        cidr = c.config.get("pod_cidr_base", "192.168")
        with c.lock:
            index = sum(1 for n in c.nodes.values() if n.registered) + 1
        r.pod_cidr = f"{cidr}.{index}.0/24"
        cpu, memory = instance_capacity(r.instance_type)
        node = {
            "metadata": {
                "name": r.name,
                "labels": node_labels,
                "annotations": {
                    "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///var/run/containerd/containerd.sock",
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": {"podCIDR": r.pod_cidr, "podCIDRs": [r.pod_cidr]},
            "status": {
                "addresses": [{"type": "InternalIP", "address": r.private_ip}, {"type": "Hostname", "address": r.name}],
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "20134592Ki"},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "18556039957"},
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "kubeletVersion": version,
                    "kubeProxyVersion": version,
                    "containerRuntimeVersion": "containerd://1.7.22",
                    "osImage": "Ubuntu 24.04.1 LTS",
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "kernelVersion": "6.8.0-1015-aws",
                    "machineID": hashlib.md5(r.instance_id.encode()).hexdigest(),  # noqa: S324 - an id, not security
                    "systemUUID": "ec2" + hashlib.md5(r.instance_id.encode()).hexdigest()[3:],  # noqa: S324
                    "bootID": hashlib.md5(f"{r.instance_id}{time.time()}".encode()).hexdigest(),  # noqa: S324
                },
            },
        }
        if spec_taints:
            node["spec"]["taints"] = spec_taints
        set_condition(
            node,
            "Ready",
            "False",
            "KubeletNotReady",
            "container runtime network not ready: "
            "NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni "
            "plugin not initialized",
        )
        for kind, reason in (
            ("MemoryPressure", "KubeletHasSufficientMemory"),
            ("DiskPressure", "KubeletHasNoDiskPressure"),
            ("PIDPressure", "KubeletHasSufficientPID"),
        ):
            set_condition(node, kind, "False", reason, "kubelet has sufficient resources")
        for cond in node["status"]["conditions"]:
            cond["lastHeartbeatTime"] = now_iso()
        res = c.api.table.find("", "v1", "nodes")
        assert res is not None
        try:
            c.api.store.create(res, "", node, f"kubelet-{r.name}")
        except ApiError as exc:
            if exc.code != 409:
                raise KubeadmError(f"[kubelet-start] registering the Node failed: {exc.message}") from None
            # A node of that name exists (an instance reusing the name): the kubelet takes it over.
            c.api.store.mutate(res, "", r.name, lambda n: n.update(status=node["status"]), f"kubelet-{r.name}")
        r.kubelet_alive = True
        r.registered = True
        r.state = "registered"
        lease = c.api.table.find("coordination.k8s.io", "v1", "leases")
        assert lease is not None
        try:
            c.api.store.ensure(
                lease,
                {
                    "metadata": {"name": r.name, "namespace": "kube-node-lease"},
                    "spec": {"holderIdentity": r.name, "leaseDurationSeconds": 40},
                },
                f"kubelet-{r.name}",
            )
        except ApiError:
            pass
        self.record("registered", kubelet_version=version, taints=[t["key"] for t in spec_taints])

    def static_pods(self, version: str, etcd: bool) -> None:
        components = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] + (["etcd"] if etcd else [])
        for component in components:
            self.mirror_pod(component, version)

    def mirror_pod(self, component: str, version: str) -> None:
        c, r = self.cluster, self.runtime
        image = {
            "etcd": "registry.k8s.io/etcd:3.5.15-0",
        }.get(component, f"registry.k8s.io/{component}:{version}")
        annotations = {
            "kubernetes.io/config.mirror": hashlib.sha256(f"{component}{r.name}".encode()).hexdigest()[:32],
            "kubernetes.io/config.hash": hashlib.sha256(f"{component}{r.name}".encode()).hexdigest()[:32],
            "kubernetes.io/config.source": "file",
            "kubernetes.io/config.seen": now_iso(),
        }
        if component == "etcd":
            annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"] = f"https://{r.private_ip}:2379"
        if component == "kube-apiserver":
            annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = f"{r.private_ip}:6443"
        nodes = c.api.table.find("", "v1", "nodes")
        assert nodes is not None
        node = c.api.store.get(nodes, "", r.name)
        pod = {
            "metadata": {
                "name": f"{component}-{r.name}",
                "namespace": "kube-system",
                "labels": {"component": component, "tier": "control-plane"},
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": r.name,
                        "uid": node["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "nodeName": r.name,
                "hostNetwork": True,
                "priorityClassName": "system-node-critical",
                "priority": 2000001000,
                "tolerations": [{"effect": "NoExecute", "operator": "Exists"}],
                "containers": [{"name": component, "image": image, "command": [component]}],
            },
        }
        pods = c.api.table.find("", "v1", "pods")
        assert pods is not None
        try:
            c.api.store.create(pods, "kube-system", pod, f"kubelet-{r.name}")
        except ApiError as exc:
            if exc.code != 409:
                raise

    def mark_control_plane(self, taints: list[dict[str, Any]] | None) -> None:
        c, r = self.cluster, self.runtime
        nodes = c.api.table.find("", "v1", "nodes")
        assert nodes is not None

        def mark(n: dict[str, Any]) -> None:
            labels = n["metadata"].setdefault("labels", {})
            labels["node-role.kubernetes.io/control-plane"] = ""
            labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
            if taints is None:
                current = n["spec"].get("taints") or []
                if not any(t.get("key") == CONTROL_PLANE_TAINT for t in current):
                    n["spec"]["taints"] = current + [{"key": CONTROL_PLANE_TAINT, "effect": "NoSchedule"}]

        c.api.store.mutate(nodes, "", r.name, mark, KUBEADM)
        self.record("marked-control-plane")

    def addons(self, version: str, cc: dict[str, Any]) -> None:
        install_addons(self.cluster, version)

    # ---- join ---------------------------------------------------------------------------------------------
    def join(self, join: dict[str, Any]) -> None:
        cluster, r = self.cluster, self.runtime
        self.check_name(join)
        control_plane = "controlPlane" in join and join.get("controlPlane") is not None
        r.role = "control-plane" if control_plane else "worker"
        discovery = (join.get("discovery") or {}).get("bootstrapToken")
        if not discovery:
            raise self.reject("only bootstrap token discovery is simulated (discovery.bootstrapToken missing)")
        endpoint = str(discovery.get("apiServerEndpoint") or "")
        token = str(discovery.get("token") or (join.get("discovery") or {}).get("tlsBootstrapToken") or "")
        hashes = [str(h) for h in discovery.get("caCertHashes") or []]
        unsafe = bool(discovery.get("unsafeSkipCAVerification"))
        if not self.sim.sleep_scaled(cluster.delay("kubeadm_join"), r):
            raise KubeadmError("the instance went away during kubeadm join")
        ca_pem = self.discover(endpoint, token, hashes, unsafe)
        target = self.sim.resolve_endpoint(endpoint)
        if target is None or target is not cluster:
            raise self.reject(f"the API server at {endpoint} is not the API server of cluster {cluster.name}")
        self.tls_bootstrap(endpoint, token, ca_pem)
        # As kubeadm join: the control-plane components are those of the version the cluster's ClusterConfiguration
        # (kubeadm-config) names; the kubelet is the one baked into the machine's image.
        version = self.cluster_version()
        kubelet = self.kubelet_version(version)
        labels, taints, external = self.registration(join)
        if control_plane:
            etcd_ca = self.load_ca("etcd/ca", "etcd-ca")
            self.load_ca("ca", "kubernetes")
            gateway = self.node_gateway(etcd_ca)
            self.check_etcd(gateway)
            self.register_node(labels, taints, external, kubelet, control_plane=True)
            self.static_pods(version, etcd=False)
            self.join_etcd(gateway, etcd_ca, version, cluster.kubeadm_config.get("ClusterConfiguration") or {})
            self.mirror_pod("etcd", version)
            self.mark_control_plane(taints)
        else:
            self.register_node(labels, taints, external, kubelet, control_plane=False)
        r.state = "joined"
        self.record("joined", control_plane=control_plane)
        self.log("This node has joined the cluster")

    def _get(self, url: str, ctx: ssl.SSLContext, token: str | None = None, timeout: float = 10) -> Any:
        headers = {"Accept": "application/json", "User-Agent": "kubeadm/v1.31.0 (linux/amd64) kubernetes"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, context=ctx, timeout=timeout) as response:
            return json.loads(response.read())

    def connect_url(self, endpoint: str) -> str:
        target = self.sim.resolve_endpoint(endpoint)
        if target is None:
            raise ConnectionRefusedError(f"dial tcp {endpoint}: connect: connection refused")
        return target.url

    def discover(self, endpoint: str, token: str, hashes: list[str], unsafe: bool) -> str:
        """kubeadm's token discovery: cluster-info, JWS signature of the token id, CA public key pin."""
        match = re.match(r"^([a-z0-9]{6})\.([a-z0-9]{16})$", token)
        if not match:
            raise self.reject(
                f"the bootstrap token {token[:6]!r}... does not have the form [a-z0-9]{{6}}.[a-z0-9]{{16}}"
            )
        token_id, secret = match.groups()
        deadline = time.monotonic() + self.cluster.delay("discovery_timeout")
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        last = ""
        while True:
            try:
                url = self.connect_url(endpoint)
                info = self._get(f"{url}/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s", insecure)
                data = info.get("data") or {}
                kubeconfig = data.get("kubeconfig", "")
                signature = data.get(f"jws-kubeconfig-{token_id}")
                if signature is None:
                    last = (
                        f'could not find a JWS signature in the cluster-info ConfigMap for token ID "{token_id}" '
                        "(the token is not a bootstrap token of this cluster, or it expired)"
                    )
                elif not verify_jws(signature, kubeconfig, token_id, secret):
                    raise self.reject(
                        "couldn't validate the identity of the API Server: failed to verify JWS signature of "
                        "received cluster info object, can't trust this API server"
                    )
                else:
                    config = yaml.safe_load(kubeconfig)
                    ca_pem = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
                    pin = pki.spki_sha256(ca_pem)
                    if not unsafe and pin not in hashes:
                        raise self.reject(
                            f"couldn't validate the identity of the API Server: cluster CA found in cluster-info "
                            f'ConfigMap is invalid: none of the public keys "{pin}" are pinned'
                        )
                    self.log(f'[discovery] Cluster info signature and contents are valid, API Server "{endpoint}"')
                    return ca_pem
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = f'Get "https://{endpoint}/api/v1/namespaces/kube-public/configmaps/cluster-info": {exc}'
            if time.monotonic() >= deadline:
                raise self.reject(f"couldn't validate the identity of the API Server: {last}")
            self.runtime_check()
            time.sleep(min(1.0, max(0.05, self.cluster.delay("discovery_timeout") / 50)))

    def runtime_check(self) -> None:
        if self.runtime.instance_gone or self.runtime.state == "off":
            raise KubeadmError("the instance went away during kubeadm join")

    def tls_bootstrap(self, endpoint: str, token: str, ca_pem: str) -> None:
        """The kubelet's TLS bootstrap: a CSR created with the bootstrap token (the API server authenticates it)."""
        ca_file = self.root / "etc/kubernetes/pki/discovered-ca.crt"
        ca_file.parent.mkdir(parents=True, exist_ok=True)
        ca_file.write_text(ca_pem)
        ctx = ssl.create_default_context(cafile=str(ca_file))
        ctx.check_hostname = False  # the endpoint host is reached through the simulator's local port
        url = self.connect_url(endpoint)
        csr = {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"generateName": "node-csr-"},
            "spec": {
                "request": b64(f"kubesim CSR for system:node:{self.runtime.name}"),
                "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "usages": ["digital signature", "client auth"],
            },
        }
        request = urllib.request.Request(
            f"{url}/apis/certificates.k8s.io/v1/certificatesigningrequests",
            data=json.dumps(csr).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
                "User-Agent": "kubelet/v1.31.0 (linux/amd64) kubernetes",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, context=ctx, timeout=10) as response:
                created = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            raise self.reject(f"[kubelet-start] the TLS bootstrap was refused: HTTP {exc.code} {body[:300]}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise KubeadmError(f"[kubelet-start] the TLS bootstrap failed: {exc}") from None
        self.record("tls-bootstrap", csr=created["metadata"]["name"])

    def check_etcd(self, gateway: etcd.Gateway) -> None:
        """Phase check-etcd: every existing member must answer ``status``."""
        deadline = time.monotonic() + float(self.cluster.config["etcd_api_timeout"])
        last = ""
        while True:
            self.runtime_check()
            try:
                endpoints = self.cluster.live_endpoints()
                if not endpoints:
                    raise etcd.EtcdError("no etcd endpoint reachable")
                members = gateway.member_list(endpoints[0], timeout=2.0)
                failures = []
                for m in members:
                    urls = m.get("clientURLs") or []
                    if not urls:
                        continue  # a member that never started has no client URL yet
                    try:
                        gateway.status(urls[0], timeout=2.0)
                    except etcd.EtcdError as exc:
                        failures.append(f"failed to dial endpoint {urls[0]} ({m.get('name')}): {exc}")
                if not failures:
                    self.log("[check-etcd] Checking that the etcd cluster is healthy")
                    return
                last = "; ".join(failures)
            except etcd.EtcdError as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise KubeadmError(f"[check-etcd] etcd cluster is not healthy: {last}")
            time.sleep(0.5)

    def join_etcd(self, gateway: etcd.Gateway, etcd_ca: pki.CA, version: str, cc: dict[str, Any]) -> None:
        c, r = self.cluster, self.runtime
        knobs = self.sim.knobs_for(r)
        gates = {**(cc.get("featureGates") or {})}
        learner = version_tuple(version) >= (1, 29) and gates.get("EtcdLearnerMode", True) is not False
        if version_tuple(version) >= (1, 32):
            learner = True  # GA and locked
        if knobs.get("etcd_learner") is not None:
            learner = bool(knobs["etcd_learner"])
        member = etcd.Member(name=r.name, data_dir=c.state_dir / "etcd" / r.instance_id)
        r.member = member
        timeout = float(c.config["etcd_api_timeout"])
        deadline = time.monotonic() + timeout
        added = None
        last = ""
        attempts = 0
        while added is None:
            self.runtime_check()
            attempts += 1
            for endpoint in c.live_endpoints():
                try:
                    added = gateway.member_add(endpoint, member.peer_url, learner, timeout=5.0)
                    break
                except etcd.EtcdError as exc:
                    last = str(exc)
                    if "connection refused" not in last:
                        break
            if added is not None:
                break
            if time.monotonic() >= deadline:
                raise KubeadmError(f"[etcd] could not add etcd member {r.name} after {attempts} attempts: {last}")
            time.sleep(0.5)
        member_id = added["member"]["ID"]
        self.record("etcd-member-added", member=r.name, id=member_id, learner=learner, attempts=attempts)
        initial = []
        for m in added.get("members") or []:
            peer = (m.get("peerURLs") or [""])[0]
            if peer == member.peer_url:
                initial.append(f"{r.name}={peer}")
                continue
            name = m.get("name") or format(int(m["ID"]), "x")
            initial.append(f"{name}={peer}")
        if knobs.get("etcd_never_starts"):
            self.record("etcd-never-starts", member=r.name, reason="knob etcd_never_starts")
        else:
            member.start(self.etcd_server_files(etcd_ca), ",".join(initial), "existing", c.token)
            self.record(
                "etcd-started",
                member=r.name,
                client_url=member.client_url,
                pid=member.process.pid if member.process else None,
            )
        if learner and knobs.get("etcd_never_promoted"):
            # A learner that never catches up (a slow disk, a partition): kubeadm gives up, the learner stays.
            self.record("etcd-never-promoted", member=r.name, reason="knob etcd_never_promoted")
            raise KubeadmError(f"[etcd] could not promote etcd learner {r.name} (knob etcd_never_promoted)")
        if learner:
            last = ""
            attempts = 0
            while True:
                self.runtime_check()
                attempts += 1
                try:
                    endpoints = [e for e in c.live_endpoints() if e != member.client_url] or c.live_endpoints()
                    gateway.member_promote(endpoints[0], member_id, timeout=5.0)
                    break
                except (etcd.EtcdError, IndexError) as exc:
                    last = str(exc)
                if time.monotonic() >= deadline + timeout:
                    raise KubeadmError(
                        f"[etcd] could not promote etcd learner {r.name} after {attempts} attempts: {last}"
                    )
                time.sleep(0.5)
            self.record("etcd-member-promoted", member=r.name, id=member_id, attempts=attempts)
        if knobs.get("etcd_never_starts"):
            raise KubeadmError(f"[etcd] the etcd member {r.name} never started (knob etcd_never_starts)")
        r.etcd_started = True


def install_addons(c: Cluster, version: str, manager: str = KUBEADM) -> None:
    """The addons kubeadm applies (EKS installs the same as default add-ons): kube-proxy and CoreDNS."""
    c.ensure("serviceaccounts", {"metadata": {"name": "kube-proxy", "namespace": "kube-system"}}, manager)
    c.ensure("serviceaccounts", {"metadata": {"name": "coredns", "namespace": "kube-system"}}, manager)
    c.ensure(
        "daemonsets",
        {
            "metadata": {"name": "kube-proxy", "namespace": "kube-system", "labels": {"k8s-app": "kube-proxy"}},
            "spec": {
                "selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                "template": {
                    "metadata": {"labels": {"k8s-app": "kube-proxy"}},
                    "spec": {
                        "hostNetwork": True,
                        "priorityClassName": "system-node-critical",
                        "serviceAccountName": "kube-proxy",
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "kube-proxy", "image": f"registry.k8s.io/kube-proxy:{version}"}],
                    },
                },
            },
        },
        manager,
        "apps",
    )
    c.ensure(
        "deployments",
        {
            "metadata": {"name": "coredns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"k8s-app": "kube-dns"}},
                "template": {
                    "metadata": {"labels": {"k8s-app": "kube-dns"}},
                    "spec": {
                        "priorityClassName": "system-cluster-critical",
                        "serviceAccountName": "coredns",
                        "tolerations": [
                            {"key": "CriticalAddonsOnly", "operator": "Exists"},
                            {"key": CONTROL_PLANE_TAINT, "effect": "NoSchedule"},
                        ],
                        "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.11.3"}],
                    },
                },
            },
        },
        manager,
        "apps",
    )
    c.ensure(
        "services",
        {
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {
                "clusterIP": "10.96.0.10",
                "selector": {"k8s-app": "kube-dns"},
                "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}],
            },
        },
        manager,
    )


def _writes(gateway: etcd.Gateway, endpoint: str) -> bool:
    try:
        gateway.put(endpoint, "/kubesim/ready", "1", timeout=1.0)
        return True
    except etcd.EtcdError:
        return False


def create_token_secret(cluster: Cluster, spec: dict[str, Any]) -> None:
    token = str(spec.get("token", ""))
    match = re.match(r"^([a-z0-9]{6})\.([a-z0-9]{16})$", token)
    if not match:
        return
    token_id, secret = match.groups()
    ttl = parse_duration(spec.get("ttl"))
    data = {
        "token-id": token_id,
        "token-secret": secret,
        "usage-bootstrap-authentication": "true"
        if "authentication" in (spec.get("usages") or ["authentication"])
        else "false",
        "usage-bootstrap-signing": "true" if "signing" in (spec.get("usages") or ["signing"]) else "false",
        "auth-extra-groups": ",".join(spec.get("groups") or [DEFAULT_TOKEN_GROUP]),
    }
    if spec.get("description"):
        data["description"] = str(spec["description"])
    if ttl is not None:
        import datetime

        when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=ttl)
        data["expiration"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.ensure(
        "secrets",
        {
            "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
            "type": "bootstrap.kubernetes.io/token",
            "data": {k: b64(v) for k, v in data.items()},
        },
        KUBEADM,
    )


def token_expired(data: dict[str, str]) -> bool:
    """A bootstrap token Secret's ``expiration`` (RFC 3339) has passed."""
    import datetime

    text = data.get("expiration")
    if not text:
        return False
    when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when < datetime.datetime.now(datetime.timezone.utc)


def clean_tokens(cluster: Cluster) -> None:
    """kube-controller-manager's token cleaner: expired bootstrap token Secrets are deleted."""
    store, table = cluster.api.store, cluster.api.table
    secrets = table.find("", "v1", "secrets")
    assert secrets is not None
    with store.lock:
        expired = [
            s["metadata"]["name"]
            for s in store.items(secrets, "kube-system")
            if s.get("type") == "bootstrap.kubernetes.io/token"
            and token_expired({k: base64.b64decode(v).decode() for k, v in (s.get("data") or {}).items()})
        ]
    for name in expired:
        try:
            store.remove(secrets, "kube-system", name)
        except ApiError:  # deleted meanwhile (by the collection, which deletes them too)
            pass


def sign_cluster_info(cluster: Cluster) -> None:
    """The bootstrap signer controller: one ``jws-kubeconfig-<id>`` per signing token, stale ones removed."""
    store, table = cluster.api.store, cluster.api.table
    secrets = table.find("", "v1", "secrets")
    cms = table.find("", "v1", "configmaps")
    assert secrets is not None and cms is not None
    signatures: dict[str, str] = {}
    with store.lock:
        info = store.peek(cms, "kube-public", "cluster-info")
        if info is None:
            return
        payload = (info.get("data") or {}).get("kubeconfig", "")
        for s in store.items(secrets, "kube-system"):
            if s.get("type") != "bootstrap.kubernetes.io/token":
                continue
            data = {k: base64.b64decode(v).decode() for k, v in (s.get("data") or {}).items()}
            if data.get("usage-bootstrap-signing") != "true" or token_expired(data):
                continue  # the signer signs with live tokens only: an expired one no longer discovers the CA
            signatures[f"jws-kubeconfig-{data['token-id']}"] = jws_detached(
                payload, data["token-id"], data["token-secret"]
            )

        def update(cm: dict[str, Any]) -> None:
            data = {k: v for k, v in (cm.get("data") or {}).items() if not k.startswith("jws-kubeconfig-")}
            data.update(signatures)
            cm["data"] = data

        store.mutate(cms, "kube-public", "cluster-info", update, "bootstrap-signer")


def instance_capacity(instance_type: str) -> tuple[str, str]:
    sizes = {
        "nano": (2, 0.5),
        "micro": (2, 1),
        "small": (2, 2),
        "medium": (2, 4),
        "large": (2, 8),
        "xlarge": (4, 16),
        "2xlarge": (8, 32),
        "4xlarge": (16, 64),
    }
    size = instance_type.split(".")[-1] if "." in instance_type else "large"
    cpu, gib = sizes.get(size, (2, 8))
    return str(cpu), f"{int(gib * 1024 * 1024)}Ki"


def rbac_bootstrap() -> list[tuple[str, str, list[dict[str, Any]]]]:
    """kube-apiserver's bootstrap RBAC policy (the parts clients meet) plus the bindings kubeadm creates."""

    def cr(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}, "rules": rules}

    def crb(name: str, role: str, subjects: list[tuple[str, str]]) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": k, "name": n} for k, n in subjects],
        }

    discovery_urls = [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ]
    roles = [
        cr(
            "cluster-admin",
            [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}],
        ),
        cr("system:discovery", [{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
        cr(
            "system:public-info-viewer",
            [{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}],
        ),
        cr(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
            ],
        ),
        cr(
            "system:node-bootstrapper",
            [
                {
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["certificatesigningrequests"],
                    "verbs": ["create", "get", "list", "watch"],
                }
            ],
        ),
        # Stand-in for the Node authorizer + system:node role: what a kubelet may do.
        cr(
            "system:node",
            [
                {
                    "apiGroups": [""],
                    "resources": [
                        "nodes",
                        "nodes/status",
                        "pods",
                        "pods/status",
                        "events",
                        "configmaps",
                        "secrets",
                        "services",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumes",
                    ],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                },
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
                {
                    "apiGroups": ["storage.k8s.io"],
                    "resources": ["volumeattachments", "csinodes", "csidrivers"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch"],
                },
                {
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["certificatesigningrequests"],
                    "verbs": ["create", "get", "list", "watch"],
                },
            ],
        ),
        cr("kubeadm:get-nodes", [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]),
    ]
    bindings = [
        crb("cluster-admin", "cluster-admin", [("Group", "system:masters")]),
        crb("system:discovery", "system:discovery", [("Group", "system:authenticated")]),
        crb("system:basic-user", "system:basic-user", [("Group", "system:authenticated")]),
        crb(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [("Group", "system:authenticated"), ("Group", "system:unauthenticated")],
        ),
        crb("system:node", "system:node", [("Group", "system:nodes")]),
        crb("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", [("Group", DEFAULT_TOKEN_GROUP)]),
        crb("kubeadm:get-nodes", "kubeadm:get-nodes", [("Group", DEFAULT_TOKEN_GROUP)]),
    ]
    role = {
        "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}
        ],
    }
    config_role = {
        "metadata": {"name": "kubeadm:nodes-kubeadm-config", "namespace": "kube-system"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": ["kubeadm-config", "kubelet-config"],
                "verbs": ["get"],
            }
        ],
    }
    role_bindings = [
        {
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "kubeadm:bootstrap-signer-clusterinfo",
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}],
        },
        {
            "metadata": {"name": "kubeadm:nodes-kubeadm-config", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "kubeadm:nodes-kubeadm-config",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": DEFAULT_TOKEN_GROUP},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"},
            ],
        },
    ]
    return [
        ("ClusterRole", "clusterroles", roles),
        ("ClusterRoleBinding", "clusterrolebindings", bindings),
        ("Role", "roles", [role, config_role]),
        ("RoleBinding", "rolebindings", role_bindings),
    ]
