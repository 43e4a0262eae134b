# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cluster PKI: generation (kubeadm-like CAs, the service-account pair, the token), the discovery hash
(checked against openssl), the validation of a PKI the user brings, and the secret it is kept in."""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import shutil
import subprocess

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as k


def cert(text: str):
    return x509.load_pem_x509_certificate(text.encode())


class TestGeneratedPki:
    @pytest.mark.parametrize(
        "cert_field,key_field,common_name",
        [pair[1:] for pair in k.CA_PAIRS],
    )
    def test_cas_are_kubeadm_like(self, pki, cert_field, key_field, common_name):
        ca = cert(getattr(pki, cert_field))
        assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == common_name
        assert ca.issuer == ca.subject
        constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
        assert constraints.critical and constraints.value.ca is True
        usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.key_cert_sign and usage.digital_signature and usage.key_encipherment and not usage.crl_sign
        # cryptography >= 42 has the timezone-aware properties; the floor (41) only the naive UTC ones.
        after = getattr(ca, "not_valid_after_utc", None) or ca.not_valid_after
        before = getattr(ca, "not_valid_before_utc", None) or ca.not_valid_before
        lifetime = after - before
        assert datetime.timedelta(days=3650) <= lifetime <= datetime.timedelta(days=3650, minutes=10)
        key = serialization.load_pem_private_key(getattr(pki, key_field).encode(), password=None)
        assert key.key_size == 2048
        assert getattr(pki, key_field).startswith("-----BEGIN RSA PRIVATE KEY-----")
        ca.verify_directly_issued_by(ca)  # self-signed with its own key

    def test_service_account_pair_matches(self, pki):
        public = serialization.load_pem_public_key(pki.service_account_public_key.encode())
        private = serialization.load_pem_private_key(pki.service_account_private_key.encode(), password=None)
        assert public.public_numbers() == private.public_key().public_numbers()

    def test_every_generation_is_new(self, pki, other_pki):
        assert pki.cluster_ca_key != other_pki.cluster_ca_key

    def test_repr_hides_secrets(self, pki):
        assert "BEGIN" not in repr(pki)

    def test_the_secret_holds_no_bootstrap_token(self, pki):
        """Tokens are minted per machine in the cluster and expire: the PKI secret keeps none."""
        assert "token" not in json.loads(pki.to_secret_string())

    def test_a_stored_never_expiring_token_is_a_difference_and_is_not_written_again(self, pki):
        """A secret written by a release before 0.2.0 holds a bootstrap token that never expires: read, it
        differs (so capa_kubeadm rewrites the secret), and what is written has no token."""
        legacy = json.dumps({**json.loads(pki.to_secret_string()), "bootstrap_token": "abcdef.0123456789abcdef"})
        stored = k.ClusterPki.from_secret_string(legacy, "s")
        assert stored == pki and stored.retired == ("bootstrap_token",)
        wanted = k.desired_pki(stored, None, pki.service_cidr, pki.pod_cidr)
        assert wanted.differing_fields(stored) == ["bootstrap_token (retired)"]
        assert "abcdef" not in wanted.to_secret_string()

    def test_secret_round_trip(self, pki):
        assert k.ClusterPki.from_secret_string(pki.to_secret_string(), "s") == pki
        assert pki.differing_fields(k.ClusterPki.from_secret_string(pki.to_secret_string(), "s")) == []

    @pytest.mark.parametrize("text", ["not json", '{"format": 99}', '{"format": 1, "cluster_ca_cert": "x"}'])
    def test_foreign_secret_content_is_refused(self, text):
        with pytest.raises(k.ReconcileError):
            k.ClusterPki.from_secret_string(text, "secret x")


class TestDiscoveryHash:
    def test_matches_openssl(self, pki, tmp_path):
        if not shutil.which("openssl"):
            pytest.fail("openssl binary missing: install it (apt-get install -y openssl)")
        path = tmp_path / "ca.crt"
        path.write_text(pki.cluster_ca_cert)
        pub = subprocess.run(
            ["openssl", "x509", "-pubkey", "-noout", "-in", str(path)], capture_output=True, check=True
        )
        der = subprocess.run(
            ["openssl", "pkey", "-pubin", "-outform", "der"], input=pub.stdout, capture_output=True, check=True
        )
        assert pki.ca_cert_hash == "sha256:" + hashlib.sha256(der.stdout).hexdigest()
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", pki.ca_cert_hash)


class TestSuppliedPki:
    def ca_pair(self, pki, name):
        return {f"{name}_cert": getattr(pki, f"{name}_cert"), f"{name}_key": getattr(pki, f"{name}_key")}

    def test_valid_pairs_pass(self, pki):
        supplied = {**self.ca_pair(pki, "cluster_ca"), **self.ca_pair(pki, "etcd_ca")}
        supplied.update(
            service_account_public_key=pki.service_account_public_key,
            service_account_private_key=pki.service_account_private_key,
        )
        k.check_supplied_pki(supplied)
        k.check_supplied_pki(None)

    def leaf_cert(self, pki):
        ca_key = serialization.load_pem_private_key(pki.cluster_ca_key.encode(), password=None)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "leaf")])
        leaf = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(cert(pki.cluster_ca_cert).subject)
            .public_key(key.public_key())
            .serial_number(1)
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(ca_key, hashes.SHA256())
        )
        key_text = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return k.cert_pem(leaf), key_text

    @pytest.mark.parametrize(
        "case,field,reason",
        [
            ("cert_without_key", "pki.cluster_ca_key", "is required"),
            ("key_without_cert", "pki.etcd_ca_cert", "is required"),
            ("garbage_cert", "pki.cluster_ca_cert", "not a PEM-encoded X.509"),
            ("garbage_key", "pki.cluster_ca_key", "private key"),
            ("mismatched_key", "pki.cluster_ca_key", "does not match"),
            ("not_a_ca", "pki.front_proxy_ca_cert", "not a CA"),
            ("sa_mismatch", "pki.service_account_private_key", "does not match"),
            ("sa_garbage_public", "pki.service_account_public_key", "public key"),
        ],
    )
    def test_errors_name_the_field(self, pki, other_pki, case, field, reason):
        supplied = {
            "cert_without_key": {"cluster_ca_cert": pki.cluster_ca_cert},
            "key_without_cert": {"etcd_ca_key": pki.etcd_ca_key},
            "garbage_cert": {"cluster_ca_cert": "hello", "cluster_ca_key": pki.cluster_ca_key},
            "garbage_key": {"cluster_ca_cert": pki.cluster_ca_cert, "cluster_ca_key": "hello"},
            "mismatched_key": {"cluster_ca_cert": pki.cluster_ca_cert, "cluster_ca_key": other_pki.cluster_ca_key},
            "not_a_ca": dict(zip(("front_proxy_ca_cert", "front_proxy_ca_key"), self.leaf_cert(pki), strict=True)),
            "sa_mismatch": {
                "service_account_public_key": pki.service_account_public_key,
                "service_account_private_key": other_pki.service_account_private_key,
            },
            "sa_garbage_public": {
                "service_account_public_key": "nope",
                "service_account_private_key": pki.service_account_private_key,
            },
        }[case]
        with pytest.raises(SpecError) as error:
            k.check_supplied_pki(supplied)
        assert error.value.field == field and reason in error.value.reason
        assert "BEGIN" not in str(error.value)

    def test_expired_ca_is_refused(self, pki):
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3651)
        with pytest.raises(SpecError) as error:
            k.check_supplied_pki(self.ca_pair(pki, "cluster_ca"), now=later)
        assert error.value.field == "pki.cluster_ca_cert" and "expired" in error.value.reason

    def test_supplied_pairs_replace_stored_ones(self, pki, other_pki):
        merged = k.desired_pki(pki, self.ca_pair(other_pki, "etcd_ca"), pki.service_cidr, pki.pod_cidr)
        assert merged.etcd_ca_cert == other_pki.etcd_ca_cert and merged.cluster_ca_cert == pki.cluster_ca_cert
        assert merged.differing_fields(pki) == ["etcd_ca_cert", "etcd_ca_key"]

    def test_nothing_supplied_keeps_what_is_stored(self, pki):
        assert k.desired_pki(pki, {"cluster_ca_cert": None}, pki.service_cidr, pki.pod_cidr) == pki

    def test_pem_whitespace_is_not_a_difference(self, pki):
        padded = {"cluster_ca_cert": "\n" + pki.cluster_ca_cert + "\n\n", "cluster_ca_key": pki.cluster_ca_key}
        assert k.desired_pki(pki, padded, pki.service_cidr, pki.pod_cidr).differing_fields(pki) == []


def test_secret_name_is_outside_the_node_readable_prefix():
    assert k.secret_name("demo") == "clusterapi.aws/demo/pki"
    assert not k.secret_name("demo").startswith("aws.cluster.x-k8s.io/")


def test_the_secrets_tags_say_the_public_facts_of_the_version_they_describe(pki):
    """capa_kubeadm tags the PKI secret with its public facts and the version they describe; a ListSecrets entry
    then says them (the steady run, a worker's join document) while that version is the current one and the
    secret the cluster's."""
    tags = {**k.metadata_tags(pki, "v-1"), "sigs.k8s.io/cluster-api-provider-aws/cluster/c1": "owned"}
    assert all(len(value) <= 256 for value in tags.values())  # Secrets Manager's limit
    assert not any("PRIVATE" in value or "BEGIN" in value for value in tags.values())  # public facts only
    described = k.described_metadata(tags, "v-1")
    assert k.metadata_of(described) == k.pki_metadata(pki)
    assert described["ca_cert_digest"] == k.ca_cert_digest(pki.cluster_ca_cert)

    def listed(version, **extra):
        every = {**tags, **extra}
        return {
            "Tags": [{"Key": key, "Value": value} for key, value in every.items()],
            "SecretVersionsToStages": {version: ["AWSCURRENT"], "v-0": ["AWSPREVIOUS"]},
        }

    assert k.public_pki_of(listed("v-1"), "c1") == k.PublicPki(pki.ca_cert_hash, pki.service_cidr, pki.pod_cidr)
    assert k.public_pki_of(listed("v-2"), "c1") is None  # someone wrote another version
    assert k.public_pki_of(listed("v-1"), "c2") is None  # not the cluster's
    assert k.public_pki_of(listed("v-1", **{k.CA_CERT_DIGEST_TAG: ""}), "c1") is None  # incomplete
    assert k.described_metadata(tags, None) is None
