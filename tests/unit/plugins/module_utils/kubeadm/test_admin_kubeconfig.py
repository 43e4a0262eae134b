# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The admin kubeconfig: names and certificate, when an existing file is kept or rewritten, and the in-memory
kubeconfig the capa_kubeconfig lookup builds."""

from __future__ import annotations

import base64
import datetime

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import admin_kubeconfig as k
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.pki import ca_cert_digest, not_after


def cert(text: str):
    return x509.load_pem_x509_certificate(text.encode())


class TestKubeconfig:
    SERVER = "https://demo-apiserver.elb.example.com:6443"

    def written(self, pki):
        client_cert, client_key = k.new_admin_credentials(pki)
        return k.render_kubeconfig(pki, "demo", self.SERVER, client_cert, client_key)

    def test_names_and_admin_certificate(self, pki):
        config = yaml.safe_load(self.written(pki))
        assert [c["name"] for c in config["clusters"]] == ["demo"]
        assert [u["name"] for u in config["users"]] == ["demo-admin"]
        assert config["contexts"] == [{"name": "demo", "context": {"cluster": "demo", "user": "demo-admin"}}]
        assert config["current-context"] == "demo"
        assert config["clusters"][0]["cluster"]["server"] == self.SERVER
        client = cert(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]).decode())
        assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubernetes-admin"
        assert client.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
        eku = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]
        client.verify_directly_issued_by(cert(pki.cluster_ca_cert))

    def test_existing_file_is_kept_when_right(self, pki):
        assert k.kubeconfig_problem(self.written(pki), ca_cert_digest(pki.cluster_ca_cert), "demo", self.SERVER) is None

    @pytest.mark.parametrize(
        "mutate,problem",
        [
            (lambda t, o: None, "missing"),
            (lambda t, o: "not: [a, kubeconfig", "not a kubeconfig"),
            (lambda t, o: t.replace(":6443", ":443"), "server differs"),
            (lambda t, o: t.replace("current-context: demo", "current-context: x"), "current-context differs"),
            (lambda t, o: o, "cluster CA differs"),
        ],
    )
    def test_rewrite_reasons(self, pki, other_pki, mutate, problem):
        other = k.render_kubeconfig(pki, "demo", self.SERVER, *k.new_admin_credentials(other_pki))
        other = other.replace(
            base64.b64encode(pki.cluster_ca_cert.encode()).decode(),
            base64.b64encode(other_pki.cluster_ca_cert.encode()).decode(),
        )
        text = mutate(self.written(pki), other)
        assert problem in k.kubeconfig_problem(text, ca_cert_digest(pki.cluster_ca_cert), "demo", self.SERVER)

    def test_client_cert_from_another_ca_is_rewritten(self, pki, other_pki):
        foreign = k.render_kubeconfig(pki, "demo", self.SERVER, *k.new_admin_credentials(other_pki))
        assert (
            k.kubeconfig_problem(foreign, ca_cert_digest(pki.cluster_ca_cert), "demo", self.SERVER)
            == "client certificate not signed by the cluster CA"
        )

    def test_expiring_client_cert_is_renewed(self, pki):
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=340)
        assert (
            k.kubeconfig_problem(self.written(pki), ca_cert_digest(pki.cluster_ca_cert), "demo", self.SERVER, now=later)
            == "client certificate expires soon"
        )

    def test_ipv6_endpoint(self):
        assert k.server_url("fd00::1", 6443) == "https://[fd00::1]:6443"

    def test_an_on_demand_kubeconfig_has_a_short_lived_certificate(self, pki):
        now = datetime.datetime.now(datetime.timezone.utc)
        config = k.admin_kubeconfig(pki, "demo", "demo-apiserver.elb.example.com", 6443, datetime.timedelta(hours=1))
        text = yaml.safe_dump(config)
        assert (
            k.kubeconfig_problem(
                text, ca_cert_digest(pki.cluster_ca_cert), "demo", self.SERVER, now=now - k.CLIENT_RENEW_BEFORE
            )
            is None
        )
        client = cert(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]).decode())
        lifetime = not_after(client) - now
        assert datetime.timedelta(minutes=55) < lifetime <= datetime.timedelta(hours=1)
        client.verify_directly_issued_by(cert(pki.cluster_ca_cert))
