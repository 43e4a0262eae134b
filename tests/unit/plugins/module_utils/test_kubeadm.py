"""kubeadm bootstrap data: PKI generation and validation, token, discovery hash, cloud-init roles, kubeconfig."""

from __future__ import annotations

import base64
import datetime
import hashlib
import re
import shutil
import subprocess
from dataclasses import replace

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as k
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.kubeadm import request_token

ENDPOINT = dict(cluster="demo", endpoint_host="demo-apiserver.elb.example.com", endpoint_port=6443)


@pytest.fixture(scope="module")
def pki() -> k.ClusterPki:
    return k.generate_pki()


@pytest.fixture(scope="module")
def other_pki() -> k.ClusterPki:
    return k.generate_pki()


def render(pki, role, version="v1.31.2", machine="m-0", **over):
    args = {**ENDPOINT, **over}
    return k.render_cloud_init(pki, role, kubernetes_version=version, machine_name=machine, **args).decode()


def cloud_config(text: str) -> dict:
    header, rest = text.split("\n", 1)
    assert header == "## template: jinja"
    assert rest.startswith("#cloud-config\n")
    return yaml.safe_load(rest)


def kubeadm_docs(config: dict) -> list[dict]:
    [entry] = [f for f in config["write_files"] if f["path"] == "/run/kubeadm/kubeadm.yaml"]
    return list(yaml.safe_load_all(entry["content"]))


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
        assert pki.cluster_ca_key != other_pki.cluster_ca_key and pki.bootstrap_token != other_pki.bootstrap_token

    @pytest.mark.parametrize("attempt", range(20))
    def test_token_format(self, attempt):
        assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", k.new_bootstrap_token())

    def test_repr_hides_secrets(self, pki):
        text = repr(pki)
        assert "BEGIN" not in text and pki.bootstrap_token not in text

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

    def test_supplied_pairs_replace_stored_ones_and_keep_the_token(self, pki, other_pki):
        merged = k.desired_pki(pki, self.ca_pair(other_pki, "etcd_ca"), pki.service_cidr, pki.pod_cidr)
        assert merged.etcd_ca_cert == other_pki.etcd_ca_cert and merged.cluster_ca_cert == pki.cluster_ca_cert
        assert merged.bootstrap_token == pki.bootstrap_token
        assert merged.differing_fields(pki) == ["etcd_ca_cert", "etcd_ca_key"]

    def test_nothing_supplied_keeps_what_is_stored(self, pki):
        assert k.desired_pki(pki, {"cluster_ca_cert": None}, pki.service_cidr, pki.pod_cidr) == pki

    def test_pem_whitespace_is_not_a_difference(self, pki):
        padded = {"cluster_ca_cert": "\n" + pki.cluster_ca_cert + "\n\n", "cluster_ca_key": pki.cluster_ca_key}
        assert k.desired_pki(pki, padded, pki.service_cidr, pki.pod_cidr).differing_fields(pki) == []


CP_FILES = {
    "/etc/kubernetes/pki/ca.crt",
    "/etc/kubernetes/pki/ca.key",
    "/etc/kubernetes/pki/etcd/ca.crt",
    "/etc/kubernetes/pki/etcd/ca.key",
    "/etc/kubernetes/pki/front-proxy-ca.crt",
    "/etc/kubernetes/pki/front-proxy-ca.key",
    "/etc/kubernetes/pki/sa.pub",
    "/etc/kubernetes/pki/sa.key",
}


class TestCloudInit:
    @pytest.mark.parametrize(
        "role,files,command",
        [
            ("init", CP_FILES, "kubeadm init --config /run/kubeadm/kubeadm.yaml"),
            ("join-control-plane", CP_FILES, "kubeadm join --config /run/kubeadm/kubeadm.yaml"),
            ("join-worker", set(), "kubeadm join --config /run/kubeadm/kubeadm.yaml"),
        ],
    )
    def test_roles_get_their_files_and_command(self, pki, role, files, command):
        text = render(pki, role)
        config = cloud_config(text)
        paths = {f["path"] for f in config["write_files"]}
        assert paths == files | {"/run/kubeadm/kubeadm.yaml"}
        for entry in config["write_files"]:
            assert entry["owner"] == "root:root"
            if entry["path"].endswith(".key") or entry["path"].endswith("kubeadm.yaml"):
                assert entry["permissions"] == "0600"
        assert config["runcmd"][-1] == f"{command} && echo success > /run/cluster-api/bootstrap-success.complete"
        keys = ("BEGIN RSA PRIVATE KEY", pki.cluster_ca_cert.splitlines()[1])
        for marker in keys:
            assert (marker in text) == (role != "join-worker")

    def test_init_configuration(self, pki):
        init, cluster = kubeadm_docs(cloud_config(render(pki, "init")))
        assert init["apiVersion"] == cluster["apiVersion"] == "kubeadm.k8s.io/v1beta4"
        assert init["kind"] == "InitConfiguration" and cluster["kind"] == "ClusterConfiguration"
        [token] = init["bootstrapTokens"]
        assert token["token"] == pki.bootstrap_token
        assert token["usages"] == ["signing", "authentication"]
        assert init["nodeRegistration"] == {
            "name": "{{ ds.meta_data.local_hostname }}",
            "kubeletExtraArgs": [{"name": "cloud-provider", "value": "external"}],
        }
        assert cluster["clusterName"] == "demo"
        assert cluster["kubernetesVersion"] == "v1.31.2"
        assert cluster["controlPlaneEndpoint"] == "demo-apiserver.elb.example.com:6443"
        assert cluster["networking"] == {"podSubnet": "192.168.0.0/16", "serviceSubnet": "10.96.0.0/12"}
        assert "demo-apiserver.elb.example.com" in cluster["apiServer"]["certSANs"]

    @pytest.mark.parametrize("role,control_plane", [("join-control-plane", True), ("join-worker", False)])
    def test_join_configuration(self, pki, role, control_plane):
        [join] = kubeadm_docs(cloud_config(render(pki, role)))
        assert join["kind"] == "JoinConfiguration"
        assert join["discovery"]["bootstrapToken"] == {
            "apiServerEndpoint": "demo-apiserver.elb.example.com:6443",
            "token": pki.bootstrap_token,
            "caCertHashes": [pki.ca_cert_hash],
        }
        assert ("controlPlane" in join) is control_plane
        if control_plane:
            assert join["controlPlane"] == {}

    def test_older_kubernetes_gets_v1beta3_with_map_args(self, pki):
        init, cluster = kubeadm_docs(cloud_config(render(pki, "init", version="1.30.4")))
        assert init["apiVersion"] == "kubeadm.k8s.io/v1beta3"
        assert init["nodeRegistration"]["kubeletExtraArgs"] == {"cloud-provider": "external"}
        assert cluster["kubernetesVersion"] == "v1.30.4"

    def test_pem_files_are_written_verbatim(self, pki):
        config = cloud_config(render(pki, "init"))
        contents = {f["path"]: f["content"] for f in config["write_files"]}
        assert contents["/etc/kubernetes/pki/ca.key"] == pki.cluster_ca_key
        assert contents["/etc/kubernetes/pki/sa.pub"] == pki.service_account_public_key

    @pytest.mark.parametrize("role", k.ROLES)
    def test_deterministic(self, pki, role):
        assert render(pki, role) == render(pki, role)
        copy = k.ClusterPki.from_secret_string(pki.to_secret_string(), "s")
        assert render(copy, role) == render(pki, role)

    def test_machine_name_does_not_change_the_document_or_hash(self, pki):
        assert render(pki, "join-worker", machine="a") == render(pki, "join-worker", machine="b")
        args = dict(ENDPOINT, kubernetes_version="v1.31.2")
        assert k.cloud_init_hash(pki, "join-worker", machine_name="a", **args) == k.cloud_init_hash(
            pki, "join-worker", machine_name="b", **args
        )

    @pytest.mark.parametrize(
        "change",
        [
            {"role": "join-control-plane"},
            {"kubernetes_version": "v1.31.3"},
            {"endpoint_host": "other.example.com"},
            {"endpoint_port": 443},
            {"cluster": "other"},
        ],
    )
    def test_hash_follows_inputs(self, pki, change):
        base = dict(ENDPOINT, role="join-worker", kubernetes_version="v1.31.2")
        changed = {**base, **change}

        def digest(inputs):
            inputs = dict(inputs)
            role = inputs.pop("role")
            return k.cloud_init_hash(pki, role, **inputs)

        assert digest(base) != digest(changed)

    def test_hash_follows_pki_and_is_stable(self, pki, other_pki):
        args = dict(ENDPOINT, kubernetes_version="v1.31.2")
        first = k.cloud_init_hash(pki, "init", **args)
        assert first == k.cloud_init_hash(k.ClusterPki.from_secret_string(pki.to_secret_string(), "s"), "init", **args)
        assert first != k.cloud_init_hash(other_pki, "init", **args)
        assert first != k.cloud_init_hash(replace(pki, pod_cidr="10.244.0.0/16"), "init", **args)
        assert re.fullmatch(r"[0-9a-f]{64}", first)

    def test_unknown_role(self, pki):
        with pytest.raises(SpecError):
            render(pki, "join")

    def test_no_jinja_syntax_but_the_node_name(self, pki):
        text = render(pki, "init")
        assert re.findall(r"\{[{%#]", text) == ["{{"]


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
        assert k.kubeconfig_problem(self.written(pki), pki, "demo", self.SERVER) is None

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
        assert problem in k.kubeconfig_problem(text, pki, "demo", self.SERVER)

    def test_client_cert_from_another_ca_is_rewritten(self, pki, other_pki):
        foreign = k.render_kubeconfig(pki, "demo", self.SERVER, *k.new_admin_credentials(other_pki))
        assert (
            k.kubeconfig_problem(foreign, pki, "demo", self.SERVER) == "client certificate not signed by the cluster CA"
        )

    def test_expiring_client_cert_is_renewed(self, pki):
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=340)
        assert (
            k.kubeconfig_problem(self.written(pki), pki, "demo", self.SERVER, now=later)
            == "client certificate expires soon"
        )


class TestMisc:
    @pytest.mark.parametrize("version", ["v1.31.2", "1.31.2", "v1.30.0-rc.1"])
    def test_versions(self, version):
        k.parse_version(version)

    @pytest.mark.parametrize("version", ["", "1.31", "latest", "v1.x.2"])
    def test_bad_versions(self, version):
        with pytest.raises(SpecError) as error:
            k.parse_version(version)
        assert error.value.field == "kubernetes_version"

    def test_ipv6_endpoint(self):
        assert k.server_url("fd00::1", 6443) == "https://[fd00::1]:6443"

    def test_request_token_is_stable_per_content(self):
        assert request_token("n", "a") == request_token("n", "a") != request_token("n", "b")
        assert 32 <= len(request_token("n", "a")) <= 64

    def test_secret_name_is_outside_the_node_readable_prefix(self):
        assert k.secret_name("demo") == "clusterapi.aws/demo/pki"
        assert not k.secret_name("demo").startswith("aws.cluster.x-k8s.io/")


@pytest.mark.parametrize(
    "running, desired, refused",
    [
        ([], "v1.33.0", None),  # a new group: any version
        (["v1.31.2"], "v1.31.5", None),  # a patch release
        (["v1.31.2"], "v1.32.0", None),  # one minor
        (["v1.31.2", "v1.32.0"], "v1.32.1", None),  # halfway through a rollout
        (["v1.31.2"], "v1.33.0", "upgrade to v1.32 first"),  # skips a minor
        (["v1.31.2", "v1.32.0"], "v1.33.0", "upgrade to v1.32 first"),  # the oldest machine decides
        (["v1.31.2"], "v1.30.9", "cannot downgrade"),
        (["v1.31.2"], "v2.0.0", "upgrade to v1.32 first"),
        (["edited-by-hand"], "v1.33.0", None),  # an unreadable tag is ignored
    ],
)
def test_upgrades_go_one_minor_at_a_time(running, desired, refused):
    if refused is None:
        k.check_upgrade_step(running, desired)
        return
    with pytest.raises(SpecError, match=refused) as error:
        k.check_upgrade_step(running, desired)
    assert error.value.field == "kubernetes_version"
