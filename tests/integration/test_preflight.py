"""Preflight: specs that are well formed but wrong for the account fail through site.yml before the first change.

``capa_cluster_spec`` accepts every spec below; each is wrong only against the account (a zone the region lacks,
an instance type not offered in a zone, an arm64 type with an x86_64 AMI, a key pair / instance profile / AMI /
subnet / security group / load balancer / KMS key that does not exist or cannot be used, an EKS version AWS does not
offer, a quota the cluster would exceed). ONE inventory holds a host per bad spec; ``playbooks/site.yml`` runs once:
every host must fail at the preflight with a message naming the field, no host may change anything, and the moto
server's request log must hold ZERO mutating requests (the preflight's reads are Describe/List/Get). The same
inventory then runs with ``--check --diff``: every host reports ``would fail: ...`` naming the same fields.

The account facts are set up before the request log is reset: a disabled KMS key, an AMI registered in another
region (so its id is not found in us-east-1), a VPC brought by id, VPCs / Elastic IPs / NAT gateways using up
AWS's default quotas of their regions (real usage, counted by the preflight's own reads), and one applied quota
(classic load balancers set to 0 in eu-central-1, as an account whose quota was lowered). moto lacks EKS
``DescribeClusterVersions``, EKS in the tagging API and the EC2/ELB Service Quotas: the embedded endpoint's fixes
10-12 (tools/moto_server.py) serve them, and tests/unit/plugins/module_utils/cluster/test_preflight.py checks the
same requests against AWS's service model with Stubber.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster_helpers import eks_spec

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
FORKS = {"ANSIBLE_FORKS": "10"}
PREFLIGHT_TASK = "Preflight (what the spec needs from the account, checked before the first change)"
CAPA_X86_AMI = "ami-20d96325567dfd672"  # tools/moto_amis.json: capa-ami-ubuntu-24.04-v1.31.2, x86_64
MISSING_AMI = "ami-0123456789abcdef0"
MISSING_KEY = "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000"
SUBNETS = [
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24", "is_public": True},
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.1.0/24"},
]


def base(name: str, region: str = "us-east-1", **spec: Any) -> dict[str, Any]:
    """A small valid self-managed cluster (one AZ, no NAT) the cases change one thing of."""
    return {
        "name": name,
        "region": region,
        "kubernetes_version": "v1.31.2",
        "network": {
            "subnets": [
                {**s, "availability_zone": s["availability_zone"].replace("us-east-1", region)} for s in SUBNETS
            ],
            "nat_gateways": "none",
        },
        **spec,
    }


def eks(name: str, **eks_fields: Any) -> dict[str, Any]:
    """The stock small EKS cluster with ``eks_fields`` changed."""
    spec = eks_spec(name)
    spec["eks"] = {**spec["eks"], **eks_fields}
    return spec


def account(aws: Any) -> dict[str, str]:
    """The account facts the cases need (their requests are made before the log is reset)."""
    kms = aws.client("kms")
    key = kms.create_key(Description="disabled")["KeyMetadata"]
    kms.disable_key(KeyId=key["KeyId"])
    disabled = key["Arn"]
    west2 = aws.client("ec2", "us-west-2")
    foreign_ami = west2.register_image(Name="elsewhere", RootDeviceName="/dev/sda1", Architecture="x86_64")["ImageId"]
    byo_vpc = aws.client("ec2").create_vpc(CidrBlock="10.50.0.0/16")["Vpc"]["VpcId"]
    # us-west-1: the default VPC and 4 more fill AWS's default quota of 5 VPCs.
    west1 = aws.client("ec2", "us-west-1")
    for n in range(4):
        west1.create_vpc(CidrBlock=f"10.{60 + n}.0.0/16")
    # us-west-2: 5 Elastic IPs fill the default quota of 5.
    for _count in range(5):
        west2.allocate_address(Domain="vpc")
    # eu-west-1: 5 NAT gateways in eu-west-1a fill the default quota of 5 per zone.
    eu = aws.client("ec2", "eu-west-1")
    vpc = eu.create_vpc(CidrBlock="10.70.0.0/16")["Vpc"]["VpcId"]
    subnet = eu.create_subnet(VpcId=vpc, CidrBlock="10.70.0.0/24", AvailabilityZone="eu-west-1a")["Subnet"]["SubnetId"]
    for _count in range(5):
        allocation = eu.allocate_address(Domain="vpc")["AllocationId"]
        eu.create_nat_gateway(SubnetId=subnet, AllocationId=allocation)
    # eu-central-1: an account whose classic load balancer quota was lowered to 0 (moto fix 12's applied value).
    body = json.dumps({"region": "eu-central-1", "service": "elasticloadbalancing", "code": "L-E9E9831D", "value": 0})
    request = urllib.request.Request(f"{aws.url}/_capa/quotas", data=body.encode(), method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass
    return {"disabled_key": disabled, "foreign_ami": foreign_ami, "byo_vpc": byo_vpc}


def cases(facts: dict[str, str]) -> list[tuple[str, dict[str, Any], tuple[str, ...]]]:
    """(host, spec, texts its failure must contain - the field first)."""
    return [
        (
            "pf-zone",
            base(
                "pf-zone",
                network={
                    "subnets": [SUBNETS[0], {**SUBNETS[1], "availability_zone": "us-east-1z"}],
                    "nat_gateways": "none",
                },
            ),
            (
                "capa_cluster.network.subnets[1].availability_zone: us-east-1z does not exist in us-east-1 (zones: "
                "us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f)",
            ),
        ),
        (
            "pf-offering",
            base(
                "pf-offering",
                network={
                    "subnets": [{**s, "availability_zone": "us-east-1e"} for s in SUBNETS],
                    "nat_gateways": "none",
                },
            ),
            ("capa_cluster.control_plane.instance_type: t3.large is not offered in us-east-1e",),
        ),
        (
            "pf-arch",
            base("pf-arch", control_plane={"instance_type": "m6g.large", "ami": {"id": CAPA_X86_AMI}}),
            (f"capa_cluster.control_plane.instance_type: m6g.large runs arm64, but AMI {CAPA_X86_AMI}", "is x86_64"),
        ),
        (
            "pf-key",
            base("pf-key", ssh_key_name="no-such-key"),
            ("capa_cluster.ssh_key_name: key pair no-such-key does not exist in us-east-1",),
        ),
        (
            "pf-profile",
            base("pf-profile", machine_deployments=[{"name": "md-0", "iam_instance_profile": "no-such-profile"}]),
            (
                "capa_cluster.machine_deployments[0].iam_instance_profile: instance profile no-such-profile does not "
                "exist",
            ),
        ),
        (
            "pf-ami",
            base("pf-ami", control_plane={"ami": {"id": MISSING_AMI}}),
            (f"capa_cluster.control_plane.ami.id: {MISSING_AMI} not found in us-east-1",),
        ),
        (
            "pf-foreign-ami",
            base("pf-foreign-ami", machine_deployments=[{"name": "md-0", "ami": {"id": facts["foreign_ami"]}}]),
            (f"capa_cluster.machine_deployments[0].ami.id: {facts['foreign_ami']} not found in us-east-1",),
        ),
        (
            "pf-subnet",
            base(
                "pf-subnet", network={"vpc": {"id": facts["byo_vpc"]}, "subnets": [{"id": "subnet-0123456789abcdef0"}]}
            ),
            ("capa_cluster.network.subnets[0].id: subnet-0123456789abcdef0 does not exist in us-east-1",),
        ),
        (
            "pf-sg",
            base(
                "pf-sg", network={**base("x")["network"], "security_group_overrides": {"node": "sg-0123456789abcdef0"}}
            ),
            ("capa_cluster.network.security_group_overrides.node: sg-0123456789abcdef0 does not exist in us-east-1",),
        ),
        (
            "pf-lb",
            base("pf-lb", control_plane_load_balancer={"type": "external", "name": "no-such-lb"}),
            ("capa_cluster.control_plane_load_balancer.name: no load balancer named no-such-lb exists in us-east-1",),
        ),
        (
            "pf-kms-disabled",
            eks("pf-kms-disabled", encryption_config={"provider": facts["disabled_key"]}),
            (
                f"capa_cluster.eks.encryption_config.provider: KMS key {facts['disabled_key']} is not enabled "
                "(state Disabled)",
            ),
        ),
        (
            "pf-kms-missing",
            eks("pf-kms-missing", encryption_config={"provider": MISSING_KEY}),
            (f"capa_cluster.eks.encryption_config.provider: KMS key {MISSING_KEY} does not exist in us-east-1",),
        ),
        (
            "pf-eks-version",
            eks("pf-eks-version", version="1.19"),
            (
                "capa_cluster.eks.version: EKS does not offer Kubernetes 1.19 in us-east-1 (offered: 1.28, 1.29, 1.30, "
                "1.31, 1.32, 1.33)",
            ),
        ),
        (
            "pf-vpc-quota",
            base("pf-vpc-quota", region="us-west-1"),
            (
                "capa_cluster.network.vpc: the run adds 1 to the 5 already in use, above the quota of 5 (VPCs per "
                "Region, vpc L-F678F1CE)",
            ),
        ),
        (
            "pf-eip-quota",
            base("pf-eip-quota", region="us-west-2", network={"vpc": {"availability_zone_usage_limit": 2}}),
            (
                "capa_cluster.network.nat_gateways: the run adds 2 to the 5 already in use, above the quota of 5 "
                "(EC2-VPC Elastic IPs, ec2 L-0263D0A3)",
            ),
        ),
        (
            "pf-nat-quota",
            base(
                "pf-nat-quota",
                region="eu-west-1",
                network={**base("x", "eu-west-1")["network"], "nat_gateways": "per_az"},
            ),
            (
                "capa_cluster.network.nat_gateways: eu-west-1a: the run adds 1 to the 5 already in use, above the "
                "quota of 5 (NAT gateways per Availability Zone, vpc L-FE5A380F)",
            ),
        ),
        (
            "pf-vcpu-quota",
            base(
                "pf-vcpu-quota", machine_deployments=[{"name": "md-0", "replicas": 12, "instance_type": "m5.24xlarge"}]
            ),
            (
                "capa_cluster.machine_deployments[0]: the run adds 1154 vCPUs (capa_cluster.control_plane: 2, "
                "capa_cluster.machine_deployments[0]: 1152)",
                "above the quota of 1152 (Running On-Demand Standard",
                "ec2 L-1216C47A)",
            ),
        ),
        (
            "pf-spot-quota",
            base(
                "pf-spot-quota",
                machine_pools=[
                    {
                        "name": "spot-0",
                        "min_size": 13,
                        "max_size": 13,
                        "instance_type": "m5.24xlarge",
                        "spot_market_options": {},
                    }
                ],
            ),
            (
                "capa_cluster.machine_pools[0]: the run adds 1248 vCPUs",
                "(All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests, ec2 L-34B43A08)",
            ),
        ),
        (
            "pf-clb-quota",
            base("pf-clb-quota", region="eu-central-1"),
            (
                "capa_cluster.control_plane_load_balancer.type: the run adds 1 to the 0 already in use, above the "
                "quota of 0 (Classic Load Balancers per Region, elasticloadbalancing L-E9E9831D)",
            ),
        ),
    ]


def write(tmp_path: Path, hosts: dict[str, dict[str, Any]]) -> Path:
    data = {
        "capa_clusters": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "capa_output_dir": str(tmp_path / "out"),
            },
            "hosts": {host: {"capa_cluster": spec} for host, spec in hosts.items()},
        }
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def preflight_failures(result: Any) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for task in result.tasks:
        if task.failed:
            found.setdefault(task.host, []).append(f"{task.name} | {task.result.get('msg', '')}")
    return found


@pytest.fixture
def bad_specs(aws, tmp_path):
    all_cases = cases(account(aws))
    inventory = write(tmp_path, {host: spec for host, spec, _texts in all_cases})
    aws.reset_requests()
    return all_cases, inventory


@pytest.mark.parametrize("check", [False, True], ids=["run", "check-mode"])
def test_bad_specs_fail_at_the_preflight_with_no_mutating_request(aws, run_playbook, bad_specs, check):
    all_cases, inventory = bad_specs
    assert len(all_cases) >= 15
    result = run_playbook(SITE, inventory=inventory, env=FORKS, check=check, diff=check, expect_rc=None)
    assert result.rc != 0, result.describe()
    failed = preflight_failures(result)
    prefix = "would fail: " if check else "preflight: "
    problems = []
    for host, _spec, texts in all_cases:
        messages = failed.get(host, [])
        if len(messages) != 1:
            problems.append(f"{host}: expected one failure, got {messages}")
            continue
        task, _sep, msg = messages[0].partition(" | ")
        if not task.endswith(PREFLIGHT_TASK) or not msg.startswith(prefix):
            problems.append(f"{host}: failed elsewhere or unprefixed: {messages[0]}")
        missing = [text for text in texts if text not in msg]
        if missing:
            problems.append(f"{host}: {missing} not in {msg}")
        if result.stats[host]["changed"] != 0:
            problems.append(f"{host}: changed {result.stats[host]}")
    assert problems == [], "\n".join(problems)
    assert aws.mutating_requests() == []
    reads = sorted({f"{r['service']}:{r['operation']}" for r in aws.requests()})
    print(
        f"preflight ({'check mode' if check else 'run'}): {len(all_cases)} bad specs refused, mutating requests: 0, "
        f"reads: {reads}"
    )
