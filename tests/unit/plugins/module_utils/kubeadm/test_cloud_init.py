# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The kubeadm documents and cloud-init of each role, the hash machines are compared by, and kubeadm's version
rules."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import cloud_init as k
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.pki import ClusterPki, PublicPki

ENDPOINT = dict(cluster="demo", endpoint_host="demo-apiserver.elb.example.com", endpoint_port=6443)
TOKEN = "abcdef.0123456789abcdef"


def render(pki, role, version="v1.31.2", machine="m-0", **over):
    args = {"token": TOKEN, "token_ttl": 900, **ENDPOINT, **over}
    return k.render_cloud_init(pki, role, kubernetes_version=version, machine_name=machine, **args).decode()


def cloud_config(text: str) -> dict:
    header, rest = text.split("\n", 1)
    assert header == "## template: jinja"
    assert rest.startswith("#cloud-config\n")
    return yaml.safe_load(rest)


def kubeadm_docs(config: dict) -> list[dict]:
    [entry] = [f for f in config["write_files"] if f["path"] == "/run/kubeadm/kubeadm.yaml"]
    return list(yaml.safe_load_all(entry["content"]))


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
        assert token["token"] == TOKEN
        # The init token expires: no token of this collection lives for ever (kubeadm reads "0s" as never).
        assert token["ttl"] == "900s"
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
            "token": TOKEN,
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
        copy = ClusterPki.from_secret_string(pki.to_secret_string(), "s")
        assert render(copy, role) == render(pki, role)

    def test_init_token_lives_as_long_as_asked(self, pki):
        init = kubeadm_docs(cloud_config(render(pki, "init", token_ttl=3600)))[0]
        assert init["bootstrapTokens"][0]["ttl"] == "3600s"

    def test_each_machine_token_is_in_its_document_but_not_in_the_hash(self, pki):
        other = "zyxwvu.9876543210zyxwvu"
        assert other in render(pki, "join-worker", token=other) and TOKEN not in render(pki, "join-worker", token=other)
        args = dict(ENDPOINT, kubernetes_version="v1.31.2")
        assert k.cloud_init_hash(pki, "join-worker", **args) == k.cloud_init_hash(
            replace(pki, retired=("bootstrap_token",)), "join-worker", **args
        )

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
        assert first == k.cloud_init_hash(ClusterPki.from_secret_string(pki.to_secret_string(), "s"), "init", **args)
        assert first != k.cloud_init_hash(other_pki, "init", **args)
        assert first != k.cloud_init_hash(replace(pki, pod_cidr="10.244.0.0/16"), "init", **args)
        assert re.fullmatch(r"[0-9a-f]{64}", first)

    def test_unknown_role(self, pki):
        with pytest.raises(SpecError):
            render(pki, "join")

    def test_no_jinja_syntax_but_the_node_name(self, pki):
        text = render(pki, "init")
        assert re.findall(r"\{[{%#]", text) == ["{{"]


class TestEtcdRestore:
    URL = "https://bucket.s3.amazonaws.com/etcd/s.db?versionId=v1&X-Amz-Signature=abc"

    def test_the_first_machine_restores_before_kubeadm_init_and_init_needs_the_restore(self, pki):
        config = cloud_config(render(pki, "init", etcd_snapshot_url=self.URL))
        mkdir, restore, init = config["runcmd"]
        assert mkdir == "mkdir -p /run/cluster-api"
        steps = restore.split(" && ")
        assert (
            steps[1]
            == "curl -fsS --retry 5 -K /run/cluster-api/etcd-snapshot.curl -o /var/lib/etcd-restore/snapshot.db"
        )
        assert "kubeadm config images list --kubernetes-version v1.31.2 | grep /etcd:" in steps[2]
        assert (
            "etcdutl snapshot restore /var/lib/etcd-restore/snapshot.db --name {{ ds.meta_data.local_hostname }}"
            in steps[4]
        )
        assert (
            "--initial-advertise-peer-urls https://{{ ds.meta_data.local_ipv4 }}:2380 --data-dir /var/lib/etcd"
            in steps[4]
        )
        assert steps[-1] == ": > /run/cluster-api/etcd-restored"
        assert init.startswith(
            "test -f /run/cluster-api/etcd-restored && kubeadm init --config /run/kubeadm/kubeadm.yaml"
        )
        assert "--ignore-preflight-errors=DirAvailable--var-lib-etcd" in init
        # The URL (a bearer credential for the snapshot) is in a 0600 curl config file, never on a command line.
        [entry] = [f for f in config["write_files"] if f["path"] == "/run/cluster-api/etcd-snapshot.curl"]
        assert entry["permissions"] == "0600" and entry["content"] == f'url = "{self.URL}"\n'
        assert self.URL not in "\n".join(config["runcmd"])

    def test_only_the_init_machine_restores(self, pki):
        with pytest.raises(SpecError, match="only the machine that runs kubeadm init"):
            render(pki, "join-control-plane", etcd_snapshot_url=self.URL)
        assert "etcd" not in " ".join(cloud_config(render(pki, "init"))["runcmd"])  # no restore without a snapshot

    def test_no_jinja_syntax_but_the_node_name_and_address(self, pki):
        text = render(pki, "init", etcd_snapshot_url=self.URL)
        assert set(re.findall(r"\{\{[^}]*\}\}", text)) == {k.NODE_NAME, k.NODE_ADDRESS}
        assert not re.findall(r"\{[%#]", text)


class TestVersions:
    @pytest.mark.parametrize("version", ["v1.31.2", "1.31.2", "v1.30.0-rc.1"])
    def test_versions(self, version):
        k.parse_version(version)

    @pytest.mark.parametrize("version", ["", "1.31", "latest", "v1.x.2"])
    def test_bad_versions(self, version):
        with pytest.raises(SpecError) as error:
            k.parse_version(version)
        assert error.value.field == "kubernetes_version"


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


def test_a_workers_join_document_is_the_same_from_the_pkis_public_facts(pki):
    """A worker gets no key: its document (hence a pool's bootstrap-data hash) is rendered from the PKI's public
    facts, as the secret's tags say them, to the byte; the other roles refuse them (they carry the CAs)."""
    facts = PublicPki(pki.ca_cert_hash, pki.service_cidr, pki.pod_cidr)
    assert render(facts, k.ROLE_JOIN_WORKER) == render(pki, k.ROLE_JOIN_WORKER)
    for role in (k.ROLE_INIT, k.ROLE_JOIN_CONTROL_PLANE):
        with pytest.raises(ReconcileError, match="needs the cluster PKI"):
            render(facts, role)
