# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_instance through ansible-playbook against the moto server, checked with boto3.

The network comes from capa_vpc, capa_subnet and capa_security_group (each run with run_module), so machines are
placed on exactly what those modules return. Rolling replacement bounds are checked by polling DescribeInstances
from a thread while the module runs, and again from the module's ordered plan.
"""

from __future__ import annotations

import base64
import gzip
import threading
import time
from typing import Any

import pytest

CLUSTER = "inst-it"
MODULE = "clusterapi.aws.capa_instance"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
GROUP_TAG = "clusterapi.aws/machine-group"
HASH_TAG = "clusterapi.aws/template-hash"
BOOTSTRAP_TAG = "clusterapi.aws/bootstrap-data"
CLOUD_CONFIG = "#cloud-config\nruncmd:\n  - echo secret-token-abc123 > /root/token\n"
LATEST_CAPA_AMI_X86 = "ami-b3b51f567c20d5e91"  # tools/moto_amis.json: newest v1.31.2 ubuntu-24.04 x86_64
LATEST_CANONICAL_X86 = "ami-a8c8ca57690b9c335"


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


def _ops(records: list[dict[str, str]]) -> list[str]:
    return [f"{r['service']}:{r['operation']}" for r in records]


def _instances(aws, group: str, states=("pending", "running")) -> list[dict[str, Any]]:
    pages = aws.client("ec2").get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:{GROUP_TAG}", "Values": [group]},
            {"Name": "instance-state-name", "Values": list(states)},
        ]
    )
    return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]


@pytest.fixture
def network(aws, run_module) -> dict[str, Any]:
    """A CAPA network (2 zones, public and private subnets, security groups) made by the collection's modules."""
    vpc = run_module("clusterapi.aws.capa_vpc", {"cluster_name": CLUSTER})["vpc"]
    subnets = run_module(
        "clusterapi.aws.capa_subnet",
        {
            "cluster_name": CLUSTER,
            "vpc_id": vpc["id"],
            "vpc_cidr_block": vpc["cidr_block"],
            "internet_gateway_id": vpc["internet_gateway_id"],
            "availability_zone_usage_limit": 2,
            "nat_gateways": "none",
            "wait_timeout": 30,
        },
    )["subnets"]
    groups = run_module(
        "clusterapi.aws.capa_security_group",
        {"cluster_name": CLUSTER, "vpc_id": vpc["id"], "vpc_cidr_block": vpc["cidr_block"]},
    )["security_groups"]
    assert len(subnets) == 4, subnets
    return {"vpc_id": vpc["id"], "subnets": subnets, "groups": groups}


def args(network: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "name": "md-0",
        "role": "node",
        "replicas": 2,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["node"]["id"]],
        "bootstrap": {"type": "raw", "data": CLOUD_CONFIG},
        "root_volume": {"size": 40},
        "wait_timeout": 60,
    }
    base.update(extra)
    return base


def run_ok(run_module, module_args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = run_module(MODULE, module_args, **kw)
    assert not result.get("failed"), result
    return result


# create, no-op ------------------------------------------------------------------------------------------------
def test_workers_spread_tagged_imdsv2_encrypted_and_no_secret_in_user_data(aws, run_module, network):
    result = run_ok(run_module, args(network))
    assert result["changed"]
    assert result["ami_id"] == LATEST_CAPA_AMI_X86
    assert result["replicas"] == {"desired": 2, "ready": 2, "updated": 2}
    machines = result["machines"]
    assert len(machines) == 2
    private = {s["availability_zone"]: s["id"] for s in network["subnets"] if not s["is_public"]}
    assert sorted(m["availability_zone"] for m in machines) == sorted(private)
    assert {m["subnet_id"] for m in machines} == set(private.values())
    for m in machines:
        assert m["name"].startswith(f"{CLUSTER}-md-0-") and len(m["name"]) == len(f"{CLUSTER}-md-0-") + 5
        assert m["status"] == {"InstanceReady": {"status": True, "reason": ""}}
        assert m["template_hash"] == result["template_hash"]
    runs = [p for p in result["plan"] if p["call"] == "ec2:RunInstances"]
    assert len(runs) == 2

    ec2 = aws.client("ec2")
    sm = aws.client("secretsmanager")
    for instance in _instances(aws, "md-0"):
        tags = _tags(instance["Tags"])
        name = tags["Name"]
        assert tags[OWNER] == "owned" and tags[ROLE] == "node"
        assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"
        assert tags["MachineName"] == f"{CLUSTER}/{name}"
        assert tags[GROUP_TAG] == "md-0" and tags[HASH_TAG] == result["template_hash"]
        assert instance["MetadataOptions"]["HttpTokens"] == "required"
        assert instance["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
        assert instance["ImageId"] == LATEST_CAPA_AMI_X86
        assert {g["GroupId"] for g in instance["SecurityGroups"]} == {network["groups"]["node"]["id"]}
        volume_id = instance["BlockDeviceMappings"][0]["Ebs"]["VolumeId"]
        volume = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
        assert volume["Encrypted"] and volume["Size"] == 40
        assert _tags(volume.get("Tags"))["Name"] == name

        user_data = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        text = base64.b64decode(user_data["UserData"]["Value"]).decode()
        assert "multipart/mixed" in text and "text/cloud-boothook" in text and "file:///etc/secret-userdata.txt" in text
        assert "secret-token-abc123" not in text and "runcmd" not in text

        backend, prefix, count = tags[BOOTSTRAP_TAG].split(":")
        assert backend == "secrets-manager" and prefix.startswith("aws.cluster.x-k8s.io/") and count == "1"
        assert f'PREFIX="{prefix}"' in text
        secret = sm.get_secret_value(SecretId=f"{prefix}-0")
        assert gzip.decompress(secret["SecretBinary"]).decode() == CLOUD_CONFIG
        secret_tags = _tags(sm.describe_secret(SecretId=f"{prefix}-0")["Tags"])
        assert secret_tags["Name"] == name and secret_tags[OWNER] == "owned"


def _noop_calls(aws, run_module, network, replicas: int) -> dict[str, int]:
    run_ok(run_module, args(network, replicas=replicas))
    aws.reset_requests()
    second = run_ok(run_module, args(network, replicas=replicas))
    assert not second["changed"] and second["plan"] == []
    assert aws.mutating_requests() == []
    assert len(second["machines"]) == replicas
    return second["api_calls"]


def test_second_run_only_describes_and_costs_the_same_for_2_and_6_machines(aws, run_module, network):
    two = _noop_calls(aws, run_module, network, 2)
    six = _noop_calls(aws, run_module, network, 6)
    assert two == six == {"ec2:DescribeImages": 1, "ec2:DescribeInstanceTypes": 1, "ec2:DescribeInstances": 1}


def test_ssm_backend_stores_securestring_chunks(aws, run_module, network):
    result = run_ok(
        run_module,
        args(network, replicas=1, bootstrap={"type": "raw", "data": CLOUD_CONFIG, "backend": "ssm-parameter-store"}),
    )
    instance = _instances(aws, "md-0")[0]
    backend, prefix, count = _tags(instance["Tags"])[BOOTSTRAP_TAG].split(":")
    assert backend == "ssm-parameter-store" and prefix.startswith("/cluster.x-k8s.io/") and count == "1"
    parameter = aws.client("ssm").get_parameter(Name=f"{prefix}/0", WithDecryption=True)["Parameter"]
    assert parameter["Type"] == "SecureString"
    assert gzip.decompress(base64.b64decode(parameter["Value"])).decode() == CLOUD_CONFIG
    assert [p["call"] for p in result["plan"]] == ["ssm:PutParameter", "ec2:RunInstances"]

    run_ok(run_module, args(network, state="absent"))
    assert aws.client("ssm").describe_parameters()["Parameters"] == []
