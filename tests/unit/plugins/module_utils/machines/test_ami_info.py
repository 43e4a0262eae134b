# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_ami_info's pure parts (name filter, classification, newest per group, order, validation) and, with
botocore's Stubber, the EKS-optimised path: moto does not serve AWS's public
/aws/service/eks/optimized-ami/... SSM parameters, so the found case is only testable here."""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import ami_info


def params(**over: Any) -> dict[str, Any]:
    base = {
        "kubernetes_versions": ["v1.31.2"],
        "base_oses": list(ami_info.BASE_OSES),
        "owner": "819546954734",
        "regions": None,
        "architectures": ["x86_64"],
        "eks_optimized": False,
    }
    base.update(over)
    return base


def image(image_id: str, name: str, date: str, arch: str = "x86_64") -> dict[str, Any]:
    return {"ImageId": image_id, "Name": name, "CreationDate": date, "Architecture": arch, "OwnerId": "1"}


def test_name_filter_has_both_spellings_for_every_pair():
    values = ami_info.name_filter(["ubuntu-24.04", "rhel-8"], ["v1.31.2", "1.32.0"])
    assert values == [
        "capa-ami-ubuntu-24.04-1.31.2-*",
        "capa-ami-ubuntu-24.04-v1.31.2-*",
        "capa-ami-ubuntu-24.04-1.32.0-*",
        "capa-ami-ubuntu-24.04-v1.32.0-*",
        "capa-ami-rhel-8-1.31.2-*",
        "capa-ami-rhel-8-v1.31.2-*",
        "capa-ami-rhel-8-1.32.0-*",
        "capa-ami-rhel-8-v1.32.0-*",
    ]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("capa-ami-ubuntu-24.04-v1.31.2-1731400000", ("ubuntu-24.04", "v1.31.2")),
        ("capa-ami-ubuntu-24.04-1.31.2-1731400000", ("ubuntu-24.04", "v1.31.2")),
        ("capa-ami-ubuntu-24.04-v1.31.20-1731400000", None),
        ("capa-ami-ubuntu-22.04-v1.31.2-1", None),
        ("other-ubuntu-24.04-v1.31.2-1", None),
    ],
)
def test_classify(name, expected):
    assert ami_info.classify(name, ["ubuntu-24.04"], ["v1.31.2"]) == expected


def test_newest_per_group_and_order():
    images = [
        image("ami-1", "capa-ami-ubuntu-24.04-v1.31.2-1", "2024-10-21T08:40:00.000Z"),
        image("ami-2", "capa-ami-ubuntu-24.04-v1.31.2-2", "2024-11-12T08:26:40.000Z"),
        image("ami-3", "capa-ami-ubuntu-24.04-v1.31.2-2", "2024-11-12T08:26:40.000Z", "arm64"),
        image("ami-4", "capa-ami-rhel-8-1.31.2-9", "2025-01-01T00:00:00.000Z"),
    ]
    found = ami_info.newest_first(
        ami_info.newest_per_group("us-east-1", images, ["ubuntu-24.04", "rhel-8"], ["v1.31.2"])
    )
    assert [i["image_id"] for i in found] == ["ami-4", "ami-3", "ami-2"]
    assert found[0] == {
        "region": "us-east-1",
        "base_os": "rhel-8",
        "kubernetes_version": "v1.31.2",
        "architecture": "x86_64",
        "image_id": "ami-4",
        "name": "capa-ami-rhel-8-1.31.2-9",
        "creation_date": "2025-01-01T00:00:00.000Z",
        "owner": "1",
    }


def test_eks_parameters_use_the_minor_release():
    names = ami_info.eks_parameters(["v1.31.2"], ["x86_64", "arm64"])
    assert names == {
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id": (
            "v1.31.2",
            "x86_64",
        ),
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id": (
            "v1.31.2",
            "arm64",
        ),
    }


@pytest.mark.parametrize(
    "over, field",
    [
        ({"kubernetes_versions": []}, "kubernetes_versions"),
        ({"kubernetes_versions": ["v1.31.2", "latest"]}, "kubernetes_versions[1]"),
        ({"base_oses": []}, "base_oses"),
        ({"base_oses": ["ubuntu-*"]}, "base_oses[0]"),
        ({"regions": []}, "regions"),
        ({"owner": "cncf"}, "owner"),
    ],
)
def test_validation(over, field):
    with pytest.raises(SpecError) as error:
        ami_info.validate(ami_info.AmiQuery.from_params(params(**over)))
    assert error.value.field == field


def test_validation_accepts_defaults():
    ami_info.validate(ami_info.AmiQuery.from_params(params()))
    ami_info.validate(ami_info.AmiQuery.from_params(params(owner="self", regions=["eu-west-1"])))


# The EKS-optimised path (Stubber) -------------------------------------------------------------------------------
class _Session:
    region = "us-east-1"

    def __init__(self, clients: dict[str, RetryingClient]) -> None:
        self.clients = clients

    def client(self, name: str, region: str | None = None) -> RetryingClient:
        return self.clients[f"{name}@{region or self.region}"]


def _raw(service: str, region: str) -> Any:
    return boto3.client(service, region_name=region, aws_access_key_id="a", aws_secret_access_key="b")


def test_eks_optimised_images_from_public_parameters():
    ec2, ssm = _raw("ec2", "eu-west-1"), _raw("ssm", "eu-west-1")
    x86 = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
    with Stubber(ec2) as ec2_stub, Stubber(ssm) as ssm_stub:
        ec2_stub.add_response(
            "describe_images",
            {"Images": [image("ami-capa", "capa-ami-ubuntu-24.04-v1.31.2-1", "2024-01-01T00:00:00Z")]},
        )
        ssm_stub.add_response(
            "get_parameters",
            {"Parameters": [{"Name": x86, "Value": "ami-eks", "Type": "String"}]},
            {"Names": [x86]},
        )
        ec2_stub.add_response(
            "describe_images",
            {"Images": [image("ami-eks", "amazon-eks-node-al2023-x86_64-standard-1.31-v2025", "2025-02-01T00:00:00Z")]},
            {"ImageIds": ["ami-eks"]},
        )
        session = _Session({"ec2@eu-west-1": RetryingClient(ec2, retries=1), "ssm@eu-west-1": RetryingClient(ssm)})
        ctx = Context(session=session, cluster="amis", check_mode=False)
        tier = ami_info.AmiInfoTier()
        before, after = astuple(
            tier.reconcile(
                ctx, tier.parse(params(base_oses=["ubuntu-24.04"], regions=["eu-west-1"], eks_optimized=True))
            )
        )
        ec2_stub.assert_no_pending_responses()
        ssm_stub.assert_no_pending_responses()
    assert before is None and "msg" not in after
    assert [(i["image_id"], i["base_os"], i["region"]) for i in after["images"]] == [
        ("ami-eks", "eks-al2023", "eu-west-1"),
        ("ami-capa", "ubuntu-24.04", "eu-west-1"),
    ]
    assert ctx.ops.plan == [] and ctx.warnings == []
