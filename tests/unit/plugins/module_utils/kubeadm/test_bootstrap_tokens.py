# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bootstrap tokens as values: their Secret as kube-apiserver reads it, and the decisions about their life."""

from __future__ import annotations

import base64
import datetime
import re

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import bootstrap_tokens as t

NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)


def token(expires_in: float | None, group: str | None = "md-0", description: str = "") -> t.JoinToken:
    expires = None if expires_in is None else NOW + datetime.timedelta(seconds=expires_in)
    return t.JoinToken("abcdef", "0123456789abcdef", group, "demo-md-0-xxxxx", expires, description)


@pytest.mark.parametrize("attempt", range(20))
def test_tokens_have_kubeadms_form_and_differ(attempt):
    first, second = t.new_token(), t.new_token()
    assert t.TOKEN_PATTERN.match(first) and first != second


def test_the_secret_is_what_the_bootstrap_authenticator_and_signer_read():
    expires = NOW + datetime.timedelta(minutes=15)
    secret = t.token_secret(
        "abcdef.0123456789abcdef", group="md-0", holder="demo-md-0-xxxxx", expires=expires, cluster="demo"
    )
    assert secret["type"] == "bootstrap.kubernetes.io/token"
    assert secret["metadata"]["name"] == "bootstrap-token-abcdef" and secret["metadata"]["namespace"] == "kube-system"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["token-id"] == "abcdef" and data["token-secret"] == "0123456789abcdef"
    assert data["expiration"] == "2026-12-03T12:15:00Z"  # RFC 3339, as kubeadm writes it
    assert data["usage-bootstrap-authentication"] == data["usage-bootstrap-signing"] == "true"
    assert data["auth-extra-groups"] == "system:bootstrappers:kubeadm:default-node-token"
    parsed = t.parse_token_secret(secret)
    assert parsed == t.JoinToken("abcdef", "0123456789abcdef", "md-0", "demo-md-0-xxxxx", expires, data["description"])
    assert "0123456789abcdef" not in repr(parsed)  # the secret half never in a repr (a traceback, a log)


@pytest.mark.parametrize(
    "secret",
    [
        {"type": "Opaque", "data": {}},
        {"type": "bootstrap.kubernetes.io/token", "data": {"token-id": base64.b64encode(b"abcdef").decode()}},
        {"type": "bootstrap.kubernetes.io/token", "data": {"token-id": "not base64!"}},
    ],
)
def test_other_secrets_are_no_tokens(secret):
    assert t.parse_token_secret(secret) is None


def test_a_bad_value_is_never_written():
    with pytest.raises(ValueError):
        t.token_secret("ABCDEF.0123456789abcdef", group="g", holder="h", expires=NOW, cluster="c")


@pytest.mark.parametrize(
    "expires_in, joining, action",
    [
        (800, True, t.KEEP),  # more than half of 900 left
        (300, True, t.RENEW),  # less than half: CABPK refreshes it
        (-1, True, t.DELETE),  # lapsed: the machine cannot join with it any more
        (800, False, t.DELETE),  # joined (or gone): not needed any more
        (None, True, t.KEEP),  # nothing to renew; its machine's join deletes it
    ],
)
def test_a_machine_token_is_renewed_while_needed_and_deleted_after(expires_in, joining, action):
    assert t.machine_token_action(token(expires_in), joining=joining, ttl=900, now=NOW) == action


@pytest.mark.parametrize(
    "expires_in, current, action",
    [
        (50000, True, t.KEEP),
        (40000, True, t.ROTATE),  # less than half of a day
        (None, True, t.ROTATE),  # a token that never expires is replaced
        (100, False, t.KEEP),  # superseded: instances may still boot with it until it lapses
        (-1, False, t.DELETE),
        (-1, True, t.DELETE),
    ],
)
def test_a_pool_token_is_rotated_at_half_its_life_and_superseded_ones_lapse(expires_in, current, action):
    assert t.pool_token_action(token(expires_in, "mp-0"), current=current, ttl=86400, now=NOW) == action


def test_only_this_collections_never_expiring_token_is_legacy():
    legacy = token(None, group=None, description="clusterapi.aws bootstrap token of cluster demo")
    assert t.is_legacy(legacy, "demo")
    assert not t.is_legacy(legacy, "other")
    assert not t.is_legacy(token(None, group=None, description="made by an admin"), "demo")
    assert not t.is_legacy(token(600, group=None, description=legacy.description), "demo")


@pytest.mark.parametrize("ttl, ok", [(299, False), (300, True), (604800, True), (604801, False)])
def test_ttl_bounds(ttl, ok):
    if ok:
        t.check_token_ttl(ttl, "bootstrap.token_ttl")
        return
    with pytest.raises(SpecError, match=re.escape("between 300 and 604800")):
        t.check_token_ttl(ttl, "bootstrap.token_ttl")


def test_ttl_text_is_a_go_duration():
    assert t.ttl_text(900) == "900s" and t.rfc3339(NOW) == "2026-12-03T12:00:00Z"
