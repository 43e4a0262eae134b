"""What pool nodes boot from: the EKS nodeadm document, the image choice and the bootstrap checks (pure), and the
EKS-optimised image lookup through AWS's public SSM parameter (botocore Stubber: the request shapes are checked
against the real ssm/ec2 service models)."""

from __future__ import annotations

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import node_bootstrap as nb
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import termination as _termination

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
    merged = _termination.with_watcher(document, kubeconfig=nb.watcher_kubeconfig(nb.EKS))
    paths = [f["path"] for f in cloud_config(merged)["write_files"]]
    assert nb.NODEADM_CONFIG in paths and _termination.UNIT_PATH in paths
    unit = next(f["content"] for f in cloud_config(merged)["write_files"] if f["path"] == _termination.UNIT_PATH)
    assert "Environment=CAPA_WATCHER_KUBECONFIG=/var/lib/kubelet/kubeconfig" in unit
    assert nb.watcher_kubeconfig(nb.KUBEADM) == _termination.DEFAULT_KUBECONFIG


@pytest.mark.parametrize(
    ("version", "minor"), [("1.31", "1.31"), ("v1.31", "1.31"), ("v1.32.4", "1.32"), ("1.30.0", "1.30")]
)
def test_eks_minor(version, minor):
    assert nb.eks_minor(version) == minor
    assert nb.eks_image_parameter(version, "arm64") == (
        f"/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/arm64/standard/recommended/image_id"
    )


@pytest.mark.parametrize("version", ["", "latest", "1", "v1.31.2.1", "1.31-eks"])
def test_eks_minor_rejects(version):
    with pytest.raises(SpecError) as failure:
        nb.eks_minor(version)
    assert failure.value.field == "kubernetes_version"


@pytest.mark.parametrize(
    ("kind", "ami", "expected"),
    [
        ("eks", {}, True),
        ("eks", {"id": "ami-0123456789abcdef0"}, False),
        ("eks", {"base_os": "ubuntu-24.04"}, False),
        ("eks", {"owner": "123456789012"}, False),
        ("kubeadm", {}, False),
        ("raw", {}, False),
    ],
)
def test_uses_eks_image(kind, ami, expected):
    assert nb.uses_eks_image(kind, ami) is expected


@pytest.mark.parametrize(
    ("bootstrap", "version", "field"),
    [
        ({"type": "kubeadm"}, "v1.31.2", "bootstrap.endpoint_host"),
        ({"type": "kubeadm", "endpoint_host": "api"}, None, "kubernetes_version"),
        ({"type": "eks"}, None, "kubernetes_version"),
        ({"type": "eks"}, "latest", "kubernetes_version"),
        ({"type": "raw"}, "v1.31.2", "bootstrap.data"),
        ({"type": "ignition"}, "v1.31.2", "bootstrap.type"),
    ],
)
def test_check_bootstrap_names_the_field(bootstrap, version, field):
    with pytest.raises(SpecError) as failure:
        nb.check_bootstrap(bootstrap, version)
    assert failure.value.field == field


@pytest.mark.parametrize(
    ("kind", "ami", "version", "field"),
    [
        ("kubeadm", {}, None, "kubernetes_version"),
        ("kubeadm", {}, "1.31", "kubernetes_version"),  # CAPA's lookup needs a full version
        ("eks", {}, "v1.31.2.9", "kubernetes_version"),
        ("eks", {"base_os": "ubuntu-24.04"}, "1.31", "kubernetes_version"),  # CAPA's lookup, not EKS's
    ],
)
def test_check_image_inputs_names_the_field(kind, ami, version, field):
    with pytest.raises(SpecError) as failure:
        nb.check_image_inputs(kind, ami, version)
    assert failure.value.field == field


@pytest.mark.parametrize(
    ("kind", "ami", "version"),
    [("eks", {}, "1.31"), ("eks", {}, "v1.31.2"), ("kubeadm", {}, "v1.31.2"), ("kubeadm", {"id": "ami-1"}, None)],
)
def test_check_image_inputs_accepts(kind, ami, version):
    nb.check_image_inputs(kind, ami, version)


class StubContext:
    """The slice of Context the lookup uses: clients and check mode."""

    check_mode = False

    def __init__(self) -> None:
        self.clients = {name: boto3.client(name, region_name="us-east-1") for name in ("ssm", "ec2")}

    def client(self, name: str):
        return self.clients[name]


def test_eks_optimized_image_reads_the_public_parameter_of_the_architecture():
    ctx = StubContext()
    name = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id"
    with Stubber(ctx.clients["ec2"]) as ec2, Stubber(ctx.clients["ssm"]) as ssm:
        ec2.add_response(
            "describe_instance_types",
            {"InstanceTypes": [{"InstanceType": "m7g.large", "ProcessorInfo": {"SupportedArchitectures": ["arm64"]}}]},
            {"InstanceTypes": ["m7g.large"]},
        )
        ssm.add_response("get_parameters", {"Parameters": [{"Name": name, "Value": "ami-0abc"}]}, {"Names": [name]})
        ec2.add_response(
            "describe_images",
            {"Images": [{"ImageId": "ami-0abc", "Name": "amazon-eks-node-al2023-arm64-standard-1.31-v1"}]},
            {"ImageIds": ["ami-0abc"]},
        )
        image = nb.eks_optimized_image(ctx, "m7g.large", "v1.31.2")
    assert image.id == "ami-0abc"


def test_eks_optimized_image_missing_is_a_clear_error():
    ctx = StubContext()
    with Stubber(ctx.clients["ec2"]) as ec2, Stubber(ctx.clients["ssm"]) as ssm:
        ec2.add_response(
            "describe_instance_types",
            {"InstanceTypes": [{"InstanceType": "t3.large", "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]}}]},
        )
        ssm.add_response("get_parameters", {"Parameters": [], "InvalidParameters": ["x"]})
        with pytest.raises(ReconcileError, match=r"no EKS-optimised image for Kubernetes 1\.99.*set ami\.id"):
            nb.eks_optimized_image(ctx, "t3.large", "1.99")
