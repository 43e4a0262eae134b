# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the bootstrap token a kubeadm machine pool's instances join with.

A pool's instances are launched by AWS (its auto scaling group or fleet) whenever it scales out, long after the
run that wrote the launch template, so no token can be minted per instance as it is per machine. The pool has one
token instead, minted in the cluster with an expiry (``bootstrap.token_ttl``, a day by default) and written only into
the bootstrap entries of a launch template version (Secrets Manager / SSM; the template carries a boot hook, and the
token's public id as the instance tag :data:`TOKEN_ID_TAG`). A run that finds the latest version's token missing or
past half its life rotates it: a new token, a new template version with the same hash - no instance refresh - and
the superseded token lapses once no kept version refers to it. A leaked template therefore holds no token at all,
and a leaked entry one that expires.

Minting needs the Kubernetes API (``kubernetes_api``): without it a pool that needs a new version is refused before
any change, and one that needs none is left with a warning.
"""

from __future__ import annotations

from typing import Iterable

from ..aws import eks as aws_eks
from ..kernel.errors import ReconcileError, RemoteError
from ..kubeadm import bootstrap_tokens as tokens
from ..kubeadm.bootstrap_tokens import JoinToken
from ..workload.access import KubernetesAccess, KubernetesApiSettings, eks_kube_api, eks_role_mapped
from ..workload.kube import UNREACHABLE, KubeApi, PlannedApi
from . import asg_plan
from .join_tokens import JoinTokens, recall_init_token
from .machine_spec import EKS, KUBEADM
from .node_bootstrap import NodeBootstrap

# The token's id (public: kubeadm prints it, the API server names its Secret after it) on the instances a version
# launches, so a run knows which token the latest version's entries carry.
TOKEN_ID_TAG = asg_plan.TOKEN_ID_TAG
# What the document's hash is computed with: a rotated token is no change of the pool's machines.
HASH_TOKEN = "000000.0000000000000000"


class PoolToken:
    """The join token of one kubeadm pool for one run: read once, rotated when due, superseded ones deleted."""

    def __init__(self, boot: NodeBootstrap, pool: str, settings: KubernetesApiSettings) -> None:
        """``boot``: the run's bootstrap of the pool's machines, whose cluster PKI and EKS cluster description (each
        read once per run, when first needed) the pool's documents use too."""
        self.ctx, self.machine, self.boot, self.pool, self.settings = boot.ctx, boot.machine, boot, pool, settings
        self.ttl = self.machine.bootstrap.token_ttl
        self.access: KubernetesAccess | None = None
        self.tokens: JoinTokens | None = None
        self.reason = ""  # why the cluster was not asked
        self._current: JoinToken | None = None
        self._minted: str | None = None

    @property
    def minted_id(self) -> str | None:
        """The id of the token minted in this run, if any."""
        return self._minted.split(".")[0] if self._minted else None

    @property
    def applies(self) -> bool:
        """A kubeadm pool that knows its cluster's endpoint (a pool deleted with its cluster names none)."""
        return self.machine.bootstrap.type == KUBEADM and bool(self.machine.bootstrap.endpoint_host)

    # reading ---------------------------------------------------------------------------------------------------
    def observe(self, latest_id: str | None) -> str | None:
        """Why the latest version needs a new token (None: its token is good, or the pool has no kubeadm data).
        One list of the cluster's bootstrap tokens."""
        if not self.applies:
            return None
        join_tokens = self._join_tokens()
        if join_tokens is None:
            return None
        try:
            found = [t for t in join_tokens.of_group(self.pool) if latest_id and t.id == latest_id]
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            self._unreachable(str(e))
            return None
        now = tokens.utc_now()
        self._current = found[0] if found else None
        if self._current is None:
            return "no join token" if latest_id is None else f"join token {latest_id} is gone"
        if tokens.pool_token_action(self._current, current=True, ttl=self.ttl, now=now) == tokens.ROTATE:
            return f"join token {latest_id} expires within {self.ttl // 2}s"
        return None

    def warn_unchecked(self) -> None:
        if self.applies and self.reason:
            self.ctx.warn(
                f"pool {self.pool}: its join token was not checked ({self.reason}); instances launched after it "
                "expires cannot join. Reach the Kubernetes API from the controller (kubernetes_api) and run again"
            )

    # the token of a new version --------------------------------------------------------------------------------
    def value(self, rotate: bool) -> tuple[str, str] | None:
        """(token, id) for a new version's document: the current one, or a new one when ``rotate`` (or when there
        is none). None for a pool without kubeadm data. Without the API, refused."""
        if not self.applies:
            return None
        if self._minted is None and (rotate or self._current is None):
            self._minted = self._mint()
        value = self._minted or (self._current.value if self._current else "")
        return value, value.split(".")[0]

    def _mint(self) -> str:
        join_tokens = self._join_tokens()
        if join_tokens is None:
            if not self.ctx.check_mode:
                return self._init_token()
            join_tokens = self.tokens = JoinTokens(self.ctx, PlannedApi(self.reason))
        try:
            join_tokens.all()  # read once per run (observe did, unless the API never answered)
            return join_tokens.mint(
                group=self.pool, holder=self.pool, ttl=self.ttl, reason="the pool's instances join with it"
            )
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            self._unreachable(str(e))
            return self._init_token()

    def _init_token(self) -> str:
        """Without the API: kubeadm init's token while it has enough life left (a first build from outside the
        cluster's network) - the next run that reaches the API rotates it (no token of the pool carries its id);
        otherwise refused."""
        value = recall_init_token(self.ctx, tokens.MIN_TTL)
        if value is None:
            raise self._refused()
        self.ctx.warn(
            f"pool {self.pool}: the Kubernetes API is not reachable ({self.reason}); its instances join with kubeadm "
            "init's token, which expires soon. Reach the API (kubernetes_api) and run again to give the pool its own"
        )
        return value

    # after the versions are settled ----------------------------------------------------------------------------
    def tidy(self, kept_ids: Iterable[str]) -> None:
        """Delete the pool's tokens that expired or that no kept version refers to (superseded and pruned)."""
        if not self.applies or self.tokens is None or not isinstance(self.tokens.api, KubeApi):
            return
        kept = set(kept_ids)
        now = tokens.utc_now()
        try:
            for token in self.tokens.of_group(self.pool):
                if token.expired(now):
                    self.tokens.delete(token, "expired")
                elif token.id not in kept:
                    self.tokens.delete(token, "no launch template version of the pool carries it any more")
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise

    def delete_all(self) -> None:
        """The pool is deleted: its tokens go with it (when the cluster answers)."""
        if self.applies and self._join_tokens() is not None:
            self.tidy(())

    # the cluster -----------------------------------------------------------------------------------------------
    def _join_tokens(self) -> JoinTokens | None:
        if self.tokens is not None or self.reason:
            return self.tokens
        if self.boot.join_pki() is None:
            self.reason = "the cluster PKI does not exist yet"
            return None
        host, port = self.machine.bootstrap.endpoint_host or "", self.machine.bootstrap.endpoint_port
        self.access = KubernetesAccess.open(
            self.ctx,
            self.settings,
            endpoint_host=host,
            endpoint_port=port,
            # The CA's key is read when the first request goes out: a cluster an earlier step found unreachable
            # (handed on) is not asked, and then no secret value is read for it.
            cluster_ca=self._cluster_ca,
        )
        if self.access.api is None:
            self.reason = self.access.reason
            return None
        self.tokens = JoinTokens(self.ctx, self.access.api)
        return self.tokens

    def _cluster_ca(self) -> tuple[str, str]:
        pki = self.boot.pki()
        if pki is None:  # join_pki found it: only check mode reads a missing one as None
            raise ReconcileError("the cluster PKI does not exist yet")
        return pki.cluster_ca()

    def _unreachable(self, problem: str) -> None:
        if self.settings.mode == "required":
            raise ReconcileError(f"kubernetes_api.mode is required but the Kubernetes API does not answer: {problem}")
        self.reason, self.tokens = problem, None

    def _refused(self) -> ReconcileError:
        return ReconcileError(
            f"refused: pool {self.pool} needs a launch template version whose instances join with a bootstrap "
            f"token minted in the cluster, and the Kubernetes API is not reachable ({self.reason}); kubeadm init's "
            "token has expired or is about to. Nothing of the "
            "pool was changed. Reach the API from the controller (kubernetes_api.server: a tunnel, an SSM port "
            "forward or a proxy to the endpoint) and run again"
        )

    def node_access(self) -> tuple[KubernetesAccess | None, str]:
        """The cluster's API as this run reached it, for the pool's Node wait: (access, why not reached)."""
        if self.machine.bootstrap.type == EKS:
            return self._eks_access()
        if not self.applies:
            return None, ""
        if self.access is None and not self.reason:
            self._join_tokens()
        return self.access, self.reason or (self.access.reason if self.access else "")

    def _eks_access(self) -> tuple[KubernetesAccess | None, str]:
        """An EKS pool's nodes join as its instance profile's role, which the EKS cluster's run maps (capa_eks_cluster
        node_instance_profiles): their Nodes are read with a token of this run's credentials, as a node group's."""
        if self.settings.mode == "none":
            return None, "kubernetes_api.mode is none"
        if not self.machine.iam_instance_profile:
            return None, "the pool has no iam_instance_profile, so its nodes cannot authenticate to EKS"
        name = self.boot.eks_name
        cluster = self.boot.eks_cluster()
        if cluster is None or cluster.get("status") not in ("ACTIVE", "UPDATING") or not cluster.get("endpoint"):
            return None, f"EKS cluster {name} is not active"
        api = eks_kube_api(self.ctx, self.settings, name, cluster)
        profile = self.machine.iam_instance_profile
        try:
            mapped = eks_role_mapped(api, cluster, profile, lambda: aws_eks.list_access_entries(self.ctx, name))
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            if self.settings.mode == "required":
                raise ReconcileError(f"kubernetes_api.mode is required but the EKS API does not answer: {e}") from None
            return None, f"the EKS API does not answer: {e}"
        if not mapped:
            # Nodes that cannot authenticate never join: waiting for them would only run out the run's budget.
            return None, (
                f"the role {profile} of its instance profile is not mapped in EKS cluster {name} yet (aws-auth or an "
                "access entry), so its nodes cannot join"
            )
        self.access = KubernetesAccess(self.settings, api=api)
        return self.access, ""

    def close(self) -> None:
        if self.access is not None:
            self.access.close()
