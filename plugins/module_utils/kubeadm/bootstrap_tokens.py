# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: kubeadm bootstrap tokens that expire, as CAPI's kubeadm bootstrap provider (CABPK) hands them out.

A machine joins the cluster with a bootstrap token: kube-apiserver authenticates it from a
``bootstrap.kubernetes.io/token`` Secret ``kube-system/bootstrap-token-<id>``, and the bootstrap signer signs
``kube-public/cluster-info`` with it for kubeadm's discovery. CABPK mints one token per join with a short TTL (15
minutes), renews it while the machine has not joined and lets it lapse afterwards. Nothing here talks to a cluster:
these are the token values, the Secret a token lives in, and the decisions about a token's life
(:func:`token_action`). ``workload/join_tokens.py`` carries them out.

Who a token is for is written on its Secret: the label :data:`GROUP_LABEL` (the machine group or pool) and the
annotation :data:`HOLDER_ANNOTATION` (the machine, or the pool). A token of this collection's older releases - no
label, no expiry, the description :data:`LEGACY_DESCRIPTION` - never expires and is removed (:func:`is_legacy`).
"""

from __future__ import annotations

import base64
import datetime
import re
import secrets
import string
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..kernel.errors import SpecError

TOKEN_NAMESPACE = "kube-system"
TOKEN_TYPE = "bootstrap.kubernetes.io/token"
TOKEN_PATTERN = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
NODE_GROUP = "system:bootstrappers:kubeadm:default-node-token"
GROUP_LABEL = "clusterapi.aws/join-token-group"
HOLDER_ANNOTATION = "clusterapi.aws/join-token-holder"
LEGACY_DESCRIPTION = "clusterapi.aws bootstrap token of cluster "
_ALPHABET = string.ascii_lowercase + string.digits

# CABPK's DefaultTokenTTL: a machine joins within minutes of its launch; the token is renewed while it has not.
DEFAULT_MACHINE_TTL = 15 * 60
# A pool's instances join whenever its group scales out, long after the run that wrote the template: the token
# must outlive the time between two reconciles (an AWX schedule), so it is rotated, not renewed per instance.
DEFAULT_POOL_TTL = 24 * 60 * 60
MIN_TTL = 5 * 60
MAX_TTL = 7 * 24 * 60 * 60

# Where kubeadm init's token waits for the joins of a first build that cannot reach the API: next to the PKI
# secret, outside the prefix nodes may read (``aws.cluster.x-k8s.io/``); deleted with the PKI (capa_kubeadm).
INIT_TOKEN_SECRET = "clusterapi.aws/{cluster}/init-token"
# Its expiry, as a tag: capa_kubeadm's one ListSecrets per run sees it without reading the value, and deletes it.
EXPIRES_TAG = "clusterapi.aws/expires"

RENEW = "renew"
ROTATE = "rotate"
DELETE = "delete"
KEEP = "keep"


def init_token_secret_name(cluster: str) -> str:
    return INIT_TOKEN_SECRET.format(cluster=cluster)


def init_token_expired(tags: Mapping[str, str], now: datetime.datetime | None = None) -> bool:
    """The init-token secret's :data:`EXPIRES_TAG` has passed (a secret without it is left to the cluster's
    deletion)."""
    try:
        when = datetime.datetime.fromisoformat(tags[EXPIRES_TAG].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return False
    return when <= (now or utc_now())


def check_token_ttl(ttl: int, where: str) -> None:
    """A token lives at least five minutes (a machine needs that to boot and join) and at most a week."""
    if not MIN_TTL <= ttl <= MAX_TTL:
        raise SpecError(where, f"must be between {MIN_TTL} and {MAX_TTL} seconds (is {ttl})")


def new_token() -> str:
    """A kubeadm bootstrap token ``[a-z0-9]{6}.[a-z0-9]{16}`` from the OS's CSPRNG."""
    pick = secrets.choice
    return "".join(pick(_ALPHABET) for i in range(6)) + "." + "".join(pick(_ALPHABET) for i in range(16))


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(when: datetime.datetime) -> str:
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ttl_text(seconds: int) -> str:
    """A TTL as kubeadm's ``bootstrapTokens[].ttl`` takes it (a Go duration)."""
    return f"{int(seconds)}s"


@dataclass(frozen=True)
class JoinToken:
    """One bootstrap token as its Secret says it (the secret half never in ``repr``)."""

    id: str
    secret: str = field(repr=False)
    group: str | None  # the machine group or pool it was minted for; None for a token we did not label
    holder: str | None  # the machine (or pool) that joins with it
    expires: datetime.datetime | None  # None: never
    description: str = ""

    @property
    def value(self) -> str:
        return f"{self.id}.{self.secret}"

    @property
    def secret_name(self) -> str:
        return f"bootstrap-token-{self.id}"

    def remaining(self, now: datetime.datetime) -> float | None:
        return None if self.expires is None else (self.expires - now).total_seconds()

    def expired(self, now: datetime.datetime) -> bool:
        left = self.remaining(now)
        return left is not None and left <= 0


def token_secret(value: str, *, group: str, holder: str, expires: datetime.datetime, cluster: str) -> dict[str, Any]:
    """The Secret kube-apiserver authenticates ``value`` from (and the bootstrap signer signs cluster-info with)."""
    match = TOKEN_PATTERN.match(value)
    if not match:
        raise ValueError("not a bootstrap token")
    token_id, token_secret_ = match.groups()
    data = {
        "token-id": token_id,
        "token-secret": token_secret_,
        "expiration": rfc3339(expires),
        "usage-bootstrap-authentication": "true",
        "usage-bootstrap-signing": "true",
        "auth-extra-groups": NODE_GROUP,
        "description": f"clusterapi.aws join token of {holder} (cluster {cluster})",
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": TOKEN_TYPE,
        "metadata": {
            "name": f"bootstrap-token-{token_id}",
            "namespace": TOKEN_NAMESPACE,
            "labels": {GROUP_LABEL: group},
            "annotations": {HOLDER_ANNOTATION: holder},
        },
        "data": {key: base64.b64encode(text.encode()).decode() for key, text in data.items()},
    }


def expiration_patch(expires: datetime.datetime) -> dict[str, Any]:
    """The merge patch that moves a token's expiry (CABPK's refresh)."""
    return {"data": {"expiration": base64.b64encode(rfc3339(expires).encode()).decode()}}


def parse_token_secret(secret: Mapping[str, Any]) -> JoinToken | None:
    """The token a ``bootstrap.kubernetes.io/token`` Secret holds, or None for any other Secret."""
    if secret.get("type") != TOKEN_TYPE:
        return None
    metadata = secret.get("metadata") or {}
    data = {}
    for key, text in (secret.get("data") or {}).items():
        try:
            data[key] = base64.b64decode(text).decode()
        except (ValueError, UnicodeDecodeError):
            continue
    if not data.get("token-id") or not data.get("token-secret"):
        return None
    expires = None
    if data.get("expiration"):
        try:
            expires = datetime.datetime.fromisoformat(data["expiration"].replace("Z", "+00:00"))
        except ValueError:
            expires = None
    return JoinToken(
        id=data["token-id"],
        secret=data["token-secret"],
        group=(metadata.get("labels") or {}).get(GROUP_LABEL),
        holder=(metadata.get("annotations") or {}).get(HOLDER_ANNOTATION),
        expires=expires,
        description=data.get("description", ""),
    )


def is_legacy(token: JoinToken, cluster: str) -> bool:
    """A token of this collection's releases before 0.2.0: minted at ``kubeadm init``, never expiring."""
    return token.group is None and token.expires is None and token.description == f"{LEGACY_DESCRIPTION}{cluster}"


def machine_token_action(token: JoinToken, *, joining: bool, ttl: int, now: datetime.datetime) -> str:
    """What a reconcile does with a machine's token (CABPK): renewed while its machine is still on its way to join
    and less than half its TTL is left; deleted once the machine joined or went, or once it expired
    (kube-controller-manager's token cleaner would remove it then too, where it runs)."""
    if token.expired(now) or not joining:
        return DELETE
    left = token.remaining(now)
    return RENEW if left is not None and left < ttl / 2 else KEEP


def pool_token_action(token: JoinToken, *, current: bool, ttl: int, now: datetime.datetime) -> str:
    """What a reconcile does with a pool's token: the ``current`` one (the newest) is rotated once less than half
    of its TTL is left - a new token in a new template version, so an instance launched until the next reconcile
    still finds a valid one; superseded ones are kept for the instances booting with them, until they expire."""
    if token.expired(now):
        return DELETE
    left = token.remaining(now)
    if current and (left is None or left < ttl / 2):
        return ROTATE
    return KEEP
