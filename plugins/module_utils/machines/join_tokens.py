# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the workload cluster's bootstrap tokens as one run sees them and changes them.

:class:`JoinTokens` reads every ``bootstrap.kubernetes.io/token`` Secret of ``kube-system`` once per run (one list,
field-selected by type) and makes the writes ``kubeadm/bootstrap_tokens.py`` decides: a token minted for a machine
or a pool (``k8s:CreateSecret``), its expiry moved (``k8s:PatchSecret``), a token deleted (``k8s:DeleteSecret``).
Every write goes through ``Operations.call``, so check mode plans it and ``api_calls`` counts it; no token value
reaches the plan, a result or a log.
"""

from __future__ import annotations

import datetime
import json

from ..aws.secretsmanager import get_secret_value
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.idempotency import new_client_token
from ..kernel.tags import ROLE_CONTROL_PLANE, dict_to_tags
from ..kubeadm import bootstrap_tokens as tokens
from ..kubeadm.bootstrap_tokens import JoinToken
from ..workload.kube import UNREACHABLE, KubeApi, PlannedApi


class JoinTokens:
    """The bootstrap tokens of one workload cluster, for one run."""

    def __init__(self, ctx: Context, api: KubeApi | PlannedApi) -> None:
        self.ctx, self.api = ctx, api
        self._found: list[JoinToken] | None = None

    def all(self) -> list[JoinToken]:
        """Every bootstrap token of the cluster (one ``k8s:ListSecrets`` per run; later calls see this run's writes)."""
        if self._found is None:
            if not isinstance(self.api, KubeApi):
                return []  # check mode before the cluster exists: it has no tokens yet
            try:
                secrets = self.api.secrets(tokens.TOKEN_NAMESPACE, field_selector=f"type={tokens.TOKEN_TYPE}")
            except RemoteError as e:
                if e.code == UNREACHABLE:
                    raise
                raise ReconcileError(f"the Kubernetes API refused to list bootstrap tokens: {e}") from None
            self._found = [t for t in map(tokens.parse_token_secret, secrets) if t is not None]
        return self._found

    def of_group(self, group: str) -> list[JoinToken]:
        return [t for t in self.all() if t.group == group]

    def mint(self, *, group: str, holder: str, ttl: int, reason: str) -> str:
        """A new token for ``holder`` (a machine, or a pool), valid for ``ttl`` seconds; its value, for the
        bootstrap document (and nothing else)."""
        value = tokens.new_token()
        expires = tokens.utc_now() + datetime.timedelta(seconds=ttl)
        manifest = tokens.token_secret(value, group=group, holder=holder, expires=expires, cluster=self.ctx.cluster)
        name = manifest["metadata"]["name"]
        self.ctx.ops.call(
            self.api,
            "create_secret",
            resource=f"Secret {tokens.TOKEN_NAMESPACE}/{name} (join token of {holder})",
            reason=reason,
            predicted={},
            manifest=manifest,
        )
        token = tokens.parse_token_secret(manifest)
        if token is not None and self._found is not None:
            self._found.append(token)
        return value

    def renew(self, token: JoinToken, ttl: int) -> None:
        expires = tokens.utc_now() + datetime.timedelta(seconds=ttl)
        self.ctx.ops.call(
            self.api,
            "patch_secret",
            resource=f"Secret {tokens.TOKEN_NAMESPACE}/{token.secret_name} (join token of {token.holder})",
            reason=f"{token.holder} has not joined yet and its token expires within {ttl // 2}s",
            predicted={},
            namespace=tokens.TOKEN_NAMESPACE,
            name=token.secret_name,
            patch=tokens.expiration_patch(expires),
        )

    def delete(self, token: JoinToken, reason: str) -> None:
        try:
            self.ctx.ops.call(
                self.api,
                "delete_secret",
                resource=f"Secret {tokens.TOKEN_NAMESPACE}/{token.secret_name} (join token of {token.holder})",
                reason=reason,
                predicted={},
                namespace=tokens.TOKEN_NAMESPACE,
                name=token.secret_name,
            )
        except RemoteError as e:
            if e.status != 404:  # the token cleaner was first
                raise
        if self._found is not None:
            self._found = [t for t in self._found if t.id != token.id]

    def remove_legacy(self) -> None:
        """The token older releases minted at ``kubeadm init`` never expires: it goes (no machine needs it now)."""
        for token in [t for t in self.all() if tokens.is_legacy(t, self.ctx.cluster)]:
            self.delete(token, "a bootstrap token that never expires (minted by a release before 0.2.0)")


# The init token, for joins that cannot mint their own ----------------------------------------------------------------
def remember_init_token(ctx: Context, value: str, ttl: int) -> None:
    """Keep the token ``kubeadm init`` creates (expiring after ``ttl``) on the controller's side, so the machines
    launched while the cluster's API cannot be asked - the rest of a first build from outside the cluster's network
    - can join with it until it has too little life left (:func:`recall_init_token`)."""
    name = tokens.init_token_secret_name(ctx.cluster)
    expires = tokens.utc_now() + datetime.timedelta(seconds=ttl)
    content = json.dumps({"token": value, "expires": tokens.rfc3339(expires)})
    client = ctx.client("secretsmanager")
    created = ctx.ops.call_unless_refused(
        client,
        "create_secret",
        resource=name,
        reason="kubeadm init's token, for the joins of a first build without the Kubernetes API",
        refused=("ResourceExistsException",),
        predicted={"Name": name},
        Name=name,
        Description=f"clusterapi.aws: kubeadm init's token of cluster {ctx.cluster}, expires {tokens.rfc3339(expires)}",
        SecretString=content,
        ClientRequestToken=new_client_token(),
        Tags=dict_to_tags(ctx.tags(ROLE_CONTROL_PLANE, name, {tokens.EXPIRES_TAG: tokens.rfc3339(expires)})),
    )
    if created is None:  # a control plane initialised again (the cluster was rebuilt): the new init's token
        ctx.ops.call(
            client,
            "put_secret_value",
            resource=name,
            reason="a new kubeadm init",
            SecretId=name,
            SecretString=content,
            ClientRequestToken=new_client_token(),
        )
        ctx.ops.call(
            client,
            "tag_resource",
            resource=name,
            reason="a new kubeadm init",
            SecretId=name,
            Tags=[{"Key": tokens.EXPIRES_TAG, "Value": tokens.rfc3339(expires)}],
        )


def recall_init_token(ctx: Context, margin: int) -> str | None:
    """The init token while more than ``margin`` seconds of it are left (a machine needs that to boot and join);
    None otherwise. One ``GetSecretValue``, only on the way to refusing a join."""
    answer = get_secret_value(ctx, tokens.init_token_secret_name(ctx.cluster))
    try:
        stored = json.loads((answer or {}).get("SecretString") or "{}")
        expires = datetime.datetime.fromisoformat(str(stored["expires"]).replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError):
        return None
    if (expires - tokens.utc_now()).total_seconds() <= margin or not tokens.TOKEN_PATTERN.match(
        stored.get("token", "")
    ):
        return None
    return str(stored["token"])
