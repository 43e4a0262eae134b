# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (the ``capa_kubeconfig`` lookup): a kubeconfig of either kind of cluster, built in memory for a job.

* Self-managed: the admin kubeconfig of ``kubeadm/admin_kubeconfig`` with a client certificate minted from the PKI
  secret ``capa_kubeadm`` keeps (one ``GetSecretValue``), for the control-plane endpoint the caller names.
* EKS: ``DescribeCluster``'s endpoint and CA, and a bearer token of the session's credentials (the presigned STS
  ``GetCallerIdentity`` URL aws-iam-authenticator verifies, ``workload/credentials.eks_token``): nothing runs where the
  kubeconfig is used, so a job's execution environment needs no aws CLI. EKS accepts the token for 15 minutes.

The session is the caller's, already switched to the cluster's ``identity`` when it has one: whatever account the
cluster was built in, its secret and its EKS cluster are read there, and the EKS token is that identity's.
Nothing here writes anything; the kubeconfig holds a key or a token and goes only to whoever asked.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from ..aws import eks as aws_eks
from ..eks.cluster_plan import check_eks_name
from ..eks.kubeconfig import kubeconfig_document
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.validation import check_cluster_name
from ..kubeadm.admin_kubeconfig import admin_kubeconfig
from ..kubeadm.pki import load_cluster_pki
from ..workload.credentials import eks_token

AUTO, SELF_MANAGED, EKS = "auto", "self-managed", "eks"
KINDS = (AUTO, SELF_MANAGED, EKS)
# The client certificate's lifetime: long enough for a job, short enough that a leaked kubeconfig is soon worthless.
SHORTEST = datetime.timedelta(minutes=5)
LONGEST = datetime.timedelta(days=7)


@dataclass(frozen=True)
class KubeconfigRequest:
    """What the caller asked for one cluster. ``host`` is the self-managed control-plane endpoint (``None``: not
    given); an EKS cluster's endpoint comes from EKS."""

    cluster: str
    kind: str = AUTO
    host: str | None = None
    port: int = 6443
    validity: datetime.timedelta = datetime.timedelta(hours=1)

    @property
    def kind_without_asking(self) -> str | None:
        """The kind known before any request: the one asked for, or self-managed when ``host`` is given (``host``
        means nothing to an EKS cluster). ``None``: only ``DescribeCluster`` can tell."""
        if self.kind != AUTO:
            return self.kind
        return SELF_MANAGED if self.host else None


def check_request(request: KubeconfigRequest) -> None:
    """Refuse a request that cannot succeed, before any request to AWS."""
    if request.kind not in KINDS:
        raise SpecError("kind", f"'{request.kind}' is not one of {', '.join(KINDS)}")
    kind = request.kind_without_asking
    if kind == SELF_MANAGED:
        check_cluster_name(request.cluster, "cluster name")
        if not request.host:
            raise SpecError("host", "is required for a self-managed cluster (its control-plane endpoint)")
    else:
        # An EKS cluster may carry another name than the CAPA cluster (capa_eks_cluster's name option).
        check_eks_name(request.cluster, "cluster name")
    if not 1 <= request.port <= 65535:
        raise SpecError("port", f"{request.port} is not a port number")
    if not SHORTEST <= request.validity <= LONGEST:
        minutes = int(request.validity.total_seconds() // 60)
        raise SpecError(
            "validity_minutes",
            f"{minutes} is not between {int(SHORTEST.total_seconds() // 60)} and {int(LONGEST.total_seconds() // 60)}",
        )


def job_kubeconfig(ctx: Context, request: KubeconfigRequest) -> dict[str, Any]:
    """The kubeconfig (as data, as kubernetes.core's ``kubeconfig`` option takes it) of ``request.cluster``."""
    if request.kind_without_asking == SELF_MANAGED:
        return self_managed_kubeconfig(ctx, request)
    described = aws_eks.describe_cluster(ctx, request.cluster)
    if described is None:
        if request.kind == EKS:
            raise ReconcileError(f"no EKS cluster named {request.cluster} in {ctx.region}")
        raise ReconcileError(
            f"no EKS cluster named {request.cluster} in {ctx.region}; for a self-managed cluster give host "
            "(its control-plane endpoint)"
        )
    return eks_kubeconfig(ctx, described)


def self_managed_kubeconfig(ctx: Context, request: KubeconfigRequest) -> dict[str, Any]:
    pki = load_cluster_pki(ctx, request.cluster)
    return admin_kubeconfig(pki, request.cluster, request.host or "", request.port, request.validity)


def eks_kubeconfig(ctx: Context, described: dict[str, Any]) -> dict[str, Any]:
    """A token kubeconfig of the described EKS cluster, signed with the session's credentials (no request)."""
    name = described["name"]
    endpoint = described.get("endpoint")
    ca_data = (described.get("certificateAuthority") or {}).get("data")
    if not endpoint or not ca_data:
        raise ReconcileError(f"EKS cluster {name} has no endpoint yet (status {described.get('status')})")
    credentials = ctx.session.credentials()
    if credentials is None:
        raise ReconcileError("no AWS credentials to sign the EKS token with")
    bearer = eks_token(credentials, ctx.region or "", name)
    return kubeconfig_document(name, endpoint, ca_data, {"token": bearer})
