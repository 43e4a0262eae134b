# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Credentials minted per run: what the certificate says, that it chains to the CA, and that its key never rests on
disk unencrypted while Python's ssl loads it."""

from __future__ import annotations

import base64
import datetime
import ssl
import urllib.parse

import pytest
from botocore.credentials import Credentials
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki
from ansible_collections.clusterapi.aws.plugins.module_utils.workload import credentials

CA_CERT, CA_KEY = pki.new_ca("kubernetes")


def test_a_minted_certificate_names_the_user_and_groups_and_is_short_lived():
    now = datetime.datetime.now(datetime.timezone.utc)
    identity = credentials.mint_client_certificate(CA_CERT, CA_KEY, "alice", ("system:masters",), now=now)
    cert = x509.load_pem_x509_certificate(identity.certificate.encode())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:masters"]
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert credentials._not_after(cert) - now <= credentials.CLIENT_LIFETIME  # cryptography 41 lacks _utc
    ca = x509.load_pem_x509_certificate(CA_CERT.encode())
    cert.verify_directly_issued_by(ca)
    assert "KEY" not in repr(identity) and identity.key not in repr(identity)


def test_the_key_is_loaded_through_an_encrypted_file_that_is_gone_afterwards(monkeypatch):
    identity = credentials.mint_client_certificate(CA_CERT, CA_KEY, "alice")
    seen: dict[str, str] = {}
    original = ssl.SSLContext.load_cert_chain

    def spy(self, certfile, keyfile=None, password=None):
        with open(certfile) as handle:
            seen["content"] = handle.read()
        seen["path"] = certfile
        return original(self, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    context = credentials.tls_context(CA_CERT, identity)
    assert "ENCRYPTED PRIVATE KEY" in seen["content"]
    assert identity.key.strip() not in seen["content"]
    with pytest.raises(FileNotFoundError):
        open(seen["path"])
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_a_context_for_the_clusters_ca_trusts_that_ca_alone(monkeypatch):
    """The system's CA bundle is neither trusted nor read (loading it costs tens of milliseconds per context)."""
    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", lambda *a, **k: pytest.fail("system CAs loaded"))
    context = credentials.tls_context(CA_CERT)
    assert len(context.get_ca_certs()) == 1 and context.verify_mode == ssl.CERT_REQUIRED


def test_without_a_ca_the_system_bundle_is_trusted(monkeypatch):
    loaded = []
    original = ssl.SSLContext.load_default_certs
    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", lambda self, *a: loaded.append(original(self, *a)))
    credentials.tls_context(None)
    assert len(loaded) == 1


def test_etcd_contexts_verify_the_chain_but_not_the_name():
    identity = credentials.mint_client_certificate(CA_CERT, CA_KEY, credentials.ETCD_CLIENT_NAME)
    context = credentials.tls_context(CA_CERT, identity, check_hostname=False)
    assert context.verify_mode == ssl.CERT_REQUIRED and not context.check_hostname


def test_the_eks_token_is_a_presigned_get_caller_identity_for_one_cluster():
    token = credentials.eks_token(Credentials("AKIDEXAMPLE", "secret"), "eu-west-1", "prod")
    assert token.startswith("k8s-aws-v1.")
    encoded = token[len("k8s-aws-v1.") :]
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    assert url.startswith("https://sts.eu-west-1.amazonaws.com/")
    assert query["Action"] == ["GetCallerIdentity"] and "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0]
    assert query["X-Amz-Expires"] == ["60"]
