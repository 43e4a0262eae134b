"""EKS clusters: the API server of an EKS cluster moto knows, its IAM authentication and its nodes.

* The API server starts once ``DescribeCluster`` says ``ACTIVE``, with a serving certificate signed by the cluster's
  own CA (moto fix 8 in tools/moto_server.py makes that CA real and hands its key to the harness through
  ``GET /_capa/eks/clusters``); SANs: the cluster endpoint's host. The endpoint (``<host>:443``) resolves to it.
* Bearer tokens ``k8s-aws-v1.<base64url presigned STS GetCallerIdentity URL>`` are authenticated as
  aws-iam-authenticator does: the URL must be a GetCallerIdentity on an STS host, signed with the
  ``x-k8s-aws-id`` header, not older than 15 minutes; the simulator sends it (path and query as signed) to the STS
  endpoint - moto - with ``x-k8s-aws-id: <cluster name>``, canonicalises the returned ARN (an assumed-role ARN
  becomes its role ARN) and maps it through ``kube-system/aws-auth`` (``mapRoles``, ``mapUsers``; username templates
  ``{{EC2PrivateDNSName}}``, ``{{SessionName}}``, ``{{AccountID}}``) or, for the cluster creator (EKS's
  bootstrap admin), to ``system:masters``. Anything else: 401.
* Self-managed nodes (EC2 instances owned by the cluster) boot like every other node; their user data's
  ``nodeadm init`` is simulated: the ``NodeConfig``'s endpoint must be this cluster's and its CA the cluster CA, then
  the kubelet authenticates with a token made from the instance profile's role (AssumeRole with the instance id as
  session name, as EC2 does) and registers only if aws-auth maps that role (``system:nodes``/
  ``system:bootstrappers``); otherwise it keeps retrying, the journal says why, and it never joins unless the
  mapping appears.
* Managed node groups: EKS itself registers ``desiredSize`` Nodes per node group (moto starts no instances for them).
* EKS runs the cloud controller and the VPC CNI (``kube-system/aws-node``) for the cluster: Nodes get their
  providerID and turn Ready without addons from the test.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import re
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from . import pki
from .cluster import Cluster, NodeRuntime
from .kubeadm import Kubeadm, install_addons, rbac_bootstrap
from .node import NodeBoot, in_root
from .store import ApiError

if TYPE_CHECKING:
    from .sim import Simulator

TOKEN_PREFIX = "k8s-aws-v1."
STS_HOST = re.compile(r"^sts(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
TOKEN_MAX_AGE = 15 * 60
EKS_MANAGER = "eks"


def canonical_arn(arn: str) -> str:
    """aws-iam-authenticator's canonicalisation: ``assumed-role/<role>/<session>`` -> ``role/<role>``."""
    match = re.match(r"^arn:([^:]+):sts::(\d+):assumed-role/([^/]+)/(.+)$", arn)
    if match:
        return f"arn:{match.group(1)}:iam::{match.group(2)}:role/{match.group(3)}"
    return arn


def session_name(arn: str) -> str:
    match = re.match(r"^arn:[^:]+:sts::\d+:assumed-role/[^/]+/(.+)$", arn)
    return match.group(1) if match else ""


def presign_token(credentials: Any, region: str, eks_name: str) -> str:
    """A token as ``aws eks get-token`` makes it (the kubelet's exec plugin on an EKS node)."""
    from botocore.hooks import HierarchicalEmitter
    from botocore.model import ServiceId
    from botocore.signers import RequestSigner

    emitter = HierarchicalEmitter()
    signer = RequestSigner(ServiceId("sts"), region, "sts", "v4", credentials, emitter)
    request = {
        "method": "GET",
        "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {"x-k8s-aws-id": eks_name},
        "context": {},
    }
    url = signer.generate_presigned_url(request, region_name=region, expires_in=60, operation_name="GetCallerIdentity")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


class EksSupport:
    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.lock = threading.Lock()
        self._nodegroup_nodes: dict[str, dict[str, NodeRuntime]] = {}
        self._seen_groups: dict[str, float] = {}
        self.errors: list[str] = []

    # ---- clusters --------------------------------------------------------------------------------------------
    def attach_cluster(self, cluster: Cluster) -> None:
        cluster.eks = {
            "name": cluster.options.get("eks_name") or cluster.name,
            "region": cluster.options.get("region") or "us-east-1",
            "started": False,
            "creator_arn": None,
        }
        cluster.api.token_authenticators.append(self._authenticator(cluster))

    def clusters(self) -> list[Cluster]:
        with self.sim.lock:
            return [c for c in self.sim.clusters.values() if c.kind == "eks" and c.eks is not None]

    def poll(self) -> None:
        for cluster in self.clusters():
            try:
                self.poll_cluster(cluster)
            except Exception as exc:  # noqa: BLE001 - keep polling; visible in state
                self.errors.append(f"{cluster.name}: {type(exc).__name__}: {exc}")
                del self.errors[:-20]

    def poll_cluster(self, cluster: Cluster) -> None:
        info = cluster.eks
        assert info is not None
        eks = self.sim.client("eks", info["region"])
        try:
            described = eks.describe_cluster(name=info["name"])["cluster"]
        except eks.exceptions.ResourceNotFoundException:
            return
        if not info["started"] and described.get("status") == "ACTIVE":
            self.start_api(cluster, described)
        if info["started"]:
            self.reconcile_nodegroups(cluster)

    def _registry(self) -> list[dict[str, Any]]:
        return self.sim.moto_capa("eks/clusters")

    def start_api(self, cluster: Cluster, described: dict[str, Any]) -> None:
        info = cluster.eks
        assert info is not None
        entry = next((e for e in self._registry() if e["arn"] == described["arn"]), None)
        if entry is None:
            raise RuntimeError(f"moto has no CA for {described['arn']} (moto fix 8 missing?)")
        ca = pki.CA(entry["ca_cert"], entry["ca_key"])
        host = urllib.parse.urlparse(described["endpoint"]).hostname or ""
        version = f"v{described.get('version', '1.31')}.0"
        future = asyncio.run_coroutine_threadsafe(cluster.start_api(ca, [host], version), self.sim.loop)
        future.result(timeout=30)
        cluster.cluster_ca = ca
        cluster.endpoint_aliases |= {host, f"{host}:443"}
        info.update(
            started=True,
            creator_arn=entry.get("creator_arn"),
            endpoint=described["endpoint"],
            service_cidr=(described.get("kubernetesNetworkConfig") or {}).get("serviceIpv4Cidr"),
        )
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            cluster.ensure("namespaces", {"metadata": {"name": ns}}, EKS_MANAGER)
        for _kind, plural, objs in rbac_bootstrap():
            for obj in objs:
                cluster.ensure(plural, obj, EKS_MANAGER, "rbac.authorization.k8s.io")
        cluster.ensure(
            "daemonsets",
            {
                "metadata": {"name": "aws-node", "namespace": "kube-system", "labels": {"k8s-app": "aws-node"}},
                "spec": {
                    "selector": {"matchLabels": {"k8s-app": "aws-node"}},
                    "template": {
                        "metadata": {"labels": {"k8s-app": "aws-node"}},
                        "spec": {
                            "hostNetwork": True,
                            "tolerations": [{"operator": "Exists"}],
                            "containers": [
                                {
                                    "name": "aws-node",
                                    "image": "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.18.5",
                                }
                            ],
                        },
                    },
                },
            },
            EKS_MANAGER,
            "apps",
        )
        install_addons(cluster, version, EKS_MANAGER)
        cluster.initialized.set()
        self.sim.journal.record(
            "cluster", "eks-apiserver-up", cluster=cluster.name, endpoint=described["endpoint"], url=cluster.url
        )

    # ---- authentication (aws-iam-authenticator) --------------------------------------------------------------
    def _authenticator(self, cluster: Cluster) -> Any:
        async def authenticate(token: str) -> tuple[str, list[str]] | None:
            if not token.startswith(TOKEN_PREFIX):
                return None
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self.verify, cluster, token)

        return authenticate

    def verify(self, cluster: Cluster, token: str) -> tuple[str, list[str]] | None:
        identity = self.identity(cluster, token)
        if identity is None:
            return None
        return self.map_identity(cluster, identity)

    def identity(self, cluster: Cluster, token: str) -> dict[str, str] | None:
        info = cluster.eks
        assert info is not None
        body = token[len(TOKEN_PREFIX) :]
        try:
            url = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
        except (ValueError, UnicodeDecodeError):
            return self._deny(cluster, "token is not base64url")
        parsed = urllib.parse.urlparse(url)
        query = urllib.parse.parse_qs(parsed.query)
        if parsed.scheme != "https" or not STS_HOST.match(parsed.hostname or ""):
            return self._deny(cluster, f"unexpected hostname {parsed.hostname!r} in the presigned URL")
        if query.get("Action", [""])[0] != "GetCallerIdentity":
            return self._deny(cluster, "the presigned URL is not a GetCallerIdentity")
        signed = query.get("X-Amz-SignedHeaders", [""])[0].split(";")
        if "x-k8s-aws-id" not in signed:
            return self._deny(cluster, "client did not sign the x-k8s-aws-id header in the presigned URL")
        try:
            when = datetime.datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.timezone.utc
            )
        except (KeyError, ValueError):
            return self._deny(cluster, "X-Amz-Date missing or malformed")
        if (datetime.datetime.now(datetime.timezone.utc) - when).total_seconds() > TOKEN_MAX_AGE:
            return self._deny(cluster, "the token expired")
        # The STS endpoint is moto: same path and query as signed, the cluster id header as aws-iam-authenticator
        # sends it.
        request = urllib.request.Request(
            f"{self.sim.moto_url}{parsed.path or '/'}?{parsed.query}",
            headers={"x-k8s-aws-id": info["name"], "Host": parsed.hostname or "", "Accept": "application/xml"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = response.read()
        except urllib.error.HTTPError as exc:
            return self._deny(cluster, f"STS answered {exc.code}: {exc.read()[:200]!r}")
        except OSError as exc:
            return self._deny(cluster, f"STS unreachable: {exc}")
        root = ET.fromstring(answer)
        found = {el.tag.split("}", 1)[-1]: (el.text or "") for el in root.iter()}
        if not found.get("Arn"):
            return self._deny(cluster, "STS answered no ARN")
        return {"arn": found["Arn"], "account": found.get("Account", ""), "user_id": found.get("UserId", "")}

    def _deny(self, cluster: Cluster, why: str) -> None:
        self.sim.journal.record("apiserver", "token-rejected", cluster=cluster.name, reason=why)
        return None

    def map_identity(self, cluster: Cluster, identity: dict[str, str]) -> tuple[str, list[str]] | None:
        info = cluster.eks
        assert info is not None
        arn = identity["arn"]
        canonical = canonical_arn(arn)
        creator = info.get("creator_arn")
        if creator and canonical_arn(creator) == canonical:
            return canonical, ["system:masters"]
        cms = cluster.api.table.find("", "v1", "configmaps")
        assert cms is not None
        with cluster.api.store.lock:
            auth = cluster.api.store.peek(cms, "kube-system", "aws-auth")
            data = dict((auth or {}).get("data") or {})
        entries: list[tuple[str, dict[str, Any]]] = []
        for key, field in (("mapRoles", "rolearn"), ("mapUsers", "userarn")):
            try:
                for item in yaml.safe_load(data.get(key) or "[]") or []:
                    if isinstance(item, dict):
                        entries.append((str(item.get(field, "")), item))
            except yaml.YAMLError:
                continue
        for mapped, item in entries:
            if mapped and canonical_arn(mapped) == canonical:
                username = self.render(str(item.get("username") or canonical), identity)
                return username, [str(g) for g in item.get("groups") or []]
        self.sim.journal.record(
            "apiserver",
            "token-unmapped",
            cluster=cluster.name,
            arn=arn,
            canonical_arn=canonical,
            reason=f"{canonical} is not mapped in kube-system/aws-auth and is not the cluster creator",
        )
        return None

    def render(self, template: str, identity: dict[str, str]) -> str:
        session = session_name(identity["arn"])
        out = template.replace("{{SessionName}}", session).replace("{{AccountID}}", identity.get("account", ""))
        if "{{EC2PrivateDNSName}}" in out:
            dns = ""
            found = self.sim.find_runtime(session) if session.startswith("i-") else None
            if found is not None:
                dns = found[1].name
            out = out.replace("{{EC2PrivateDNSName}}", dns)
        return out

    # ---- self-managed nodes: nodeadm ---------------------------------------------------------------------------
    def nodeadm_part(self, boot: NodeBoot, text: str) -> None:
        """A MIME part ``application/node.eks.aws`` (a NodeConfig in user data): nodeadm reads it at init."""
        path = in_root(boot.root, "/etc/eks/nodeadm.d/00-user-data.yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def run_nodeadm(self, instance_id: str, args: list[str]) -> tuple[int, str]:
        found = self.sim.find_runtime(instance_id)
        if found is None:
            return 1, "kubesim: unknown instance\n"
        cluster, runtime = found
        try:
            self.nodeadm(cluster, runtime, args)
        except NodeadmError as exc:
            runtime.state = "failed" if runtime.state not in ("rejected",) else runtime.state
            runtime.reason = runtime.reason or str(exc)
            self.sim.journal.record(
                "node",
                "failed",
                cluster=cluster.name,
                instance=instance_id,
                node=runtime.name,
                machine=runtime.machine,
                reason=str(exc),
            )
            return 1, f"{exc}\n"
        return 0, "nodeadm: the kubelet is registered\n"

    def nodeadm(self, cluster: Cluster, runtime: NodeRuntime, args: list[str]) -> None:
        if not args or args[0] != "init":
            raise NodeadmError(f"kubesim simulates 'nodeadm init' only, not {args}")
        assert runtime.root is not None
        sources = []
        for i, a in enumerate(args):
            if a == "--config-source" and i + 1 < len(args):
                sources.append(args[i + 1])
            elif a.startswith("--config-source="):
                sources.append(a.split("=", 1)[1])
        configs: list[dict[str, Any]] = []
        candidates = [in_root(runtime.root, "/etc/eks/nodeadm.d/00-user-data.yaml")]
        for source in sources:
            path = source[len("file://") :] if source.startswith("file://") else source
            candidates.append(Path(path) if path.startswith(str(runtime.root)) else in_root(runtime.root, path))
        for path in candidates:
            if path.is_file():
                configs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        spec: dict[str, Any] = {}
        for doc in configs:
            if doc.get("kind") == "NodeConfig":
                for key, value in (doc.get("spec") or {}).items():
                    spec[key] = {**spec.get(key, {}), **value} if isinstance(value, dict) else value
        target = spec.get("cluster") or {}
        for key in ("name", "apiServerEndpoint", "certificateAuthority"):
            if not target.get(key):
                raise NodeadmError(f"NodeConfig spec.cluster.{key} is required")
        self.sim.journal.record(
            "node",
            "nodeadm",
            cluster=cluster.name,
            instance=runtime.instance_id,
            node=runtime.name,
            machine=runtime.machine,
            eks_cluster=target["name"],
        )
        runtime.role = "eks-node"
        if not self.sim.sleep_scaled(cluster.delay("nodeadm"), runtime):
            raise NodeadmError("the instance went away during nodeadm init")
        host = urllib.parse.urlparse(str(target["apiServerEndpoint"])).hostname or ""
        resolved = self.sim.resolve_endpoint(f"{host}:443")
        if resolved is None or resolved is not cluster:
            raise NodeadmError(f"dial tcp: lookup {host}: no such host (not the endpoint of cluster {cluster.name})")
        try:
            node_ca = base64.b64decode(str(target["certificateAuthority"])).decode()
        except (ValueError, UnicodeDecodeError):
            raise NodeadmError("NodeConfig spec.cluster.certificateAuthority is not base64") from None
        ca_file = runtime.root / "etc/kubernetes/pki/ca.crt"
        ca_file.parent.mkdir(parents=True, exist_ok=True)
        ca_file.write_text(node_ca)
        ctx = ssl.create_default_context(cafile=str(ca_file))
        ctx.check_hostname = False  # reached through the simulator's local port; the CA is what is checked
        labels = {}
        for flag in (spec.get("kubelet") or {}).get("flags") or []:
            if str(flag).startswith("--node-labels="):
                for item in str(flag).split("=", 1)[1].split(","):
                    if "=" in item:
                        k, v = item.split("=", 1)
                        labels[k] = v
        role_arn = self.instance_role(runtime)
        warned = False
        while True:
            status, detail = self.kubelet_auth(cluster, runtime, role_arn, ctx)
            if status in (200, 201):
                break
            reason = (
                f"the kubelet cannot authenticate: HTTP {status} {detail} - the instance role {role_arn} must be "
                "mapped in kube-system/aws-auth (groups system:bootstrappers, system:nodes)"
            )
            if status == -1:
                reason = f"the kubelet cannot reach the API server: {detail}"
            if not warned:
                runtime.state = "rejected"
                runtime.reason = reason
                self.sim.journal.record(
                    "node",
                    "rejected",
                    cluster=cluster.name,
                    instance=runtime.instance_id,
                    node=runtime.name,
                    machine=runtime.machine,
                    reason=reason,
                )
                warned = True
            # The kubelet keeps retrying (every 10 s x time scale) for as long as the machine runs.
            if not self.sim.sleep_scaled(max(0.5, 10 * cluster.scale), runtime):
                raise NodeadmError("the instance went away while the kubelet waited for authorization")
        version = cluster.api.version
        Kubeadm(self.sim, cluster, runtime).register_node(labels, None, True, version, control_plane=False)
        runtime.state = "joined"
        runtime.reason = ""
        self.sim.journal.record(
            "node",
            "joined",
            cluster=cluster.name,
            instance=runtime.instance_id,
            node=runtime.name,
            machine=runtime.machine,
            eks=True,
            role_arn=role_arn,
        )

    def instance_role(self, runtime: NodeRuntime) -> str | None:
        ec2 = self.sim.client("ec2", runtime.region)
        reservations = ec2.describe_instances(InstanceIds=[runtime.instance_id])["Reservations"]
        profile = (reservations[0]["Instances"][0].get("IamInstanceProfile") or {}).get("Arn", "")
        if not profile:
            return None
        iam = self.sim.client("iam", runtime.region)
        name = profile.rsplit("/", 1)[-1]
        roles = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"].get("Roles") or []
        return roles[0]["Arn"] if roles else None

    def kubelet_auth(
        self, cluster: Cluster, runtime: NodeRuntime, role_arn: str | None, ctx: ssl.SSLContext
    ) -> tuple[int, str]:
        """The kubelet's first authenticated call, with a token made from the instance's role credentials."""
        from botocore.credentials import Credentials

        info = cluster.eks
        assert info is not None
        if role_arn is None:
            return 401, "the instance has no instance profile role (no credentials from IMDS)"
        sts = self.sim.client("sts", runtime.region)
        creds = sts.assume_role(RoleArn=role_arn, RoleSessionName=runtime.instance_id)["Credentials"]
        token = presign_token(
            Credentials(creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"]),
            runtime.region,
            info["name"],
        )
        csr = {
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"generateName": "csr-"},
            "spec": {
                "request": base64.b64encode(f"kubesim CSR for {runtime.name}".encode()).decode(),
                "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                "usages": ["digital signature", "client auth"],
            },
        }
        request = urllib.request.Request(
            f"{cluster.url}/apis/certificates.k8s.io/v1/certificatesigningrequests",
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
                return response.status, ""
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}").get("message", "")
        except (urllib.error.URLError, OSError) as exc:
            return -1, str(exc)

    # ---- managed node groups ---------------------------------------------------------------------------------
    def reconcile_nodegroups(self, cluster: Cluster) -> None:
        info = cluster.eks
        assert info is not None
        eks = self.sim.client("eks", info["region"])
        groups = eks.list_nodegroups(clusterName=info["name"]).get("nodegroups", [])
        now = time.monotonic()
        for group in groups:
            key = f"{cluster.name}/{group}"
            described = eks.describe_nodegroup(clusterName=info["name"], nodegroupName=group)["nodegroup"]
            desired = int((described.get("scalingConfig") or {}).get("desiredSize", 0))
            first = self._seen_groups.setdefault(key, now)
            if now - first < cluster.delay("nodegroup_node"):
                continue
            nodes = self._nodegroup_nodes.setdefault(key, {})
            while len(nodes) < desired:
                self.add_group_node(cluster, described, nodes)
            while len(nodes) > desired:
                name = sorted(nodes)[-1]
                self.remove_group_node(cluster, nodes.pop(name))
        for key in [k for k in self._nodegroup_nodes if k.startswith(f"{cluster.name}/")]:
            if key.split("/", 1)[1] not in groups:
                for runtime in self._nodegroup_nodes.pop(key).values():
                    self.remove_group_node(cluster, runtime)
                self._seen_groups.pop(key, None)

    def add_group_node(self, cluster: Cluster, group: dict[str, Any], nodes: dict[str, NodeRuntime]) -> None:
        import random

        info = cluster.eks
        assert info is not None
        region = info["region"]
        ip = f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(2, 254)}"
        instance_id = "i-" + "".join(random.choice("0123456789abcdef") for _i in range(17))
        az = f"{region}{'abc'[len(nodes) % 3]}"
        runtime = NodeRuntime(
            instance_id=instance_id,
            cluster=cluster.name,
            machine=f"{group['nodegroupName']}-{len(nodes)}",
            az=az,
            region=region,
            private_ip=ip,
            name=f"ip-{ip.replace('.', '-')}.ec2.internal",
            instance_type=(group.get("instanceTypes") or ["t3.medium"])[0],
            cluster_ref=cluster,
            role="eks-managed",
        )
        runtime.root = self.sim.state_dir / "nodes" / instance_id / "root"
        runtime.root.mkdir(parents=True, exist_ok=True)
        with cluster.lock:
            cluster.nodes[instance_id] = runtime
        labels = {
            "eks.amazonaws.com/nodegroup": group["nodegroupName"],
            "eks.amazonaws.com/capacityType": group.get("capacityType") or "ON_DEMAND",
            "eks.amazonaws.com/nodegroup-image": group.get("releaseVersion") or "",
            **(group.get("labels") or {}),
        }
        taints = [
            {
                "key": t["key"],
                "value": t.get("value", ""),
                "effect": {
                    "NO_SCHEDULE": "NoSchedule",
                    "NO_EXECUTE": "NoExecute",
                    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
                }.get(t.get("effect", ""), "NoSchedule"),
            }
            for t in group.get("taints") or []
        ]
        try:
            Kubeadm(self.sim, cluster, runtime).register_node(
                labels, taints, True, cluster.api.version, control_plane=False
            )
        except Exception as exc:  # noqa: BLE001 - visible in the journal
            self.sim.journal.record("node", "failed", cluster=cluster.name, instance=instance_id, reason=str(exc))
            return
        runtime.state = "joined"
        nodes[runtime.name] = runtime
        self.sim.journal.record(
            "node",
            "joined",
            cluster=cluster.name,
            instance=instance_id,
            node=runtime.name,
            machine=runtime.machine,
            nodegroup=group["nodegroupName"],
        )

    def remove_group_node(self, cluster: Cluster, runtime: NodeRuntime) -> None:
        runtime.kubelet_alive = False
        runtime.instance_gone = True
        runtime.state = "off"
        nodes = cluster.api.table.find("", "v1", "nodes")
        assert nodes is not None
        try:
            cluster.api.store.remove(nodes, "", runtime.name)
        except ApiError:
            pass
        self.sim.journal.record(
            "node",
            "powered-off",
            cluster=cluster.name,
            instance=runtime.instance_id,
            node=runtime.name,
            machine=runtime.machine,
            state="node group scaled in",
        )


class NodeadmError(Exception):
    pass


def attach(sim: Simulator) -> None:
    sim.eks = EksSupport(sim)
