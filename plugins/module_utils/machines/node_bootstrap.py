# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: what a machine boots from - its bootstrap document - for groups, pools and fleets alike.

:class:`NodeBootstrap` is the one path from a :class:`.machine_spec.MachineSpec` to the document its machines boot
from; bootstrap types:

* ``kubeadm`` - ``kubeadm init`` / ``kubeadm join`` (control plane or worker) rendered from the cluster PKI
  (``kubeadm.pki``), read once per run when first needed;
* ``eks`` - a self-managed node joining an EKS cluster (CAPA's AWSMachinePool under an AWSManagedControlPlane):
  a ``#cloud-config`` that writes a nodeadm ``NodeConfig`` (cluster name, API endpoint, CA, service CIDR, read with
  one ``DescribeCluster``) and runs ``nodeadm init`` on it;
* ``raw`` - the user's own document; ``none`` - no bootstrap data.

:meth:`NodeBootstrap.add_watcher` merges the termination watcher into a ``#cloud-config`` for the machines that
need it (spot machines, spot pools, pools that drain on scale-in, fleets). Every document goes through the same
Secrets Manager/SSM path (``bootstrap_data``), so no user data or launch template version carries a certificate
(the EKS CA included).
"""

from __future__ import annotations

from typing import Any, Mapping

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; the sanity import test runs without it
    yaml = None  # type: ignore[assignment]

from ..aws.eks import describe_cluster
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kubeadm.cloud_init import ROLE_JOIN_WORKER, render_cloud_init
from ..kubeadm.pki import ClusterPki, PublicPki, cluster_secrets, load_cluster_pki, public_pki_of, secret_name
from .machine_spec import EKS, KUBEADM, NONE, RAW, MachineSpec
from .termination import DEFAULT_KUBECONFIG, with_watcher

NODEADM_CONFIG = "/etc/eks/nodeadm.d/clusterapi-aws.yaml"
KUBELET_KUBECONFIG = {KUBEADM: DEFAULT_KUBECONFIG, EKS: "/var/lib/kubelet/kubeconfig"}
POOL_LABEL = "clusterapi.aws/machine-pool"
# What check mode renders when the document's inputs (PKI, EKS cluster) do not exist yet.
PLANNED = b"planned"


# pure ------------------------------------------------------------------------------------------------------------
def node_config(cluster: Mapping[str, Any], *, labels: Mapping[str, str]) -> dict[str, Any]:
    """nodeadm's ``NodeConfig`` for a node of ``cluster`` (an EKS ``DescribeCluster`` answer)."""
    network = cluster.get("kubernetesNetworkConfig") or {}
    spec: dict[str, Any] = {
        "cluster": {
            "name": cluster["name"],
            "apiServerEndpoint": cluster["endpoint"],
            "certificateAuthority": cluster["certificateAuthority"]["data"],
            "cidr": network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or "10.100.0.0/16",
        }
    }
    if labels:
        flags = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        spec["kubelet"] = {"flags": [f"--node-labels={flags}"]}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def nodeadm_cloud_config(cluster: Mapping[str, Any], *, labels: Mapping[str, str]) -> bytes:
    """The ``#cloud-config`` an EKS node boots from (deterministic: its hash says whether bootstrap data changed)."""
    config = yaml.safe_dump(node_config(cluster, labels=labels), sort_keys=True)
    document = {
        "write_files": [{"path": NODEADM_CONFIG, "owner": "root:root", "permissions": "0600", "content": config}],
        "runcmd": [f"nodeadm init --config-source file://{NODEADM_CONFIG}"],
    }
    return ("#cloud-config\n" + yaml.safe_dump(document, sort_keys=True)).encode()


def watcher_kubeconfig(bootstrap_type: str) -> str:
    """Where the node's kubelet keeps the credentials the termination watcher drains with."""
    return KUBELET_KUBECONFIG.get(bootstrap_type, KUBELET_KUBECONFIG[KUBEADM])


# AWS -------------------------------------------------------------------------------------------------------------
class NodeBootstrap:
    """The bootstrap documents of one run's machines; the cluster PKI is read once, when first needed."""

    def __init__(self, ctx: Context, machine: MachineSpec) -> None:
        self.ctx, self.machine = ctx, machine
        self._pki: ClusterPki | None = None
        self._pki_loaded = False
        self._public: PublicPki | None = None  # the PKI's public facts, as its secret's tags said them
        self._eks: Mapping[str, Any] | None = None
        self._eks_loaded = False

    @property
    def eks_name(self) -> str:
        """The EKS cluster an EKS node joins: the bootstrap's, else the cluster's own."""
        return self.machine.bootstrap.eks_cluster_name or self.ctx.cluster

    def eks_cluster(self) -> Mapping[str, Any] | None:
        """The EKS cluster an EKS node joins (``DescribeCluster``), read once, when first needed: the nodeadm document
        and a pool's Node wait (``PoolToken``) of one run share the answer."""
        if not self._eks_loaded:
            self._eks = describe_cluster(self.ctx, self.eks_name)
            self._eks_loaded = True
        return self._eks

    def pki(self) -> ClusterPki | None:
        """The cluster PKI (``None`` in check mode before ``capa_kubeadm`` stored it; otherwise missing fails)."""
        if not self._pki_loaded:
            self._pki = load_cluster_pki(self.ctx, self.ctx.cluster, missing_ok=self.ctx.check_mode)
            self._pki_loaded = True
        return self._pki

    def join_pki(self) -> ClusterPki | PublicPki | None:
        """What a worker's join document is rendered from: the PKI when this run read it already; else its public
        facts, when the secret's tags describe its current version (its ListSecrets entry: ``capa_kubeadm``'s
        request, which a run that changes nothing has handed on); else the PKI (``GetSecretValue``). A worker gets
        no key, so its document needs no secret value."""
        if self._pki_loaded:
            return self._pki
        if self._public is None:
            listed = cluster_secrets(self.ctx).get(secret_name(self.ctx.cluster))
            self._public = public_pki_of(listed, self.ctx.cluster) if listed else None
            if self._public is None:
                return self.pki()
        return self._public

    def document(
        self,
        name: str,
        *,
        kubeadm_role: str = ROLE_JOIN_WORKER,
        token: str | None = None,
        etcd_snapshot_url: str | None = None,
    ) -> bytes | None:
        """The raw bootstrap document of machine (or pool) ``name``, or None without bootstrap data; a kubeadm
        document carries ``token``, the bootstrap token the machine joins (or, for ``init``, creates) with, and
        ``etcd_snapshot_url`` when an ``init`` machine restores etcd first."""
        bootstrap = self.machine.bootstrap
        if bootstrap.type == NONE:
            return None
        if bootstrap.type == RAW:
            return (bootstrap.data or "").encode()
        if bootstrap.type == EKS:
            return self._eks_document(name)
        pki = self.join_pki() if kubeadm_role == ROLE_JOIN_WORKER else self.pki()
        if pki is None:  # check mode before capa_kubeadm ran: plan the entries without content
            return PLANNED
        if token is None:
            raise ReconcileError(f"{name}: a kubeadm document needs a bootstrap token (a bug)")
        return render_cloud_init(
            pki,
            kubeadm_role,
            cluster=self.ctx.cluster,
            endpoint_host=bootstrap.endpoint_host or "",
            endpoint_port=bootstrap.endpoint_port,
            kubernetes_version=self.machine.kubernetes_version or "",
            machine_name=name,
            token=token,
            token_ttl=bootstrap.token_ttl,
            etcd_snapshot_url=etcd_snapshot_url,
        )

    def add_watcher(self, document: bytes | None, *, lifecycle_hook: str | None = None) -> bytes | None:
        """``document`` with the termination watcher merged in (it drains the node on a spot interruption notice
        and, with ``lifecycle_hook``, on scale-in); a document that cannot take it is used as it is, with a
        warning."""
        if document is None or document == PLANNED:
            return document
        kubeconfig = watcher_kubeconfig(self.machine.bootstrap.type)
        try:
            merged = with_watcher(document, lifecycle_hook=lifecycle_hook, kubeconfig=kubeconfig)
        except (ValueError, yaml.YAMLError):
            # Not the parser's message: it quotes the document, which holds secrets.
            self.ctx.warn("bootstrap data is not a valid cloud-config mapping: no termination watcher added")
            return document
        if merged == document:
            self.ctx.warn("bootstrap data is not #cloud-config: no termination watcher added")
        return merged

    def _eks_document(self, pool: str) -> bytes:
        cluster = self.eks_cluster()
        if cluster is not None and cluster.get("endpoint") and (cluster.get("certificateAuthority") or {}).get("data"):
            return nodeadm_cloud_config(cluster, labels={POOL_LABEL: pool})
        if self.ctx.check_mode:  # the EKS cluster is created (or becomes active) earlier in the same run
            return PLANNED
        state = "does not exist" if cluster is None else f"is {cluster.get('status', 'not ready')} (no endpoint yet)"
        raise ReconcileError(f"bootstrap.eks_cluster_name: EKS cluster {self.eks_name} {state}; reconcile it first")
