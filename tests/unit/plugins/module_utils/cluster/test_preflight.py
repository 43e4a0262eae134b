# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""cluster/preflight.py: what a spec needs from the account, what a run would create, and every failure at once.

The decisions are pure and table-tested here: :func:`needs` (spec -> what the account must have), :func:`existing_from`
and :func:`plan_checks` (what the one tagging-API read shows -> what the run creates), :func:`failures` (facts ->
every problem, each naming the spec field). The reads run against botocore's Stubber, which checks each request
against AWS's service model: moto lacks EKS ``DescribeClusterVersions``, knows Service Quotas only for the ``vpc``
service, and leaves EKS out of the tagging API (the embedded endpoint's fixes 10-12 in tools/moto_server.py add
them for the integration tests, tests/integration/test_preflight.py, which run site.yml against it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import boto3
import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.aws.errors import cannot_read
from ansible_collections.clusterapi.aws.plugins.module_utils.aws.iam import principal_of
from ansible_collections.clusterapi.aws.plugins.module_utils.aws.tagging import OWNED_TYPES
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import preflight as pf
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_spec import module_argument_spec
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import compile_cluster
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

REGION = "us-east-1"
ZONES = tuple(pf.Zone(f"us-east-1{letter}", "available") for letter in "abcdef")
X86_AMI = "ami-0123456789abcdef0"
OWNER_TAG = "sigs.k8s.io/cluster-api-provider-aws/cluster/demo"


def compiled(spec: dict[str, Any]) -> dict[str, Any]:
    validated = ArgumentSpecValidator(module_argument_spec()).validate({"cluster": {"region": REGION, **spec}})
    assert not validated.error_messages, validated.error_messages
    return compile_cluster(validated.validated_parameters["cluster"], None, None, "/out")["steps"]


def needs_of(**spec: Any) -> pf.Needs:
    step = compiled({"name": "demo", **spec})["preflight"]
    return pf.needs(pf.read_spec(step["spec"]), REGION)


def offered(types: dict[str, str] | None = None) -> dict[str, frozenset[str]]:
    """Every type offered in every zone but us-east-1e (as in AWS's us-east-1 for t3 and m5)."""
    zones = frozenset(z.name for z in ZONES if z.name != "us-east-1e")
    return {t: zones for t in ("t3.large", "t3.micro", "m5.large", "m6g.large", "m5.24xlarge")}


def instance_types() -> dict[str, pf.InstanceType]:
    return {
        "t3.large": pf.InstanceType(("x86_64",), 2),
        "t3.micro": pf.InstanceType(("x86_64",), 2),
        "m5.large": pf.InstanceType(("x86_64",), 2),
        "m5.24xlarge": pf.InstanceType(("x86_64",), 96),
        "m6g.large": pf.InstanceType(("arm64",), 2),
    }


def facts(**over: Any) -> pf.Facts:
    base: dict[str, Any] = {
        "zones": ZONES,
        "offerings": offered(),
        "instance_types": instance_types(),
        "images": {X86_AMI: "x86_64"},
        "key_pairs": frozenset({"ops"}),
        "instance_profiles": frozenset({"nodes.cluster-api-provider-aws.sigs.k8s.io"}),
        "quotas": {name: 1000.0 for name in pf.QUOTAS},
        "usage": pf.Usage(0, 0, {}, 0, 0, 0, 0),
    }
    base.update(over)
    return pf.Facts(**base)


def fails(checks: pf.Checks, found: pf.Facts) -> list[str]:
    return [str(f) for f in pf.failures(checks, found)]


# what the spec asks -------------------------------------------------------------------------------------------------
def test_needs_inherit_the_cluster_key_and_name_where_it_was_written():
    needs = needs_of(
        ssh_key_name="ops", machine_deployments=[{"name": "md-0"}, {"name": "md-1", "ssh_key_name": "own"}]
    )
    by_field = {m.field: m for m in needs.machines}
    assert by_field["capa_cluster.control_plane"].key_field == "capa_cluster.ssh_key_name"
    assert by_field["capa_cluster.machine_deployments[0]"].ssh_key_name == "ops"
    assert (
        by_field["capa_cluster.machine_deployments[1]"].key_field == "capa_cluster.machine_deployments[1].ssh_key_name"
    )


@pytest.mark.parametrize(
    ("pool", "size", "spot"),
    [
        ({"min_size": 2, "max_size": 4}, 2, 0),
        ({"min_size": 1, "max_size": 4, "desired_capacity": 3, "spot_market_options": {}}, 3, 3),
        (
            {
                "min_size": 1,
                "max_size": 6,
                "desired_capacity": 5,
                "mixed_instances_policy": {
                    "instances_distribution": {
                        "on_demand_base_capacity": 1,
                        "on_demand_percentage_above_base_capacity": 50,
                    },
                    "overrides": [{"instance_type": "t3.large"}],
                },
            },
            5,
            2,
        ),
        (
            {
                "kind": "fleet",
                "min_size": 1,
                "max_size": 4,
                "desired_capacity": 3,
                "mixed_instances_policy": {
                    "instances_distribution": {"on_demand_base_capacity": 1},
                    "overrides": [{"instance_type": "t3.large"}],
                },
            },
            3,
            2,
        ),
    ],
)
def test_pool_capacity_splits_on_demand_and_spot_as_the_pool_launches(pool, size, spot):
    needs = needs_of(machine_pools=[{"name": "pool-0", **pool}])
    machines = next(m for m in needs.machines if m.kind == "pool")
    assert (machines.size, machines.spot) == (size, spot)


@pytest.mark.parametrize(
    ("ami_type", "arch"),
    [
        ("AL2023_x86_64_STANDARD", "x86_64"),
        ("AL2023_ARM_64_STANDARD", "arm64"),
        ("BOTTLEROCKET_ARM_64", "arm64"),
        ("CUSTOM", None),
    ],
)
def test_node_group_architecture_from_its_ami_type(ami_type, arch):
    assert pf.ami_type_architecture(ami_type) == arch


@pytest.mark.parametrize(
    ("instance_type", "standard"),
    [
        ("t3.large", True),
        ("m6g.large", True),
        ("c7i.xlarge", True),
        ("p5.48xlarge", False),
        ("g5.xlarge", False),
        ("inf2.xlarge", False),
        ("trn1.2xlarge", False),
        ("hpc7g.4xlarge", False),
        ("x2idn.large", False),
    ],
)
def test_standard_families_are_the_ones_the_vcpu_quotas_count(instance_type, standard):
    assert pf.is_standard(instance_type) is standard


# what exists and what the run creates -----------------------------------------------------------------------------
def tagged(arn: str, **tags: str) -> dict[str, Any]:
    return {"ResourceARN": arn, "Tags": [{"Key": k, "Value": v} for k, v in {OWNER_TAG: "owned", **tags}.items()]}


EXISTING = [
    tagged("arn:aws:ec2:us-east-1:123456789012:vpc/vpc-1"),
    tagged("arn:aws:ec2:us-east-1:123456789012:subnet/subnet-1"),
    tagged("arn:aws:ec2:us-east-1:123456789012:natgateway/nat-1"),
    *[
        tagged(f"arn:aws:ec2:us-east-1:123456789012:instance/i-cp{n}", **{pf.MACHINE_GROUP_TAG: "control-plane"})
        for n in range(3)
    ],
    tagged("arn:aws:ec2:us-east-1:123456789012:instance/i-md", **{pf.MACHINE_GROUP_TAG: "md-0"}),
    tagged("arn:aws:ec2:us-east-1:123456789012:instance/i-asg", **{pf.ASG_NAME_TAG: "mp-0"}),
    tagged("arn:aws:ec2:us-east-1:123456789012:instance/i-fleet", **{pf.POOL_TAG: "fp-0"}),
    tagged("arn:aws:eks:us-east-1:123456789012:cluster/demo-eks"),
    tagged("arn:aws:eks:us-east-1:123456789012:nodegroup/demo-eks/ng-0-a1b2c/uuid", **{pf.NODE_GROUP_TAG: "ng-0"}),
]


def test_existing_counts_what_the_tagging_api_returns():
    existing = pf.existing_from(EXISTING)
    assert (existing.vpcs, existing.subnets, existing.nat_gateways) == (1, 1, 1)
    assert existing.machines == {"control-plane": 3, "md-0": 1, "mp-0": 1, "fp-0": 1}
    assert existing.eks_clusters == {"demo-eks"} and existing.node_groups == {"ng-0"}


POOL = {"name": "mp-0", "min_size": 1, "max_size": 3, "desired_capacity": 2}
PLAN_CASES = [
    ("empty account: everything", {}, pf.Existing(), (True, True, True, False), {"capa_cluster.control_plane": 1}),
    (
        "no-op: every group at its size",
        {"control_plane": {"replicas": 3}, "machine_deployments": [{"name": "md-0"}], "machine_pools": [POOL]},
        pf.existing_from(EXISTING),
        (False, False, False, False),
        {},
    ),
    (
        "a worker short: only it",
        {"control_plane": {"replicas": 3}, "machine_deployments": [{"name": "md-0", "replicas": 3}]},
        pf.existing_from(EXISTING),
        (False, False, False, False),
        {"capa_cluster.machine_deployments[0]": 2},
    ),
    (
        "a new pool: all of it",
        {"control_plane": {"replicas": 3}, "machine_pools": [{**POOL, "name": "mp-1"}]},
        pf.existing_from(EXISTING),
        (False, False, False, False),
        {"capa_cluster.machine_pools[0]": 2},
    ),
]


@pytest.mark.parametrize(
    ("what", "spec", "existing", "creates", "launches"), PLAN_CASES, ids=[c[0] for c in PLAN_CASES]
)
def test_plan_checks_keeps_what_the_run_would_create(what, spec, existing, creates, launches):
    checks = pf.plan_checks(needs_of(**spec), existing)
    assert (checks.creates_network, checks.creates_vpc, checks.creates_lb, checks.creates_eks) == creates
    assert {launch.machines.field: launch.count for launch in checks.launches} == launches
    assert checks.nothing is (not any(creates) and not launches)


def test_eks_cluster_and_node_group_that_exist_are_not_created():
    needs = pf.needs(
        pf.read_spec(
            compiled({"name": "demo-eks", "kind": "eks", "eks": {"node_groups": [{"name": "ng-0"}, {"name": "ng-1"}]}})[
                "preflight"
            ]["spec"]
        ),
        REGION,
    )
    checks = pf.plan_checks(needs, pf.existing_from(EXISTING))
    assert not checks.creates_eks and not checks.creates_network
    assert [launch.machines.group for launch in checks.launches] == ["ng-1"]


# every failure, naming the field ----------------------------------------------------------------------------------
SUBNETS = [
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24", "is_public": True},
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.1.0/24"},
]
FAILURE_CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("a good spec", {"ssh_key_name": "ops"}, {}, []),
    (
        "zone that does not exist",
        {"network": {"subnets": [SUBNETS[0], {**SUBNETS[1], "availability_zone": "us-east-1z"}]}},
        {},
        [
            "capa_cluster.network.subnets[1].availability_zone: us-east-1z does not exist in us-east-1 "
            "(zones: us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f)"
        ],
    ),
    (
        "zone impaired",
        {"network": {"subnets": SUBNETS}},
        {"zones": (pf.Zone("us-east-1a", "impaired"), *ZONES[1:])},
        [
            "capa_cluster.network.subnets[0].availability_zone: us-east-1a is impaired, not available",
            "capa_cluster.network.subnets[1].availability_zone: us-east-1a is impaired, not available",
        ],
    ),
    (
        "instance type not offered in a zone",
        {"network": {"subnets": [SUBNETS[0], {**SUBNETS[1], "availability_zone": "us-east-1e"}]}},
        {},
        [
            "capa_cluster.control_plane.instance_type: t3.large is not offered in us-east-1e (offered in us-east-1a, "
            "us-east-1b, us-east-1c, us-east-1d, us-east-1f)"
        ],
    ),
    (
        "instance type not offered in the region",
        {"machine_deployments": [{"name": "md-0", "instance_type": "x9.huge"}]},
        {},
        ["capa_cluster.machine_deployments[0].instance_type: x9.huge is not offered in us-east-1"],
    ),
    (
        "failure domain that does not exist",
        {"machine_deployments": [{"name": "md-0", "failure_domains": ["us-east-1q"]}]},
        {},
        [
            "capa_cluster.machine_deployments[0].failure_domains[0]: us-east-1q does not exist in us-east-1 (zones: "
            "us-east-1a, us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f)"
        ],
    ),
    (
        "arm64 type with an x86_64 AMI",
        {"control_plane": {"instance_type": "m6g.large", "ami": {"id": X86_AMI}}},
        {},
        [
            f"capa_cluster.control_plane.instance_type: m6g.large runs arm64, but AMI {X86_AMI} "
            "(capa_cluster.control_plane.ami.id) is x86_64"
        ],
    ),
    (
        "AMI id not found (or another region's)",
        {"control_plane": {"ami": {"id": "ami-0aaaaaaaaaaaaaaaa"}}},
        {},
        ["capa_cluster.control_plane.ami.id: ami-0aaaaaaaaaaaaaaaa not found in us-east-1"],
    ),
    (
        "no image for CAPA's lookup",
        {},
        {
            "lookups": {
                (
                    pf.Lookup("819546954734", ("capa-ami-ubuntu-24.04-?1.31.2-*", "capa-ami-ubuntu-24.04-?v1.31.2-*")),
                    "x86_64",
                ): False
            }
        },
        [
            "capa_cluster.control_plane.ami: no x86_64 image of owner 819546954734 named "
            "capa-ami-ubuntu-24.04-?1.31.2-* or capa-ami-ubuntu-24.04-?v1.31.2-* in us-east-1"
        ],
    ),
    (
        "key pair missing",
        {"ssh_key_name": "nope", "machine_deployments": [{"name": "md-0", "ssh_key_name": "gone"}]},
        {},
        [
            "capa_cluster.ssh_key_name: key pair nope does not exist in us-east-1",
            "capa_cluster.machine_deployments[0].ssh_key_name: key pair gone does not exist in us-east-1",
        ],
    ),
    (
        "instance profile missing",
        {"control_plane": {"iam_instance_profile": "nope"}},
        {},
        ["capa_cluster.control_plane.iam_instance_profile: instance profile nope does not exist"],
    ),
    (
        "BYO VPC and subnet missing",
        {"network": {"vpc": {"id": "vpc-0123456789abcdef0"}, "subnets": [{"id": "subnet-0123456789abcdef0"}]}},
        {"vpc_found": False},
        [
            "capa_cluster.network.vpc.id: vpc-0123456789abcdef0 does not exist in us-east-1",
            "capa_cluster.network.subnets[0].id: subnet-0123456789abcdef0 does not exist in us-east-1",
        ],
    ),
    (
        "BYO security groups missing",
        {
            "network": {"security_group_overrides": {"node": "sg-0123456789abcdef0"}},
            "machine_deployments": [{"name": "md-0", "additional_security_group_ids": ["sg-0fedcba9876543210"]}],
        },
        {},
        [
            "capa_cluster.network.security_group_overrides.node: sg-0123456789abcdef0 does not exist in us-east-1",
            "capa_cluster.machine_deployments[0].additional_security_group_ids[0]: sg-0fedcba9876543210 does not "
            "exist in us-east-1",
        ],
    ),
    (
        "external load balancer missing",
        {"control_plane_load_balancer": {"type": "external", "name": "theirs"}},
        {"load_balancer_found": False},
        ["capa_cluster.control_plane_load_balancer.name: no load balancer named theirs exists in us-east-1"],
    ),
    (
        "VPC quota",
        {},
        {"usage": pf.Usage(5, 0, {}, 0, 0, 0, 0), "quotas": {**{n: 1000.0 for n in pf.QUOTAS}, "vpcs": 5.0}},
        [
            "capa_cluster.network.vpc: the run adds 1 to the 5 already in use, above the quota of 5 (VPCs per Region, "
            "vpc L-F678F1CE)"
        ],
    ),
    (
        "Elastic IP quota",
        {},
        {"usage": pf.Usage(0, 4, {}, 0, 0, 0, 0), "quotas": {**{n: 1000.0 for n in pf.QUOTAS}, "elastic_ips": 5.0}},
        [
            "capa_cluster.network.nat_gateways: the run adds 3 to the 4 already in use, above the quota of 5 (EC2-VPC "
            "Elastic IPs, ec2 L-0263D0A3) (one Elastic IP per NAT gateway)"
        ],
    ),
    (
        "NAT gateway quota of a zone",
        {},
        {
            "usage": pf.Usage(0, 0, {"us-east-1b": 5}, 0, 0, 0, 0),
            "quotas": {**{n: 1000.0 for n in pf.QUOTAS}, "nat_gateways": 5.0},
        },
        [
            "capa_cluster.network.nat_gateways: us-east-1b: the run adds 1 to the 5 already in use, above the quota of "
            "5 (NAT gateways per Availability Zone, vpc L-FE5A380F)"
        ],
    ),
    (
        "classic load balancer quota",
        {},
        {"usage": pf.Usage(0, 0, {}, 20, 0, 0, 0), "quotas": {**{n: 1000.0 for n in pf.QUOTAS}, "classic_lbs": 20.0}},
        [
            "capa_cluster.control_plane_load_balancer.type: the run adds 1 to the 20 already in use, above the quota "
            "of 20 (Classic Load Balancers per Region, elasticloadbalancing L-E9E9831D)"
        ],
    ),
    (
        "on-demand vCPU quota",
        {"machine_deployments": [{"name": "md-0", "replicas": 20, "instance_type": "m5.24xlarge"}]},
        {"usage": pf.Usage(0, 0, {}, 0, 0, 8, 0)},
        [
            "capa_cluster.machine_deployments[0]: the run adds 1922 vCPUs (capa_cluster.control_plane: 2, "
            "capa_cluster.machine_deployments[0]: 1920) to the 8 in use, above the quota of 1000 (Running On-Demand "
            "Standard (A, C, D, H, I, M, R, T, Z) instances, ec2 L-1216C47A)"
        ],
    ),
    (
        "spot vCPU quota",
        {
            "machine_pools": [
                {
                    "name": "mp-0",
                    "min_size": 11,
                    "max_size": 11,
                    "spot_market_options": {},
                    "instance_type": "m5.24xlarge",
                }
            ]
        },
        {},
        [
            "capa_cluster.machine_pools[0]: the run adds 1056 vCPUs (capa_cluster.machine_pools[0]: 1056) to the 0 in "
            "use, above the quota of 1000 (All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests, ec2 "
            "L-34B43A08)"
        ],
    ),
    (
        "a quota Service Quotas does not know is not checked",
        {},
        {"usage": pf.Usage(9, 0, {}, 0, 0, 0, 0), "quotas": {**{n: 1000.0 for n in pf.QUOTAS}, "vpcs": None}},
        [],
    ),
]


@pytest.mark.parametrize(("what", "spec", "over", "expected"), FAILURE_CASES, ids=[c[0] for c in FAILURE_CASES])
def test_failures_name_the_field_and_the_fact(what, spec, over, expected):
    checks = pf.plan_checks(needs_of(**spec), pf.Existing())
    assert fails(checks, facts(**over)) == expected


def test_every_failure_is_reported_at_once():
    spec = {
        "ssh_key_name": "nope",
        "network": {"subnets": [SUBNETS[0], {**SUBNETS[1], "availability_zone": "us-east-1z"}]},
        "control_plane": {"instance_type": "m6g.large", "ami": {"id": X86_AMI}, "iam_instance_profile": "gone"},
    }
    found = pf.failures(pf.plan_checks(needs_of(**spec), pf.Existing()), facts())
    assert [f.field for f in found] == [
        "capa_cluster.network.subnets[1].availability_zone",
        "capa_cluster.control_plane.instance_type",
        "capa_cluster.ssh_key_name",
        "capa_cluster.control_plane.iam_instance_profile",
    ]


EKS = {"name": "demo-eks", "kind": "eks", "eks": {"version": "1.31", "node_groups": [{"name": "ng-0"}]}}
EKS_CASES = [
    ("offered", {}, {"eks_versions": ("1.30", "1.31")}, []),
    (
        "version not offered",
        {"version": "1.19"},
        {"eks_versions": ("1.30", "1.31")},
        ["capa_cluster.eks.version: EKS does not offer Kubernetes 1.19 in us-east-1 (offered: 1.30, 1.31)"],
    ),
    (
        "KMS key missing",
        {"encryption_config": {"provider": "arn:aws:kms:us-east-1:123456789012:key/nope"}},
        {"eks_versions": ("1.31",), "kms_key": None},
        [
            "capa_cluster.eks.encryption_config.provider: KMS key arn:aws:kms:us-east-1:123456789012:key/nope does "
            "not exist in us-east-1"
        ],
    ),
    (
        "KMS key disabled",
        {"encryption_config": {"provider": "alias/k"}},
        {"eks_versions": ("1.31",), "kms_key": pf.KmsKey(False, "Disabled", "ENCRYPT_DECRYPT")},
        ["capa_cluster.eks.encryption_config.provider: KMS key alias/k is not enabled (state Disabled)"],
    ),
    (
        "KMS key for signing",
        {"encryption_config": {"provider": "alias/k"}},
        {"eks_versions": ("1.31",), "kms_key": pf.KmsKey(True, "Enabled", "SIGN_VERIFY")},
        ["capa_cluster.eks.encryption_config.provider: KMS key alias/k is for SIGN_VERIFY, EKS needs ENCRYPT_DECRYPT"],
    ),
    (
        "node group arm64 type on an x86_64 AMI type",
        {"node_groups": [{"name": "ng-0", "instance_types": ["m6g.large"]}]},
        {"eks_versions": ("1.31",)},
        [
            "capa_cluster.eks.node_groups[0].instance_types: m6g.large runs arm64, but its AMI type "
            "(capa_cluster.eks.node_groups[0].ami_type) is x86_64"
        ],
    ),
]


@pytest.mark.parametrize(("what", "eks", "over", "expected"), EKS_CASES, ids=[c[0] for c in EKS_CASES])
def test_eks_failures(what, eks, over, expected):
    spec = {**EKS, "eks": {**EKS["eks"], **eks}}
    needs = pf.needs(pf.read_spec(compiled(spec)["preflight"]["spec"]), REGION)
    assert fails(pf.plan_checks(needs, pf.Existing()), facts(**over)) == expected


def test_nothing_to_create_means_no_failure_and_no_check():
    checks = pf.plan_checks(needs_of(control_plane={"replicas": 3}), pf.existing_from(EXISTING))
    assert checks.nothing
    assert pf.failures(checks, pf.Facts()) == []


@pytest.mark.parametrize(
    ("check_mode", "prefix"), [(True, "would fail: "), (False, "preflight: 1 problem(s), nothing")]
)
def test_message_says_would_fail_in_check_mode(check_mode, prefix):
    text = pf.message([pf.Failure("capa_cluster.ssh_key_name", "key pair x does not exist in us-east-1")], check_mode)
    assert text.startswith(prefix) and "capa_cluster.ssh_key_name: key pair x" in text


# the reads, against botocore's Stubber ----------------------------------------------------------------------------
@pytest.fixture
def stubs():
    session = AwsSession(REGION, None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    services = ("resourcegroupstaggingapi", "ec2", "eks", "kms", "service-quotas", "iam", "elb", "sts")
    stubbers = {s: Stubber(session.client(s).raw) for s in services}
    for stub in stubbers.values():
        stub.activate()
    yield session, stubbers
    for stub in stubbers.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def tagging_request(cluster: str) -> dict[str, Any]:
    return {
        "TagFilters": [{"Key": f"sigs.k8s.io/cluster-api-provider-aws/cluster/{cluster}", "Values": ["owned"]}],
        "ResourceTypeFilters": list(OWNED_TYPES),
        "ResourcesPerPage": 100,
        "TagsPerPage": 500,
    }


CALLER = "arn:aws:iam::123456789012:user/capa-controllers"
# botocore added DescribeClusterVersions after the floor (1.34.3): there the check is skipped with a warning.
SDK_KNOWS_CLUSTER_VERSIONS = (
    "describe_cluster_versions" in boto3.client("eks", region_name=REGION).meta.method_to_api_mapping
)


def caller(stub: dict[str, Stubber], arn: str = CALLER) -> None:
    stub["sts"].add_response(
        "get_caller_identity", {"UserId": "AIDAEXAMPLE", "Account": "123456789012", "Arn": arn}, {}
    )


def simulation(
    stub: dict[str, Stubber],
    actions: list[str] | None = None,
    denied: tuple[str, ...] = (),
    conditional: tuple[str, ...] = (),
    arn: str = CALLER,
) -> None:
    """The caller's identity, then IAM's simulation of ``actions`` (None: whatever the run asks, all allowed)."""
    caller(stub, arn)
    principal = principal_of(arn)
    expected = None if actions is None else {"PolicySourceArn": principal, "ActionNames": actions}

    def results(names: list[str]) -> dict[str, Any]:
        evaluated = []
        for name in names:
            result: dict[str, Any] = {"EvalActionName": name, "EvalResourceName": "*", "EvalDecision": "allowed"}
            if name in denied or name in conditional:
                result["EvalDecision"] = "implicitDeny"
            if name in conditional:
                result["MissingContextValues"] = ["aws:RequestTag/team"]
            evaluated.append(result)
        return {"EvaluationResults": evaluated, "IsTruncated": False}

    stub["iam"].add_response("simulate_principal_policy", results(actions or []), expected)


def test_a_no_op_run_costs_one_request(stubs):
    """The tagging API answers that every group is at its size: nothing else is asked."""
    session, stub = stubs
    stub["resourcegroupstaggingapi"].add_response(
        "get_resources", {"ResourceTagMappingList": EXISTING}, tagging_request("demo")
    )
    ctx = Context(session=session, cluster="demo", check_mode=False)
    step = compiled({"name": "demo", "control_plane": {"replicas": 3}})["preflight"]
    _before, after = reconciled(pf.PreflightTier(), ctx, step)
    assert after["skipped"] is True and after["checked"] == []
    assert session.recorder.as_dict() == {"resourcegroupstaggingapi:GetResources": 1}


def quota(service: str, code: str, value: float) -> dict[str, Any]:
    return {"Quota": {"ServiceCode": service, "QuotaCode": code, "Value": value}}


def test_an_eks_cluster_to_create_reads_versions_key_and_quotas_once_each(stubs):
    """moto lacks DescribeClusterVersions and the EC2 quotas: Stubber checks the requests against AWS's model."""
    session, stub = stubs
    spec = {
        **EKS,
        "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "single"},
        "eks": {**EKS["eks"], "version": "1.19", "encryption_config": {"provider": "alias/gone"}},
    }
    step = compiled(spec)["preflight"]
    stub["resourcegroupstaggingapi"].add_response(
        "get_resources", {"ResourceTagMappingList": []}, tagging_request("demo-eks")
    )
    ec2 = stub["ec2"]
    ec2.add_response(
        "describe_availability_zones",
        {"AvailabilityZones": [{"ZoneName": z.name, "State": "available"} for z in ZONES]},
        {},
    )
    ec2.add_response(
        "describe_nat_gateways",
        {"NatGateways": []},
        {"Filter": [{"Name": "state", "Values": ["pending", "available"]}]},
    )
    ec2.add_response(
        "describe_instance_type_offerings",
        {"InstanceTypeOfferings": [{"InstanceType": "t3.large", "Location": z.name} for z in ZONES]},
        {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": ["t3.large"]}]},
    )
    ec2.add_response("describe_vpcs", {"Vpcs": [{"VpcId": "vpc-default"}]}, {})
    if SDK_KNOWS_CLUSTER_VERSIONS:
        stub["eks"].add_response(
            "describe_cluster_versions",
            {"clusterVersions": [{"clusterVersion": "1.31"}, {"clusterVersion": "1.30"}]},
            {},
        )
    stub["kms"].add_client_error("describe_key", "NotFoundException", expected_params={"KeyId": "alias/gone"})
    ec2.add_response(
        "describe_instances",
        {"Reservations": [{"Instances": [{"InstanceId": "i-1", "InstanceType": "m5.large"}]}]},
        {"Filters": [{"Name": "instance-state-name", "Values": ["pending", "running"]}]},
    )
    ec2.add_response(
        "describe_instance_types",
        {
            "InstanceTypes": [
                {
                    "InstanceType": "m5.large",
                    "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
                    "VCpuInfo": {"DefaultVCpus": 2},
                },
                {
                    "InstanceType": "t3.large",
                    "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
                    "VCpuInfo": {"DefaultVCpus": 2},
                },
            ]
        },
        {"InstanceTypes": ["m5.large", "t3.large"]},
    )
    quotas = stub["service-quotas"]
    quotas.add_response(
        "get_service_quota", quota("vpc", "L-F678F1CE", 5), {"ServiceCode": "vpc", "QuotaCode": "L-F678F1CE"}
    )
    quotas.add_response(
        "get_service_quota", quota("ec2", "L-0263D0A3", 5), {"ServiceCode": "ec2", "QuotaCode": "L-0263D0A3"}
    )
    quotas.add_response(
        "get_service_quota", quota("vpc", "L-FE5A380F", 5), {"ServiceCode": "vpc", "QuotaCode": "L-FE5A380F"}
    )
    ec2.add_response("describe_addresses", {"Addresses": [{"PublicIp": "203.0.113.1"}]}, {})
    quotas.add_response(
        "get_service_quota", quota("ec2", "L-1216C47A", 3), {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A"}
    )
    checks = pf.plan_checks(pf.needs(pf.read_spec(step["spec"]), REGION), pf.Existing())
    simulation(stub, pf.unscoped_needed(pf.needed_tiers(checks)))
    ctx = Context(session=session, cluster="demo-eks", check_mode=True)
    with pytest.raises(ReconcileError) as failed:
        reconciled(pf.PreflightTier(), ctx, step)
    text = str(failed.value)
    assert text.startswith("would fail: ")
    version = "capa_cluster.eks.version: EKS does not offer Kubernetes 1.19 in us-east-1 (offered: 1.30, 1.31)"
    if SDK_KNOWS_CLUSTER_VERSIONS:
        assert version in text
    else:  # the floor's botocore predates the read: the check is skipped, with a warning, not failed
        assert "eks.version" not in text
        assert any("eks:DescribeClusterVersions is not known to the installed botocore" in w for w in ctx.warnings)
    assert "capa_cluster.eks.encryption_config.provider: KMS key alias/gone does not exist in us-east-1" in text
    # 2 node-group machines of 2 vCPUs and the 2 already running are above a quota of 3.
    assert "capa_cluster.eks.node_groups[0]: the run adds 4 vCPUs" in text and "to the 2 in use" in text
    assert (
        set(session.recorder.as_dict().values()) == {1}
        or session.recorder.as_dict()["service-quotas:GetServiceQuota"] == 4
    )


def test_instance_profiles_are_read_one_per_distinct_name(stubs):
    """IAM has no batch read of instance profiles: one GetInstanceProfile per name, shared by the groups."""
    session, stub = stubs
    profile = "nodes.cluster-api-provider-aws.sigs.k8s.io"
    spec = {
        "name": "demo",
        "network": {"subnets": SUBNETS, "nat_gateways": "none"},
        "control_plane_load_balancer": {"type": "disabled"},
        "control_plane_endpoint": {"host": "api.example.com"},
        "control_plane": {"iam_instance_profile": "gone", "ami": {"id": X86_AMI}},
        "machine_deployments": [
            {"name": "md-0", "iam_instance_profile": profile, "ami": {"id": X86_AMI}},
            {"name": "md-1", "iam_instance_profile": profile, "ami": {"id": X86_AMI}},
        ],
    }
    step = compiled(spec)["preflight"]
    stub["resourcegroupstaggingapi"].add_response(
        "get_resources", {"ResourceTagMappingList": []}, tagging_request("demo")
    )
    ec2 = stub["ec2"]
    ec2.add_response(
        "describe_availability_zones", {"AvailabilityZones": [{"ZoneName": "us-east-1a", "State": "available"}]}, {}
    )
    ec2.add_response(
        "describe_instance_type_offerings",
        {"InstanceTypeOfferings": [{"InstanceType": "t3.large", "Location": "us-east-1a"}]},
        {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": ["t3.large"]}]},
    )
    ec2.add_response(
        "describe_images",
        {"Images": [{"ImageId": X86_AMI, "Architecture": "x86_64"}]},
        {"Filters": [{"Name": "image-id", "Values": [X86_AMI]}]},
    )
    stub["iam"].add_client_error(
        "get_instance_profile", "NoSuchEntity", expected_params={"InstanceProfileName": "gone"}
    )
    stub["iam"].add_response(
        "get_instance_profile",
        {
            "InstanceProfile": {
                "Path": "/",
                "InstanceProfileName": profile,
                "InstanceProfileId": "AIPAEXAMPLEEXAMPLE123",
                "Arn": f"arn:aws:iam::123456789012:instance-profile/{profile}",
                "CreateDate": "2024-01-01T00:00:00Z",
                "Roles": [],
            }
        },
        {"InstanceProfileName": profile},
    )
    stub["ec2"].add_response("describe_vpcs", {"Vpcs": []}, {})
    ec2.add_response(
        "describe_instances",
        {"Reservations": []},
        {"Filters": [{"Name": "instance-state-name", "Values": ["pending", "running"]}]},
    )
    ec2.add_response(
        "describe_instance_types",
        {
            "InstanceTypes": [
                {
                    "InstanceType": "t3.large",
                    "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
                    "VCpuInfo": {"DefaultVCpus": 2},
                }
            ]
        },
        {"InstanceTypes": ["t3.large"]},
    )
    stub["service-quotas"].add_response(
        "get_service_quota", quota("vpc", "L-F678F1CE", 5), {"ServiceCode": "vpc", "QuotaCode": "L-F678F1CE"}
    )
    stub["service-quotas"].add_response(
        "get_service_quota", quota("ec2", "L-1216C47A", 1152), {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A"}
    )
    simulation(stub)
    ctx = Context(session=session, cluster="demo", check_mode=False)
    with pytest.raises(ReconcileError, match=r"capa_cluster.control_plane.iam_instance_profile: instance profile gone"):
        reconciled(pf.PreflightTier(), ctx, step)
    assert session.recorder.as_dict()["iam:GetInstanceProfile"] == 2


@pytest.mark.parametrize(
    ("applied", "default", "value"),
    [(7.0, None, 7.0), (None, 5.0, 5.0), (None, None, None)],
    ids=["applied", "default only", "unknown"],
)
def test_a_quota_is_its_applied_value_else_the_default(stubs, applied, default, value):
    """GetServiceQuota first; a quota without an applied value answers NoSuchResourceException, then AWS's default
    (moto implements neither for EC2: Stubber)."""
    from ansible_collections.clusterapi.aws.plugins.module_utils.aws.servicequotas import quota_value

    session, stub = stubs
    request = {"ServiceCode": "ec2", "QuotaCode": "L-0263D0A3"}
    quotas = stub["service-quotas"]
    if applied is None:
        quotas.add_client_error("get_service_quota", "NoSuchResourceException", expected_params=request)
        if default is None:
            quotas.add_client_error("get_aws_default_service_quota", "NoSuchResourceException", expected_params=request)
        else:
            quotas.add_response("get_aws_default_service_quota", quota("ec2", "L-0263D0A3", default), request)
    else:
        quotas.add_response("get_service_quota", quota("ec2", "L-0263D0A3", applied), request)
    ctx = Context(session=session, cluster="demo", check_mode=False)
    assert quota_value(ctx, "ec2", "L-0263D0A3") == value


# checks that cannot be made -----------------------------------------------------------------------------------------
def client_error(code: str, status: int) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "X")


@pytest.mark.parametrize(
    ("code", "status", "why"),
    [
        ("AccessDenied", 403, "denied"),
        ("AccessDeniedException", 400, "denied"),
        ("UnauthorizedOperation", 403, "denied"),
        ("SomethingNew", 403, "denied"),
        ("InvalidAction", 400, "unsupported"),
        ("UnknownOperationException", 400, "unsupported"),
        ("404", 404, "unsupported"),
        ("NotImplemented", 501, "unsupported"),
        ("ResourceNotFoundException", 404, None),
        ("NoSuchEntity", 404, None),
        ("Throttling", 400, None),
        ("InvalidParameterValue", 400, None),
        ("InternalError", 500, None),
    ],
)
def test_cannot_read_tells_a_refused_or_unknown_read_from_an_answer_about_the_resource(code, status, why):
    assert cannot_read(client_error(code, status)) == why


@pytest.mark.parametrize(
    ("arn", "principal"),
    [
        (CALLER, CALLER),
        (
            "arn:aws:sts::123456789012:assumed-role/capa-controllers/ansible",
            "arn:aws:iam::123456789012:role/capa-controllers",
        ),
        ("arn:aws-cn:sts::123456789012:assumed-role/r/s", "arn:aws-cn:iam::123456789012:role/r"),
        ("arn:aws:iam::123456789012:root", None),
        ("arn:aws:sts::123456789012:federated-user/bob", None),
    ],
)
def test_the_principal_simulated_is_the_user_or_the_assumed_roles_role(arn, principal):
    assert principal_of(arn) == principal


DENIED = ("AccessDenied", 403)
EC2_DENIED = ("UnauthorizedOperation", 403)
UNKNOWN = ("UnknownOperationException", 404)


def test_denied_checks_are_skipped_with_a_warning_and_the_run_goes_on(stubs):
    """Every read only a check needs is denied (the generated policy without its Optional statements), and EKS does
    not serve DescribeClusterVersions: each check is skipped with a warning that names the permission, nothing is
    refused, and the checks that could be made still were (their reads: Stubber against AWS's model)."""
    session, stub = stubs
    spec = {
        **EKS,
        "ssh_key_name": "ops",
        "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "single"},
        "eks": {**EKS["eks"], "encryption_config": {"provider": "alias/secrets"}},
    }
    step = compiled(spec)["preflight"]
    stub["resourcegroupstaggingapi"].add_response(
        "get_resources", {"ResourceTagMappingList": []}, tagging_request("demo-eks")
    )
    ec2 = stub["ec2"]
    ec2.add_response(
        "describe_availability_zones",
        {"AvailabilityZones": [{"ZoneName": z.name, "State": "available"} for z in ZONES]},
        {},
    )
    ec2.add_response("describe_nat_gateways", {"NatGateways": []}, None)
    ec2.add_client_error("describe_instance_type_offerings", *EC2_DENIED)
    ec2.add_response("describe_vpcs", {"Vpcs": [{"VpcId": "vpc-default"}]}, {})
    if SDK_KNOWS_CLUSTER_VERSIONS:
        stub["eks"].add_client_error("describe_cluster_versions", *UNKNOWN)
    stub["kms"].add_client_error("describe_key", "AccessDeniedException", 400)
    ec2.add_response("describe_instances", {"Reservations": []}, None)
    ec2.add_response(
        "describe_instance_types",
        {
            "InstanceTypes": [
                {
                    "InstanceType": "t3.large",
                    "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
                    "VCpuInfo": {"DefaultVCpus": 2},
                }
            ]
        },
        {"InstanceTypes": ["t3.large"]},
    )
    stub["service-quotas"].add_client_error("get_service_quota", *DENIED)
    ec2.add_response("describe_addresses", {"Addresses": []}, {})
    caller(stub)
    stub["iam"].add_client_error("simulate_principal_policy", *DENIED)
    ctx = Context(session=session, cluster="demo-eks", check_mode=False)
    _before, after = reconciled(pf.PreflightTier(), ctx, step)
    assert after["not_checked"] == {
        "instance_type_offerings": "ec2:DescribeInstanceTypeOfferings",
        "eks_version": "eks:DescribeClusterVersions",
        "kms_key": "kms:DescribeKey",
        "quotas": pf.QUOTA_PERMISSION,
        "permissions": "iam:SimulatePrincipalPolicy",
    }
    assert "availability_zones" in after["checked"] and "vpcs" in after["checked"]
    assert not {"instance_type_offerings", "quotas", "permissions"} & set(after["checked"])
    warnings = "\n".join(ctx.warnings)
    assert len(ctx.warnings) == 5, ctx.warnings
    assert (
        "preflight: the instance_type_offerings check was skipped: ec2:DescribeInstanceTypeOfferings was denied "
        "(UnauthorizedOperation); grant ec2:DescribeInstanceTypeOfferings to enable it"
    ) in warnings
    unknown = (
        "is not served by the endpoint" if SDK_KNOWS_CLUSTER_VERSIONS else "is not known to the installed botocore"
    )
    assert f"the eks_version check was skipped: eks:DescribeClusterVersions {unknown}" in warnings
    assert "the quotas check was skipped: servicequotas:GetServiceQuota" in warnings
    assert "the permissions check was skipped: iam:SimulatePrincipalPolicy was denied (AccessDenied)" in warnings
    # One quota read was tried, then the check was known to be skipped: no second denied request per quota.
    assert session.recorder.as_dict()["service-quotas:GetServiceQuota"] == 1


def test_a_skipped_check_refuses_nothing_it_would_have_read():
    """Without the reads, a key pair, a BYO subnet, a security group, an image or a KMS key is not 'missing'."""
    checks = pf.plan_checks(
        needs_of(
            ssh_key_name="gone",
            network={
                "subnets": [{"id": "subnet-0123456789abcdef0"}],
                "security_group_overrides": {"node": "sg-0123456789abcdef0"},
            },
            control_plane_load_balancer={"type": "disabled"},
            control_plane_endpoint={"host": "api.example.com"},
            control_plane={"ami": {"id": "ami-0fffffffffffffff0"}},
        ),
        pf.Existing(),
    )
    read_nothing = facts(
        zones=(),
        offerings={},
        images={},
        key_pairs=frozenset(),
        skipped={
            c: "x"
            for c in (
                "availability_zones",
                "subnets",
                "instance_type_offerings",
                "images",
                "key_pairs",
                "security_groups",
            )
        },
    )
    assert fails(checks, read_nothing) == []
    assert fails(checks, replace(read_nothing, skipped={})) != []


def test_a_denied_tagging_read_skips_the_preflight(stubs):
    """Without the one read of what the cluster has, no check can tell what the run creates: none is made."""
    session, stub = stubs
    stub["resourcegroupstaggingapi"].add_client_error("get_resources", *DENIED)
    ctx = Context(session=session, cluster="demo", check_mode=False)
    step = compiled({"name": "demo"})["preflight"]
    _before, after = reconciled(pf.PreflightTier(), ctx, step)
    assert after["skipped"] is True and after["not_checked"] == {"existing_resources": "tag:GetResources"}
    assert ctx.warnings == [
        "preflight: the existing_resources check was skipped: tag:GetResources was denied (AccessDenied); "
        "grant tag:GetResources to enable it"
    ]
    assert session.recorder.as_dict() == {"resourcegroupstaggingapi:GetResources": 1}


def test_an_error_about_the_resource_still_fails_the_run(stubs):
    """Only 'may not' and 'does not serve' skip a check: a throttled-out or invalid read is the run's failure."""
    session, stub = stubs
    stub["resourcegroupstaggingapi"].add_client_error("get_resources", "InvalidParameterException", 400)
    ctx = Context(session=session, cluster="demo", check_mode=False)
    with pytest.raises(Exception, match="InvalidParameterException"):
        reconciled(pf.PreflightTier(), ctx, compiled({"name": "demo"})["preflight"])


def network_only_run(stub: dict[str, Stubber]) -> dict[str, Any]:
    """A cluster of a VPC in one zone with no NAT gateway and no machines: the reads before the permission check."""
    step = compiled(
        {
            "name": "demo",
            "network": {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "none"},
            "control_plane": {"replicas": 1},
        }
    )["preflight"]
    stub["resourcegroupstaggingapi"].add_response(
        "get_resources", {"ResourceTagMappingList": EXISTING_MACHINES_ONLY}, tagging_request("demo")
    )
    ec2 = stub["ec2"]
    ec2.add_response(
        "describe_availability_zones", {"AvailabilityZones": [{"ZoneName": "us-east-1a", "State": "available"}]}, {}
    )
    ec2.add_response("describe_vpcs", {"Vpcs": []}, {})
    stub["service-quotas"].add_response(
        "get_service_quota", quota("vpc", "L-F678F1CE", 5), {"ServiceCode": "vpc", "QuotaCode": "L-F678F1CE"}
    )
    return step


EXISTING_MACHINES_ONLY = [
    {
        "ResourceARN": f"arn:aws:ec2:us-east-1:123456789012:instance/i-0{n}",
        "Tags": [
            {"Key": OWNER_TAG, "Value": "owned"},
            {"Key": "clusterapi.aws/machine-group", "Value": "control-plane"},
        ],
    }
    for n in range(1)
]


def test_a_permission_the_run_needs_and_the_caller_lacks_fails_before_any_change(stubs):
    """IAM's policy simulation says the caller may not create a VPC: the preflight names the permission and the caller
    (and only reads were made). The actions asked are the network tiers' unscoped ones, nothing else."""
    session, stub = stubs
    step = network_only_run(stub)
    asked = pf.unscoped_needed(["cluster_info", "ec2", "security_groups", "subnets", "vpc"])
    assert "ec2:CreateVpc" in asked and "ec2:RunInstances" not in asked and "eks:CreateCluster" not in asked
    simulation(stub, asked, denied=("ec2:CreateVpc", "ec2:CreateSubnet"))
    ctx = Context(session=session, cluster="demo", check_mode=False)
    with pytest.raises(ReconcileError) as failed:
        reconciled(pf.PreflightTier(), ctx, step)
    assert str(failed.value) == (
        f"preflight: 1 problem(s), nothing was changed: permissions: {CALLER} may not call ec2:CreateSubnet, "
        "ec2:CreateVpc (IAM's policy simulation of its policies); the run needs them for what it would create"
    )
    assert session.recorder.mutating() == {}


def test_a_decision_iam_cannot_make_without_context_is_not_a_refusal(stubs):
    """A statement with a condition (a tag the request will carry) leaves the simulation without context: only what it
    says for sure refuses the run. An assumed role is simulated as its role."""
    session, stub = stubs
    step = network_only_run(stub)
    asked = pf.unscoped_needed(["cluster_info", "ec2", "security_groups", "subnets", "vpc"])
    simulation(stub, asked, conditional=("ec2:CreateVpc",), arn="arn:aws:sts::123456789012:assumed-role/capa/ansible")
    ctx = Context(session=session, cluster="demo", check_mode=False)
    _before, after = reconciled(pf.PreflightTier(), ctx, step)
    assert "permissions" in after["checked"] and ctx.warnings == []


def reconciled(tier: Any, ctx: Any, params: Any) -> tuple[Any, Any]:
    """``(before, after)`` of a tier run on module parameters, as capa.run_tier runs it: parse, validate, reconcile."""
    spec = tier.parse(params)
    tier.validate(spec, "us-east-1")
    outcome = tier.reconcile(ctx, spec)
    return outcome.before, outcome.after
