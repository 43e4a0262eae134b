# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bootstrap data off user data: chunking per backend, names, tokens, the boot hook and the MIME document."""

from __future__ import annotations

import base64
import email
import gzip
import os
import uuid

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import (
    SECRETS_MANAGER,
    SSM,
    BootstrapRef,
    boot_script,
    chunks_for,
    compress,
    new_prefix,
    store,
    user_data,
)

UID = uuid.UUID("12345678-1234-5678-1234-567812345678")
# Random bytes do not compress: sizes of the stored data are then predictable.
NOISE = os.urandom(20000)


def test_secrets_manager_chunks_are_7000_byte_gzip_pieces():
    parts = chunks_for(SECRETS_MANAGER, NOISE)
    assert all(isinstance(p, bytes) for p in parts)
    assert [len(p) for p in parts[:-1]] == [7000] * (len(parts) - 1)
    assert 0 < len(parts[-1]) <= 7000
    assert gzip.decompress(b"".join(parts)) == NOISE


def test_ssm_chunks_are_4000_char_base64_pieces():
    parts = chunks_for(SSM, NOISE)
    assert all(isinstance(p, str) for p in parts)
    assert [len(p) for p in parts[:-1]] == [4000] * (len(parts) - 1)
    assert gzip.decompress(base64.b64decode("".join(parts))) == NOISE


@pytest.mark.parametrize("backend", [SECRETS_MANAGER, SSM])
def test_a_small_document_is_one_entry(backend):
    assert len(chunks_for(backend, b"#cloud-config\n{}\n")) == 1


def test_compression_is_deterministic():
    assert compress(b"x" * 1000) == compress(b"x" * 1000)


def test_prefixes_and_entry_names_follow_capa():
    sm = BootstrapRef(SECRETS_MANAGER, new_prefix(SECRETS_MANAGER, UID), 3)
    assert sm.prefix == f"aws.cluster.x-k8s.io/{UID}"
    assert sm.entry_names() == [f"aws.cluster.x-k8s.io/{UID}-{i}" for i in range(3)]
    ssm = BootstrapRef(SSM, new_prefix(SSM, UID), 2)
    assert ssm.prefix == f"/cluster.x-k8s.io/{UID}"
    assert ssm.entry_names() == [f"/cluster.x-k8s.io/{UID}/0", f"/cluster.x-k8s.io/{UID}/1"]


@pytest.mark.parametrize("backend", [SECRETS_MANAGER, SSM])
def test_the_tag_value_round_trips(backend):
    ref = BootstrapRef(backend, new_prefix(backend, UID), 4)
    assert BootstrapRef.from_tag(ref.tag_value()) == ref


@pytest.mark.parametrize("value", [None, "", "s3:x:1", "secrets-manager:x", "secrets-manager:x:0", "ssm:x:y"])
def test_bad_tag_values_are_ignored(value):
    assert BootstrapRef.from_tag(value) is None


class _Recording:
    """A context whose every mutating call is only recorded (``ops.call``'s parameters)."""

    def __init__(self) -> None:
        self.ops = self
        self.calls: list[dict] = []

    def client(self, service):
        return service

    def call(self, client, method, **params):
        self.calls.append({"client": client, "method": method, **params})
        return {}


def test_request_tokens_are_new_for_each_create():
    """A secret re-created after a delete must not carry its predecessor's token (AWS would answer with that one)."""
    ctx = _Recording()
    store(ctx, SECRETS_MANAGER, "demo-md-0-abcde", NOISE, {}, UID)
    store(ctx, SECRETS_MANAGER, "demo-md-0-abcde", NOISE, {}, UID)
    tokens = [c["ClientRequestToken"] for c in ctx.calls]
    assert len(tokens) == 2 * len(chunks_for(SECRETS_MANAGER, NOISE)) and len(set(tokens)) == len(tokens)
    assert all(32 <= len(t) <= 64 for t in tokens)  # Secrets Manager's limits


def test_shared_entries_boot_hook_only_reads():
    ref = BootstrapRef(SECRETS_MANAGER, "aws.cluster.x-k8s.io/u", 2)
    shared = boot_script("us-east-1", ref, delete_after_fetch=False)
    assert "get-secret-value" in shared and "delete-secret" not in shared
    assert "delete-secret" in boot_script("us-east-1", ref)
    ssm = BootstrapRef(SSM, "/cluster.x-k8s.io/u", 1)
    assert "delete-parameter" not in boot_script("us-east-1", ssm, delete_after_fetch=False)


@pytest.mark.parametrize(
    "backend, fetch, delete",
    [
        (SECRETS_MANAGER, "secretsmanager get-secret-value", 'delete-secret --region "$REGION" --force-delete'),
        (SSM, 'ssm get-parameter --region "$REGION" --with-decryption', "ssm delete-parameter"),
    ],
)
def test_boot_script_fetches_deletes_and_restarts_cloud_init(backend, fetch, delete):
    ref = BootstrapRef(backend, new_prefix(backend, UID), 3)
    script = boot_script("eu-west-1", ref)
    assert script.startswith("#!/bin/bash\n")
    assert 'REGION="eu-west-1"' in script
    assert f'PREFIX="{ref.prefix}"' in script
    assert "CHUNKS=3" in script
    assert fetch in script and delete in script
    assert "seq 1 10" in script and "sleep 10" in script  # retries
    assert "/etc/secret-userdata.txt" in script
    assert "gunzip" in script and script.rstrip().endswith("systemctl restart cloud-init")
    assert script.index("delete") > script.index("get-")


def test_user_data_is_mime_with_a_boothook_and_an_include():
    script = boot_script("us-east-1", BootstrapRef(SECRETS_MANAGER, new_prefix(SECRETS_MANAGER, UID), 1))
    document = user_data(script)
    assert document == user_data(script)  # deterministic (fixed boundary)
    message = email.message_from_string(document)
    assert message.get_content_type() == "multipart/mixed"
    parts = message.get_payload()
    assert [p.get_content_type() for p in parts] == ["text/cloud-boothook", "text/x-include-url"]
    assert parts[0].get_payload(decode=True).decode() == script
    assert parts[1].get_payload(decode=True).decode().strip() == "file:///etc/secret-userdata.txt"
    assert len(document.encode()) < 16384  # EC2's user-data limit


def test_user_data_carries_no_secret():
    secret_document = b"#cloud-config\nwrite_files: [{content: '-----BEGIN RSA PRIVATE KEY-----'}]\n"
    ref = BootstrapRef(
        SECRETS_MANAGER, new_prefix(SECRETS_MANAGER, UID), len(chunks_for(SECRETS_MANAGER, secret_document))
    )
    document = user_data(boot_script("us-east-1", ref))
    assert "PRIVATE KEY" not in document and "write_files" not in document


# AWS side (botocore Stubber: the leftover-secret path cannot be produced on demand against moto) -------------------
class _StubContext:
    """Just what ``store``/``delete`` use from a Context: clients and the plan recorder."""

    def __init__(self, client) -> None:
        from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations
        from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient

        self._client = RetryingClient(client, retries=0)
        self.ops = Operations(check_mode=False)

    def client(self, service):
        return self._client


def _secrets_client():
    import boto3

    return boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def test_a_leftover_secret_is_force_deleted_and_created_again():
    from botocore.stub import ANY, Stubber

    from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import store

    client = _secrets_client()
    name = f"aws.cluster.x-k8s.io/{UID}-0"
    create = {
        "Name": name,
        "SecretBinary": ANY,
        "ClientRequestToken": ANY,
        "Tags": [{"Key": "Name", "Value": "demo-md-0-abcde"}],
        "Description": ANY,
    }
    with Stubber(client) as stub:
        stub.add_client_error("create_secret", "ResourceExistsException", expected_params=create)
        stub.add_response("delete_secret", {}, {"SecretId": name, "ForceDeleteWithoutRecovery": True})
        stub.add_response("create_secret", {"Name": name}, create)
        ctx = _StubContext(client)
        ref = store(ctx, SECRETS_MANAGER, "demo-md-0-abcde", b"#cloud-config\n", {"Name": "demo-md-0-abcde"}, UID)
        stub.assert_no_pending_responses()
    assert ref == BootstrapRef(SECRETS_MANAGER, f"aws.cluster.x-k8s.io/{UID}", 1)
    assert [p.call for p in ctx.ops.plan] == [
        "secretsmanager:CreateSecret",
        "secretsmanager:DeleteSecret",
        "secretsmanager:CreateSecret",
    ]


def test_deleting_entries_the_node_already_removed_is_fine():
    from botocore.stub import Stubber

    from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import delete

    client = _secrets_client()
    ref = BootstrapRef(SECRETS_MANAGER, f"aws.cluster.x-k8s.io/{UID}", 2)
    with Stubber(client) as stub:
        stub.add_client_error("delete_secret", "ResourceNotFoundException")
        stub.add_response("delete_secret", {})
        delete(_StubContext(client), ref, "demo-md-0-abcde")
        stub.assert_no_pending_responses()
