# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A machine's image (ami.py): CAPA's name patterns, the newest image, and the one resolution every machine goes
through - by id, the EKS-optimised image of AWS's public SSM parameter, CAPA's lookup, the bastion's Canonical
image - checked against the root volume.

botocore Stubber: moto does not serve AWS's public /aws/service/eks/optimized-ami/... parameters for every
version, and the stub checks each request against the real ec2/ssm service models."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import ami
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.machine_spec import MachineSpec


# pure ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fmt, expected",
    [
        ("", ["capa-ami-ubuntu-24.04-?1.31.2-*", "capa-ami-ubuntu-24.04-?v1.31.2-*"]),
        (
            "capa-ami-{{.BaseOS}}-?{{.K8sVersion}}-*",
            ["capa-ami-ubuntu-24.04-?1.31.2-*", "capa-ami-ubuntu-24.04-?v1.31.2-*"],
        ),
        ("my-{base_os}-k8s-{k8s_version}", ["my-ubuntu-24.04-k8s-1.31.2", "my-ubuntu-24.04-k8s-v1.31.2"]),
        ("fixed-name", ["fixed-name"]),
    ],
)
def test_name_patterns(fmt, expected):
    assert ami.name_patterns(fmt, "ubuntu-24.04", "v1.31.2") == expected


def test_newest_image_by_creation_date():
    images = [
        {"ImageId": "ami-1", "CreationDate": "2024-10-21T08:40:00.000Z"},
        {"ImageId": "ami-2", "CreationDate": "2024-11-12T08:26:40.000Z"},
        {"ImageId": "ami-0", "CreationDate": "2023-11-12T08:26:40.000Z"},
    ]
    assert ami.newest(images)["ImageId"] == "ami-2"
    assert ami.newest([]) is None


@pytest.mark.parametrize(
    ("version", "minor"), [("1.31", "1.31"), ("v1.31", "1.31"), ("v1.32.4", "1.32"), ("1.30.0", "1.30")]
)
def test_eks_image_parameter(version, minor):
    assert ami.eks_image_parameter(version, "arm64") == (
        f"/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/arm64/standard/recommended/image_id"
    )


def test_image_from_aws_takes_the_root_device_size():
    image = ami.Image.from_aws(
        {
            "ImageId": "ami-1",
            "Name": "n",
            "RootDeviceName": "/dev/xvda",
            "BlockDeviceMappings": [{"DeviceName": "/dev/xvdb", "Ebs": {"VolumeSize": 100}}, _root(20)],
        }
    )
    assert (image.id, image.root_device_name, image.root_size, image.architecture) == (
        "ami-1",
        "/dev/xvda",
        20,
        "x86_64",
    )
    assert ami.Image.from_aws({"ImageId": "ami-2"}).root_device_name == "/dev/sda1"


# AWS (Stubber) ---------------------------------------------------------------------------------------------------
class StubContext:
    """The slice of Context the lookups use: clients (one region) and check mode."""

    check_mode = False

    def __init__(self) -> None:
        self.clients = {name: boto3.client(name, region_name="us-east-1") for name in ("ssm", "ec2")}

    def client(self, name: str, region: str | None = None):
        return self.clients[name]


def _root(size: int) -> dict[str, Any]:
    return {"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": size}}


def _image(image_id: str, size: int = 8) -> dict[str, Any]:
    return {"ImageId": image_id, "Name": image_id, "RootDeviceName": "/dev/xvda", "BlockDeviceMappings": [_root(size)]}


def _types(stub: Stubber, kind: str, arch: str) -> None:
    stub.add_response(
        "describe_instance_types",
        {"InstanceTypes": [{"InstanceType": kind, "ProcessorInfo": {"SupportedArchitectures": [arch]}}]},
        {"InstanceTypes": [kind]},
    )


def machine(**params: Any) -> MachineSpec:
    return MachineSpec.from_params({"instance_type": "t3.large", "kubernetes_version": "v1.31.2", **params})


def test_eks_optimized_image_reads_the_public_parameter_of_the_architecture():
    ctx = StubContext()
    name = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id"
    with Stubber(ctx.clients["ec2"]) as ec2, Stubber(ctx.clients["ssm"]) as ssm:
        _types(ec2, "m7g.large", "arm64")
        ssm.add_response("get_parameters", {"Parameters": [{"Name": name, "Value": "ami-0abc"}]}, {"Names": [name]})
        ec2.add_response(
            "describe_images",
            {"Images": [{"ImageId": "ami-0abc", "Name": "amazon-eks-node-al2023-arm64-standard-1.31-v1"}]},
            {"ImageIds": ["ami-0abc"]},
        )
        image = ami.resolve_image(ctx, machine(instance_type="m7g.large", bootstrap={"type": "eks"}))
    assert image.id == "ami-0abc"


def test_eks_optimized_image_missing_is_a_clear_error():
    ctx = StubContext()
    with Stubber(ctx.clients["ec2"]) as ec2, Stubber(ctx.clients["ssm"]) as ssm:
        _types(ec2, "t3.large", "x86_64")
        ssm.add_response("get_parameters", {"Parameters": [], "InvalidParameters": ["x"]})
        with pytest.raises(ReconcileError, match=r"no EKS-optimised image for Kubernetes 1\.99.*set ami\.id"):
            ami.resolve_image(ctx, machine(kubernetes_version="1.99", bootstrap={"type": "eks"}))


def test_resolve_image_by_id():
    ctx = StubContext()
    with Stubber(ctx.clients["ec2"]) as ec2:
        ec2.add_response("describe_images", {"Images": [_image("ami-0given")]}, {"ImageIds": ["ami-0given"]})
        assert ami.resolve_image(ctx, machine(ami={"id": "ami-0given"}, bootstrap={"type": "eks"})).id == "ami-0given"
        ec2.assert_no_pending_responses()


@pytest.mark.parametrize("code", ["InvalidAMIID.NotFound", "InvalidAMIID.Malformed"])
def test_resolve_image_of_a_missing_id_names_the_option(code):
    ctx = StubContext()
    with Stubber(ctx.clients["ec2"]) as ec2:
        ec2.add_client_error("describe_images", code)
        with pytest.raises(ReconcileError, match=r"^ami\.id: image ami-0gone does not exist or is not visible$"):
            ami.resolve_image(ctx, machine(ami={"id": "ami-0gone"}))


def test_resolve_image_of_an_eks_node_without_lookup_fields_takes_the_eks_image():
    ctx = StubContext()
    name = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
    with Stubber(ctx.clients["ec2"]) as ec2, Stubber(ctx.clients["ssm"]) as ssm:
        _types(ec2, "t3.large", "x86_64")
        ssm.add_response("get_parameters", {"Parameters": [{"Name": name, "Value": "ami-0eks"}]}, {"Names": [name]})
        ec2.add_response("describe_images", {"Images": [_image("ami-0eks")]}, {"ImageIds": ["ami-0eks"]})
        found = ami.resolve_image(ctx, machine(kubernetes_version="1.31", bootstrap={"type": "eks"}))
        ec2.assert_no_pending_responses()
    assert found.id == "ami-0eks"


@pytest.mark.parametrize(
    "params, owner, filter_name, value",
    [
        ({}, ami.CAPA_OWNER, "name", ["capa-ami-ubuntu-24.04-?1.31.2-*", "capa-ami-ubuntu-24.04-?v1.31.2-*"]),
        (
            {"ami": {"base_os": "flatcar-stable", "owner": "111122223333"}, "bootstrap": {"type": "eks"}},
            "111122223333",
            "name",
            ["capa-ami-flatcar-stable-?1.31.2-*", "capa-ami-flatcar-stable-?v1.31.2-*"],
        ),
        ({"role": "bastion"}, ami.CANONICAL_OWNER, "description", ["Canonical, Ubuntu, 24.04, amd64 noble image*"]),
    ],
)
def test_resolve_image_looks_up_capas_or_the_bastions_image(params, owner, filter_name, value):
    ctx = StubContext()
    spec = machine(**params) if "role" not in params else MachineSpec.from_params(params)
    filters = [
        {"Name": "architecture", "Values": ["x86_64"]},
        {"Name": "state", "Values": ["available"]},
        {"Name": "virtualization-type", "Values": ["hvm"]},
        {"Name": filter_name, "Values": value},
    ]
    with Stubber(ctx.clients["ec2"]) as ec2:
        _types(ec2, spec.instance_type or "", "x86_64")
        ec2.add_response("describe_images", {"Images": [_image("ami-0found")]}, {"Owners": [owner], "Filters": filters})
        assert ami.resolve_image(ctx, spec).id == "ami-0found"
        ec2.assert_no_pending_responses()


def test_resolve_image_refuses_a_root_volume_smaller_than_the_image():
    ctx = StubContext()
    with Stubber(ctx.clients["ec2"]) as ec2:
        ec2.add_response("describe_images", {"Images": [_image("ami-0big", size=30)]})
        with pytest.raises(ReconcileError, match=r"root_volume\.size: 20 GiB is smaller than the AMI's 30 GiB"):
            ami.resolve_image(ctx, machine(ami={"id": "ami-0big"}, root_volume={"size": 20}))


def test_seen_architecture_is_what_the_running_machines_of_the_type_show():
    assert ami.seen_architecture([("m7g.large", "arm64"), ("m7g.large", "arm64")], "m7g.large") == "arm64"
    # Machines of another type (a rollout to a new type) say nothing about this one.
    assert ami.seen_architecture([("m7g.large", "arm64")], "t3.large") is None
    assert ami.seen_architecture([], "t3.large") is None
    # Disagreement, or an architecture the lookup does not use, leaves the question to DescribeInstanceTypes.
    assert ami.seen_architecture([("t3.large", "x86_64"), ("t3.large", "arm64")], "t3.large") is None
    assert ami.seen_architecture([("mac1.metal", "x86_64_mac")], "mac1.metal") is None
    assert ami.seen_architecture([("t2.micro", "i386"), ("t2.micro", None)], "t2.micro") is None


def test_resolve_image_with_a_known_architecture_asks_only_for_the_image():
    """The Stubber fails on any request not queued: no DescribeInstanceTypes is made."""
    ctx = StubContext()
    with Stubber(ctx.clients["ec2"]) as ec2:
        ec2.add_response(
            "describe_images",
            {"Images": [_image("ami-0arm")]},
            {
                "Owners": [ami.CAPA_OWNER],
                "Filters": [
                    {"Name": "architecture", "Values": ["arm64"]},
                    {"Name": "state", "Values": ["available"]},
                    {"Name": "virtualization-type", "Values": ["hvm"]},
                    {"Name": "name", "Values": ami.name_patterns("", ami.DEFAULT_BASE_OS, "v1.31.2")},
                ],
            },
        )
        assert ami.resolve_image(ctx, machine(instance_type="m7g.large"), "arm64").id == "ami-0arm"
        ec2.assert_no_pending_responses()
