"""What machines boot from (node_bootstrap.py): the EKS nodeadm document and the watcher's kubeconfig (pure), and
the one document path of groups, pools and fleets - none, raw, kubeadm from the cluster PKI (read once), eks from
one DescribeCluster - plus the termination watcher merged in. botocore Stubber: the PKI secret and the EKS
cluster's answers are chosen per case, and each request is checked against the real service models."""

from __future__ import annotations

import boto3
import pytest
import yaml
from botocore.stub import ANY, Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import cloud_init, pki
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import node_bootstrap as nb
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import termination as _termination
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.machine_spec import MachineSpec

CLUSTER = {
    "name": "demo-eks",
    "endpoint": "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    "certificateAuthority": {"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"},
    "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16"},
    "status": "ACTIVE",
}


def cloud_config(document: bytes) -> dict:
    header, body = document.decode().split("\n", 1)
    assert header == "#cloud-config"
    return yaml.safe_load(body)


def test_node_config_carries_what_nodeadm_needs():
    config = nb.node_config(CLUSTER, labels={"clusterapi.aws/machine-pool": "mp-0"})
    assert config["apiVersion"] == "node.eks.aws/v1alpha1" and config["kind"] == "NodeConfig"
    assert config["spec"]["cluster"] == {
        "name": "demo-eks",
        "apiServerEndpoint": CLUSTER["endpoint"],
        "certificateAuthority": CLUSTER["certificateAuthority"]["data"],
        "cidr": "172.20.0.0/16",
    }
    assert config["spec"]["kubelet"] == {"flags": ["--node-labels=clusterapi.aws/machine-pool=mp-0"]}


def test_node_config_service_cidr_defaults_to_eks_default():
    cluster = {k: v for k, v in CLUSTER.items() if k != "kubernetesNetworkConfig"}
    assert nb.node_config(cluster, labels={})["spec"]["cluster"]["cidr"] == "10.100.0.0/16"
    assert "kubelet" not in nb.node_config(cluster, labels={})["spec"]


def test_nodeadm_cloud_config_writes_the_config_and_runs_nodeadm():
    document = nb.nodeadm_cloud_config(CLUSTER, labels={"a": "b"})
    config = cloud_config(document)
    (written,) = config["write_files"]
    assert written["path"] == nb.NODEADM_CONFIG and written["permissions"] == "0600"
    assert yaml.safe_load(written["content"]) == nb.node_config(CLUSTER, labels={"a": "b"})
    assert config["runcmd"] == [f"nodeadm init --config-source file://{nb.NODEADM_CONFIG}"]
    # Deterministic: the same cluster gives the same bytes (the hash decides whether bootstrap data changed).
    assert nb.nodeadm_cloud_config(dict(CLUSTER), labels={"a": "b"}) == document


def test_watcher_merges_into_the_eks_document_with_the_eks_kubelet_credentials():
    document = nb.nodeadm_cloud_config(CLUSTER, labels={})
    merged = _termination.with_watcher(document, kubeconfig=nb.watcher_kubeconfig("eks"))
    paths = [f["path"] for f in cloud_config(merged)["write_files"]]
    assert nb.NODEADM_CONFIG in paths and _termination.UNIT_PATH in paths
    unit = next(f["content"] for f in cloud_config(merged)["write_files"] if f["path"] == _termination.UNIT_PATH)
    assert "Environment=CAPA_WATCHER_KUBECONFIG=/var/lib/kubelet/kubeconfig" in unit
    assert nb.watcher_kubeconfig("kubeadm") == _termination.DEFAULT_KUBECONFIG


# the one document path (botocore Stubber: the PKI secret and DescribeCluster answers are chosen per case) ------
class StubContext:
    """The slice of Context NodeBootstrap uses: clients, the cluster, check mode and warnings."""

    cluster = "demo"

    def __init__(self, check_mode: bool = False) -> None:
        self.check_mode = check_mode
        self.raw = {name: boto3.client(name, region_name="us-east-1") for name in ("secretsmanager", "eks")}
        self.clients = {name: RetryingClient(client, retries=0) for name, client in self.raw.items()}
        self.warnings: list[str] = []

    def client(self, name: str, region: str | None = None):
        return self.clients[name]

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def machine(**params) -> MachineSpec:
    return MachineSpec.from_params({"instance_type": "t3.large", "kubernetes_version": "v1.31.2", **params})


KUBEADM = {"type": "kubeadm", "endpoint_host": "demo-apiserver.example.com"}


@pytest.fixture(scope="module")
def pki_secret() -> str:
    return pki.generate_pki().to_secret_string()


def test_no_and_raw_bootstrap_need_no_request():
    ctx = StubContext()
    assert nb.NodeBootstrap(ctx, machine(bootstrap={"type": "none"})).document("demo-md-0-abcde") is None
    raw = nb.NodeBootstrap(ctx, machine(bootstrap={"type": "raw", "data": "#!/bin/sh\necho hi\n"}))
    assert raw.document("demo-md-0-abcde") == b"#!/bin/sh\necho hi\n"


INIT, CONTROL_PLANE, WORKER = "aaaaaa.0000000000000000", "bbbbbb.1111111111111111", "cccccc.2222222222222222"


LISTED = {"Filters": [{"Key": "name", "Values": ["clusterapi.aws/demo/"]}]}


def test_a_kubeadm_document_without_its_token_is_a_bug_not_a_document_without_one(pki_secret):
    ctx = StubContext()
    with Stubber(ctx.raw["secretsmanager"]) as sm:
        sm.add_response("list_secrets", {"SecretList": []}, LISTED)  # a worker's: the tags are looked at first
        sm.add_response(
            "get_secret_value", {"SecretString": pki_secret, "Name": "clusterapi.aws/demo/pki"}, {"SecretId": ANY}
        )
        with pytest.raises(ReconcileError, match="needs a bootstrap token"):
            nb.NodeBootstrap(ctx, machine(bootstrap=KUBEADM)).document("demo-md-0-abcde")


def test_kubeadm_documents_read_the_pki_once_and_render_the_role(pki_secret):
    ctx = StubContext()
    with Stubber(ctx.raw["secretsmanager"]) as sm:
        sm.add_response(
            "get_secret_value", {"SecretString": pki_secret, "Name": "clusterapi.aws/demo/pki"}, {"SecretId": ANY}
        )
        boot = nb.NodeBootstrap(ctx, machine(role="control-plane", bootstrap=KUBEADM))
        first = boot.document("demo-control-plane-aaaaa", kubeadm_role=cloud_init.ROLE_INIT, token=INIT)
        joining = boot.document(
            "demo-control-plane-bbbbb", kubeadm_role=cloud_init.ROLE_JOIN_CONTROL_PLANE, token=CONTROL_PLANE
        )
        worker = boot.document("demo-md-0-ccccc", token=WORKER)
        sm.assert_no_pending_responses()
    assert b"kubeadm init" in first and b"kubeadm join" in joining and b"kubeadm join" in worker
    # Each machine's document carries its own token, and only that one.
    for document, token in ((first, INIT), (joining, CONTROL_PLANE), (worker, WORKER)):
        assert [t for t in (INIT, CONTROL_PLANE, WORKER) if t.encode() in document] == [token]
    assert b"demo-apiserver.example.com:6443" in worker
    assert joining != worker  # a control plane joins with the cluster's CA keys, a worker without


def test_a_workers_document_comes_from_the_secrets_tags_without_its_value():
    """The tags capa_kubeadm keeps on the PKI secret say its public facts for the version they describe: a worker's
    join document (no key in it) needs no GetSecretValue then - Stubber fails any request not answered here. Tags
    of another version, or of a secret the cluster does not own, are not used: the value is read."""
    the_pki = pki.generate_pki()
    tags = {**pki.metadata_tags(the_pki, "v" * 32), "sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned"}

    def entry(version: str, owner: str = "demo") -> dict:
        own = {k: v for k, v in tags.items() if "/cluster/" not in k} | {
            f"sigs.k8s.io/cluster-api-provider-aws/cluster/{owner}": "owned"
        }
        return {
            "Name": "clusterapi.aws/demo/pki",
            "Tags": [{"Key": k, "Value": v} for k, v in own.items()],
            "SecretVersionsToStages": {version: ["AWSCURRENT"]},
        }

    ctx = StubContext()
    with Stubber(ctx.raw["secretsmanager"]) as sm:
        sm.add_response("list_secrets", {"SecretList": [entry("v" * 32)]}, LISTED)
        worker = nb.NodeBootstrap(ctx, machine(bootstrap=KUBEADM)).document("demo-md-0-ccccc", token=WORKER)
        sm.assert_no_pending_responses()
    expected = nb.NodeBootstrap(ctx, machine(bootstrap=KUBEADM))
    expected._pki, expected._pki_loaded = the_pki, True
    assert worker == expected.document("demo-md-0-ccccc", token=WORKER)

    for listed in (entry("w" * 32), entry("v" * 32, owner="other")):
        ctx = StubContext()
        with Stubber(ctx.raw["secretsmanager"]) as sm:
            sm.add_response("list_secrets", {"SecretList": [listed]}, LISTED)
            sm.add_response(
                "get_secret_value",
                {"SecretString": the_pki.to_secret_string(), "Name": "clusterapi.aws/demo/pki"},
                {"SecretId": ANY},
            )
            assert nb.NodeBootstrap(ctx, machine(bootstrap=KUBEADM)).document("demo-md-0-ccccc", token=WORKER) == worker
            sm.assert_no_pending_responses()


def test_kubeadm_without_a_pki_is_planned_in_check_mode_and_an_error_otherwise():
    for check_mode in (True, False):
        ctx = StubContext(check_mode=check_mode)
        with Stubber(ctx.raw["secretsmanager"]) as sm:
            sm.add_response("list_secrets", {"SecretList": []}, LISTED)
            sm.add_client_error("get_secret_value", "ResourceNotFoundException")
            boot = nb.NodeBootstrap(ctx, machine(bootstrap=KUBEADM))
            if check_mode:
                assert boot.document("demo-md-0-abcde") == nb.PLANNED
            else:
                with pytest.raises(ReconcileError, match="has no PKI.*run capa_kubeadm first"):
                    boot.document("demo-md-0-abcde")


def test_eks_document_is_the_nodeadm_config_of_the_described_cluster():
    ctx = StubContext()
    with Stubber(ctx.raw["eks"]) as eks:
        eks.add_response("describe_cluster", {"cluster": CLUSTER}, {"name": "demo-eks"})
        boot = nb.NodeBootstrap(ctx, machine(bootstrap={"type": "eks", "eks_cluster_name": "demo-eks"}))
        document = boot.document("eks-mp-0")
    assert document == nb.nodeadm_cloud_config(CLUSTER, labels={nb.POOL_LABEL: "eks-mp-0"})


@pytest.mark.parametrize(
    "answer, message",
    [
        (None, "EKS cluster demo does not exist; reconcile it first"),
        ({"name": "demo", "status": "CREATING"}, "EKS cluster demo is CREATING \\(no endpoint yet\\)"),
    ],
)
def test_eks_document_of_a_cluster_not_ready(answer, message):
    for check_mode in (True, False):
        ctx = StubContext(check_mode=check_mode)
        with Stubber(ctx.raw["eks"]) as eks:
            if answer is None:
                eks.add_client_error("describe_cluster", "ResourceNotFoundException")
            else:
                eks.add_response("describe_cluster", {"cluster": answer}, {"name": "demo"})
            boot = nb.NodeBootstrap(ctx, machine(bootstrap={"type": "eks"}))  # default: the cluster_name
            if check_mode:  # the EKS cluster is created earlier in the same (planned) run
                assert boot.document("eks-mp-0") == nb.PLANNED
            else:
                with pytest.raises(ReconcileError, match=f"^bootstrap.eks_cluster_name: {message}"):
                    boot.document("eks-mp-0")


def test_the_watcher_goes_into_a_cloud_config_with_the_pools_hook():
    ctx = StubContext()
    boot = nb.NodeBootstrap(ctx, machine(bootstrap={"type": "eks"}))
    merged = boot.add_watcher(nb.nodeadm_cloud_config(CLUSTER, labels={}), lifecycle_hook="mp-0-drain")
    unit = next(f["content"] for f in cloud_config(merged)["write_files"] if f["path"] == _termination.UNIT_PATH)
    assert "CAPA_WATCHER_LIFECYCLE_HOOK=mp-0-drain" in unit and "/var/lib/kubelet/kubeconfig" in unit
    assert ctx.warnings == []


@pytest.mark.parametrize(
    "document, warning",
    [
        (b"#!/bin/sh\necho hi\n", "bootstrap data is not #cloud-config: no termination watcher added"),
        (b"#cloud-config\n- a list\n", "bootstrap data is not a valid cloud-config mapping: no termination watcher"),
        (b"#cloud-config\nkey: [unclosed\n", "bootstrap data is not a valid cloud-config mapping: no termination"),
    ],
)
def test_a_document_that_cannot_take_the_watcher_is_used_as_it_is_with_a_warning(document, warning):
    ctx = StubContext()
    assert nb.NodeBootstrap(ctx, machine()).add_watcher(document) == document
    assert len(ctx.warnings) == 1 and ctx.warnings[0].startswith(warning)
    assert "echo hi" not in ctx.warnings[0] and "unclosed" not in ctx.warnings[0]  # never the document


def test_nothing_to_watch_without_a_document():
    ctx = StubContext()
    boot = nb.NodeBootstrap(ctx, machine())
    assert boot.add_watcher(None) is None and boot.add_watcher(nb.PLANNED) == nb.PLANNED
    assert ctx.warnings == []
