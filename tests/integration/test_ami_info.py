# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_ami_info and the capa_ami lookup against the moto server: CAPA's published images (tools/moto_amis.json,
owner 819546954734, loaded in every region) and images registered here with CAPA's naming (owned by the test
account). moto's RegisterImage drops Architecture and VirtualizationType (so the architecture filter would never
match), so images are registered with CopyImage from a published one, which keeps both. moto does not serve AWS's
public /aws/service/eks/optimized-ami parameters, so eks_optimized finds nothing here; its found path is
Stubber-tested in tests/unit/plugins/module_utils/test_ami_info.py."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

MODULE = "clusterapi.aws.capa_ami_info"
ACCOUNT = "123456789012"
SOURCES = {"x86_64": "ami-b3b51f567c20d5e91", "arm64": "ami-22d96e4fbcd717edf"}


def register(ec2, name: str, arch: str = "x86_64") -> str:
    return ec2.copy_image(Name=name, SourceImageId=SOURCES[arch], SourceRegion="us-east-1")["ImageId"]


def test_newest_per_region_os_version_and_architecture(aws, run_module):
    aws.reset_requests()
    result = run_module(
        MODULE,
        {
            "cluster_name": "amis",
            "kubernetes_versions": ["v1.31.2", "1.32.0"],
            "base_oses": ["ubuntu-24.04", "ubuntu-22.04"],
            "regions": ["us-east-1", "eu-west-1"],
            "architectures": ["x86_64", "arm64"],
        },
    )
    assert not result.get("failed") and not result["changed"], result
    images = result["images"]
    by_key = {(i["region"], i["base_os"], i["kubernetes_version"], i["architecture"]): i for i in images}
    assert len(by_key) == len(images) == 10  # 5 (OS, version, arch) combinations with images, in 2 regions
    # Two x86_64 v1.31.2 Ubuntu 24.04 images are published; the newer wins.
    assert by_key[("us-east-1", "ubuntu-24.04", "v1.31.2", "x86_64")]["image_id"] == "ami-b3b51f567c20d5e91"
    assert by_key[("eu-west-1", "ubuntu-24.04", "1.32.0", "arm64")]["image_id"] == "ami-d0512026226456fdb"
    assert ("us-east-1", "ubuntu-22.04", "1.32.0", "x86_64") not in by_key
    dates = [i["creation_date"] for i in images]
    assert dates == sorted(dates, reverse=True)
    assert result["api_calls"] == {"ec2:DescribeImages": 2}
    assert {(r["service"], r["operation"]) for r in aws.requests()} == {("ec2", "DescribeImages")}
    assert len(aws.requests()) == 2


def test_registered_images_with_and_without_v(aws, run_module):
    ec2 = aws.client("ec2")
    register(ec2, "capa-ami-rhel-8-1.33.1-1740000000")
    time.sleep(1.1)  # CreationDate has whole seconds: the next one is newer
    bare = register(ec2, "capa-ami-rhel-8-1.33.1-1750000000")
    with_v = register(ec2, "capa-ami-flatcar-stable-v1.33.1-1750000000")
    arm = register(ec2, "capa-ami-flatcar-stable-v1.33.1-1750000000-arm", "arm64")
    register(ec2, "capa-ami-rhel-8-1.33.10-1750000000")  # another version: not a match for 1.33.1
    register(ec2, "not-capa-rhel-8-1.33.1")
    result = run_module(
        MODULE,
        {
            "cluster_name": "amis",
            "kubernetes_versions": ["v1.33.1"],
            "owner": ACCOUNT,
            "architectures": ["x86_64", "arm64"],
        },
    )
    found = {(i["base_os"], i["architecture"]): i["image_id"] for i in result["images"]}
    assert found == {("rhel-8", "x86_64"): bare, ("flatcar-stable", "x86_64"): with_v, ("flatcar-stable", "arm64"): arm}
    assert all(i["owner"] == ACCOUNT and i["name"].startswith("capa-ami-") for i in result["images"])


def test_none_found_is_reported_clearly(aws, run_module):
    result = run_module(
        MODULE,
        {
            "cluster_name": "amis",
            "kubernetes_versions": ["v1.99.0"],
            "base_oses": ["ubuntu-24.04"],
            "eks_optimized": True,
        },
    )
    assert not result.get("failed"), result
    assert result["images"] == []
    assert "v1.99.0" in result["msg"] and "ubuntu-24.04" in result["msg"] and "819546954734" in result["msg"]
    assert any("no image found" in w for w in result.get("warnings", []))
    # Once, as a warning: not handed back to exit_json as a `warnings` key too, which ansible-core 2.19 and later
    # answer with a deprecation of their own (amazon.aws 10's AnsibleAWSModule.warn does that; capa._warn does not).
    assert result.get("deprecations", []) == [], result["deprecations"]
    assert result["api_calls"] == {"ec2:DescribeImages": 1, "ssm:GetParameters": 1}


def test_bad_version_fails_before_any_call(aws, run_module):
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": "amis", "kubernetes_versions": ["latest"]})
    assert result["failed"] and result["field"] == "kubernetes_versions[0]", result
    assert aws.requests() == []


def test_lookup_returns_the_machine_image(aws, run_playbook):
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "lookup",
                    "ansible.builtin.debug": {
                        "msg": "{{ query('clusterapi.aws.capa_ami', 'v1.31.2', '1.32.0', region='us-east-1') }}"
                    },
                },
                {
                    "name": "arm",
                    "ansible.builtin.debug": {
                        "msg": "{{ lookup('clusterapi.aws.capa_ami', 'v1.32.0', architecture='arm64') }}"
                    },
                },
                {
                    "name": "missing",
                    "ansible.builtin.debug": {"msg": "{{ lookup('clusterapi.aws.capa_ami', 'v1.99.0') }}"},
                    "ignore_errors": True,
                },
            ],
        }
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lookup.yml"
        path.write_text(json.dumps(play))
        result = run_playbook(path)
    assert result.task("lookup").result["msg"] == ["ami-b3b51f567c20d5e91", "ami-c738bdd8e6de00d1d"]
    assert result.task("arm").result["msg"] == "ami-d0512026226456fdb"
    missing = result.task("missing").result
    assert missing.get("failed") and "no x86_64 image of owner 819546954734" in missing["msg"], missing
