# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the Nodes of a cluster, for ``capa_cluster_info`` - one list, read the way the other modules reach it.

A status judged from AWS alone says an instance runs, not that its node serves; Cluster API judges machines by their
Node (``NodeHealthy``), and so does this: one ``GET /api/v1/nodes`` per run, matched to instances by providerID and,
on EKS, to managed node groups and Fargate profiles by the labels EKS puts on their Nodes. A self-managed cluster is
reached with a client certificate minted from its PKI secret (one ``GetSecretValue``), an EKS cluster with a token
presigned from the run's credentials. When the API cannot be read the status says so (``not_read``) instead of
claiming what it did not check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kubeadm.pki import load_cluster_pki
from ..workload.access import KubernetesAccess, KubernetesApiSettings, eks_kube_api
from ..workload.observe import NodeView, provider_id

NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
FARGATE_PROFILE_LABEL = "eks.amazonaws.com/fargate-profile"


@dataclass(frozen=True)
class NodesRead:
    """The cluster's Nodes, or why they were not read (``nodes`` None)."""

    nodes: tuple[NodeView, ...] | None
    reason: str = ""

    @classmethod
    def unread(cls, reason: str) -> NodesRead:
        return cls(None, reason)

    def node_of(self, instance: Mapping[str, Any]) -> NodeView | None:
        """An instance record's Node: by providerID once the cloud provider set it, else by the name the kubelet
        registered (the private DNS name) on a Node without one - as the machine tier matches them."""
        wanted = provider_id(instance.get("availability_zone") or "", instance["id"])
        name = instance.get("private_dns_name")
        for node in self.nodes or ():
            if node.provider_id == wanted or (name and not node.provider_id and node.name == name):
                return node
        return None

    def ready_of_instances(self, instances: Sequence[Mapping[str, Any]]) -> int | None:
        """How many of these instances have a Ready Node (None: Nodes not read)."""
        if self.nodes is None:
            return None
        return sum(1 for i in instances if (node := self.node_of(i)) is not None and node.ready == "True")

    def labelled(self, label: str, value: str) -> tuple[int, int] | None:
        """(Nodes, Ready Nodes) carrying ``label=value`` (None: Nodes not read)."""
        if self.nodes is None:
            return None
        nodes = [n for n in self.nodes if n.labels.get(label) == value]
        return len(nodes), sum(1 for n in nodes if n.ready == "True")


def read_self_managed_nodes(
    ctx: Context, settings: KubernetesApiSettings, cluster: str, endpoint: tuple[str, int] | None
) -> NodesRead:
    """The Nodes of a kubeadm cluster, through its control-plane endpoint and a certificate minted from its PKI."""
    if settings.mode == "none":
        return NodesRead.unread("kubernetes_api.mode is none")
    if endpoint is None:
        return NodesRead.unread("the control-plane endpoint is not known (no load balancer DNS name)")

    def cluster_ca() -> tuple[str, str]:
        # Only when the Node list goes to the API server: the one an earlier step of the run read is handed on
        # (kernel/shared_reads.py), and then neither the PKI secret is read nor a certificate minted.
        pki = load_cluster_pki(ctx, cluster, missing_ok=True)
        if pki is None:
            raise _NoPki()
        return pki.cluster_ca()

    access = KubernetesAccess.open(
        ctx, settings, endpoint_host=endpoint[0], endpoint_port=endpoint[1], cluster_ca=cluster_ca
    )
    try:
        workload = access.observe()
    except _NoPki:
        return NodesRead.unread("the cluster has no PKI secret yet")
    finally:
        access.close()
    return NodesRead(workload.nodes) if workload.reachable else NodesRead.unread(workload.reason)


class _NoPki(Exception):
    """The cluster has no PKI secret (yet): its Nodes are not read."""


def read_eks_nodes(
    ctx: Context, settings: KubernetesApiSettings, name: str, cluster: Mapping[str, Any] | None
) -> NodesRead:
    """The Nodes of an EKS cluster (``DescribeCluster``'s answer), with a token of the run's credentials."""
    if settings.mode == "none":
        return NodesRead.unread("kubernetes_api.mode is none")
    if not cluster or cluster.get("status") not in ("ACTIVE", "UPDATING"):
        return NodesRead.unread("the EKS cluster is not ACTIVE")
    try:
        api = eks_kube_api(ctx, settings, name, cluster)
        nodes = tuple(NodeView.from_api(n) for n in api.nodes())
    except RemoteError as e:
        if settings.mode == "required":
            raise ReconcileError(
                f"kubernetes_api.mode is required but the EKS API did not answer a read: {e}"
            ) from None
        return NodesRead.unread(str(e))
    return NodesRead(nodes)
