# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Golden machines: what each machine module sends AWS for a representative spec, pinned.

A machine's template hash decides whether it is up to date: a hash that changes for the same spec rolls every
machine of every user on their next run. So do a changed ``RunInstances`` request, launch template data or fleet
overrides, in their own ways (new machines unlike the old ones, a new template version and an instance refresh).
These tests run each module's tier exactly as the module does (its own argument spec fills in the defaults, one
session, one ``Context``) against in-process moto, record every mutating request at botocore's parameter
boundary, and compare it with ``fixtures/golden_machines.json``. They are the contract of a refactoring of how
machines are built: the fixture must not change unless machines are meant to change.

Values that are random by design are masked before the comparison: idempotency tokens, bootstrap entry names
(a UUID), machine name suffixes, the id of a pool's join token. The cluster PKI is a fixed test PKI
(``fixtures/golden_pki.json``, generated once by the collection itself), and the bootstrap-data hash of a pool is
taken with a fixed stand-in for its join token, so the hashes of pools are deterministic too. The Kubernetes API the
kubeadm machines join through (their tokens are minted there) is ``kube_double``.
moto's resource ids are made deterministic with its own seed; the fixture records the ids the seed gave the
network, so a moto upgrade that changes them fails with its own message instead of a misleading hash mismatch.

Regenerate (only when a change of machines is intended, and say so in the commit):
``CAPA_GOLDEN_WRITE=1 pytest tests/unit/plugins/module_utils/machines/test_golden_machines.py``.
"""

from __future__ import annotations

import base64
import copy
import importlib
import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any, Callable

import boto3
import moto.eks.models as moto_eks
import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from moto import mock_aws
from moto.moto_api._internal import mock_random

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import Context, common_argument_spec
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

REPO = Path(__file__).resolve().parents[5]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOLDEN = FIXTURES / "golden_machines.json"
PKI = json.loads((FIXTURES / "golden_pki.json").read_text())
REGION = "us-east-1"
CLUSTER = "gold"
ENDPOINT = "gold-apiserver.elb.amazonaws.com"
SEED = 20261201
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
MODULES = "ansible_collections.clusterapi.aws.plugins.modules."
# The requests that define a machine; everything else a run sends (secrets, tags, registrations) is not pinned here.
PINNED = {
    "ec2:RunInstances",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateLaunchTemplateVersion",
    "ec2:CreateFleet",
    "autoscaling:CreateAutoScalingGroup",
}

sys.path.insert(0, str(REPO / "tools"))
import moto_server  # noqa: E402  (the embedded endpoint's fixes: the EKS image parameters among them)

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by path (test_compile_golden.py)
from kube_double import KubeDouble  # noqa: E402

# Fix 8 (a real certificate authority per EKS cluster) makes new keys every time: the golden inputs keep moto's own,
# which its seed makes the same on every run.
moto_server.apply_moto_fixes(without=("eks-certificate-authority",))
# The server loads AWS's managed IAM policies (seconds per account); no golden case attaches one.
os.environ["MOTO_IAM_LOAD_MANAGED_POLICIES"] = "false"
# moto draws the host of every EKS endpoint once, when moto.eks is imported - whenever a test of the process first
# uses EKS: fixed here, so the EKS pool's document (which names the endpoint) is the same in any process.
moto_eks.ENDPOINT_TEMPLATE = "https://0123456789abcdef0123456789abcdef.gr7.{region}.eks.amazonaws.com/"
moto_eks.ISSUER_TEMPLATE = "https://oidc.eks.{region}.amazonaws.com/id/GOLDEN0123"


# the module, as Ansible runs it --------------------------------------------------------------------------------------
def module_tier(module: str) -> tuple[dict[str, Any], Any]:
    """The argument spec and tier a module's ``main()`` hands to ``run_tier``."""
    imported = importlib.import_module(MODULES + module)
    seen: dict[str, Any] = {}

    def capture(argument_spec: dict[str, Any], tier: Any, result_key: Any = None, **_kwargs: Any) -> None:
        seen.update(spec=argument_spec, tier=tier)

    original = imported.run_tier
    imported.run_tier = capture
    try:
        imported.main()
    finally:
        imported.run_tier = original
    spec = common_argument_spec()
    spec.update(seen["spec"])
    return spec, seen["tier"]


def run_tier(
    module: str,
    args: dict[str, Any],
    record: Callable[[str, dict[str, Any]], None] | None = None,
    check_mode: bool = False,
    rng_seed: int = 1,
) -> tuple[Context, Any]:
    """Run ``module``'s tier as the module does (its argument spec, parse, validate, one session and ``Context``);
    ``record(call, params)`` sees every request at botocore's parameter boundary, in order. The run's context (its
    plan) and result."""
    spec, tier = module_tier(module)
    if hasattr(tier, "rng"):
        tier.rng = random.Random(rng_seed)
    # A copy of the spec: the validator fills sub-option defaults into a spec's default {} (a real module run
    # validates once, in its own process).
    validated = ArgumentSpecValidator(copy.deepcopy(spec)).validate({"cluster_name": CLUSTER, **copy.deepcopy(args)})
    assert not validated.error_messages, validated.error_messages
    spec_of_run = tier.parse(validated.validated_parameters)
    tier.validate(spec_of_run, REGION)
    session = AwsSession(REGION, None, dict(CREDENTIALS))
    if record is not None:

        def provided(params: dict[str, Any], model: Any, **_kwargs: Any) -> None:
            record(f"{model.service_model.service_name}:{model.name}", copy.deepcopy(params))

        session._session.events.register("provide-client-params", provided)
    wait = validated.validated_parameters["wait"]
    ctx = Context(session=session, cluster=CLUSTER, check_mode=check_mode, wait=wait, wait_timeout=60)
    return ctx, tier.reconcile(ctx, spec_of_run).after


def run_module(module: str, args: dict[str, Any], recorder: list | None = None, rng_seed: int = 1) -> dict[str, Any]:
    """:func:`run_tier`, recording the PINNED requests into ``recorder``; the result."""

    def pinned(call: str, params: dict[str, Any]) -> None:
        if recorder is not None and call in PINNED:
            recorder.append({"call": call, "params": params})

    return run_tier(module, args, record=pinned, rng_seed=rng_seed)[1]


def seed_moto() -> None:
    """Seed moto's ids for a case, with the account's EC2 and EKS backends built first: moto builds a region's
    default VPC when it is first asked for it - or when a backend a previous test used is reset - and imports EKS
    when it is first used, drawing values either way; done before the seed, a case's ids are the same whichever
    tests ran before it in the process."""
    boto3.client("ec2", region_name=REGION, **CREDENTIALS).describe_vpcs()
    boto3.client("eks", region_name=REGION, **CREDENTIALS).list_clusters()
    mock_random.seed(SEED)


# the account the machines land in --------------------------------------------------------------------------------
class Account:
    """A network like capa_subnet/capa_security_group build, made with plain boto3 (the golden inputs), and the
    cluster's Kubernetes API (``kube``: a double whose Nodes are the cluster's running instances) that kubeadm
    machines join through - each with a bootstrap token minted there. ``close()`` stops the API."""

    def __init__(self, tmp_path: Path) -> None:
        ec2 = boto3.client("ec2", region_name=REGION, **CREDENTIALS)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.subnets: list[dict[str, Any]] = []
        for index, zone in enumerate(("us-east-1a", "us-east-1b", "us-east-1c")):
            for public in (True, False):
                cidr = f"10.0.{index * 32 + (0 if public else 16)}.0/20"
                subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
                self.subnets.append({"id": subnet, "availability_zone": zone, "is_public": public})
        self.groups = {
            role: ec2.create_security_group(GroupName=f"{CLUSTER}-{role}", Description=role, VpcId=vpc)["GroupId"]
            for role in ("bastion", "lb", "controlplane", "node", "node-eks-additional")
        }
        ec2.create_key_pair(KeyName="gold-key")
        boto3.client("iam", region_name=REGION, **CREDENTIALS).create_instance_profile(
            InstanceProfileName="nodes.cluster-api-provider-aws.sigs.k8s.io"
        )
        boto3.client("elb", region_name=REGION, **CREDENTIALS).create_load_balancer(
            LoadBalancerName=f"{CLUSTER}-apiserver",
            Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 6443, "InstancePort": 6443}],
            Subnets=[s["id"] for s in self.subnets if s["is_public"]],
            SecurityGroups=[self.groups["lb"]],
        )
        run_module(
            "capa_kubeadm",
            {
                "kubernetes_version": "v1.31.2",
                "endpoint": {"host": ENDPOINT, "port": 6443},
                "pki": PKI,
                "output_dir": str(tmp_path),
            },
        )
        self.kube = KubeDouble(PKI["cluster_ca_cert"], PKI["cluster_ca_key"], ENDPOINT, self.instances)
        kinds = {True: "public", False: "private"}
        self.ids = {
            **{f"subnet:{s['availability_zone']}:{kinds[s['is_public']]}": s["id"] for s in self.subnets},
            **{f"sg:{role}": group for role, group in self.groups.items()},
        }

    def instances(self) -> list[dict[str, Any]]:
        ec2 = boto3.client("ec2", region_name=REGION, **CREDENTIALS)
        owned = [{"Name": "tag-key", "Values": [f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"]}]
        return [i for r in ec2.describe_instances(Filters=owned)["Reservations"] for i in r["Instances"]]

    def close(self) -> None:
        self.kube.close()

    def __enter__(self) -> Account:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def eks_cluster(self) -> None:
        boto3.client("eks", region_name=REGION, **CREDENTIALS).create_cluster(
            name=CLUSTER,
            version="1.31",
            roleArn="arn:aws:iam::123456789012:role/gold-eks",
            resourcesVpcConfig={"subnetIds": [s["id"] for s in self.subnets if not s["is_public"]]},
        )


# what to compare ------------------------------------------------------------------------------------------------------
TOKEN_KEYS = ("ClientToken", "ClientRequestToken")
TOKEN_ID_TAG = "clusterapi.aws/join-token-id"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MACHINE_SUFFIX = re.compile(rf"\b({CLUSTER}-[a-z0-9-]+?)-[a-z0-9]{{5}}\b")


def normalise(value: Any, ids: dict[str, str], key: str = "") -> Any:
    if isinstance(value, dict):
        if value.get("Key") == TOKEN_ID_TAG:  # a pool's join token, new in every run
            return {**value, "Value": "<token-id>"}
        return {k: normalise(v, ids, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, ids, key) for v in value]
    if isinstance(value, bytes):
        value = value.decode()
    if not isinstance(value, str):
        return value
    if key in TOKEN_KEYS:
        return "<token>"
    if key == "UserData":
        value = _decoded(value)
    for label, resource_id in ids.items():
        value = value.replace(resource_id, f"<{label}>")
    value = UUID.sub("<uuid>", value)
    return MACHINE_SUFFIX.sub(r"\1-<suffix>", value)


def _decoded(user_data: str) -> str:
    try:
        text = base64.b64decode(user_data, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return user_data
    return text if "MIME" in text or text.startswith("#") else user_data


# the cases ------------------------------------------------------------------------------------------------------------
def machine_args(account: Account, **extra: Any) -> dict[str, Any]:
    args = {
        "subnets": account.subnets,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "security_group_ids": [account.groups["node"], account.groups["lb"]],
        "bootstrap": {"type": "kubeadm", "endpoint_host": ENDPOINT},
        "kubernetes_api": {"server": account.kube.url},
    }
    args.update(extra)
    return args


def control_plane(account: Account) -> dict[str, Any]:
    """Three control-plane machines with no Kubernetes API to ask (the double serves no static pods or etcd): the
    first runs kubeadm init, the two others join in the same run with its token."""
    args = machine_args(
        account,
        name="control-plane",
        role="control-plane",
        replicas=3,
        security_group_ids=[account.groups[r] for r in ("node", "lb", "controlplane")],
        load_balancers=[{"type": "classic", "name": f"{CLUSTER}-apiserver"}],
    )
    del args["kubernetes_api"]
    return args


def pool_args(account: Account, **extra: Any) -> dict[str, Any]:
    args = machine_args(account, name="mp-0", min_size=1, max_size=3, desired_capacity=2)
    args.update(extra)
    return args


CASES: dict[str, tuple[str, Any]] = {
    "instance/control-plane-ha": ("capa_instance", control_plane),
    "instance/worker-defaults": ("capa_instance", lambda a: machine_args(a, name="md-0", replicas=2)),
    "instance/worker-spot-max-price": (
        "capa_instance",
        lambda a: machine_args(a, name="md-spot", spot_market_options={"max_price": "0.05"}),
    ),
    "instance/worker-spot-on-demand-price": (
        "capa_instance",
        lambda a: machine_args(a, name="md-spot0", spot_market_options={}),
    ),
    "instance/worker-dedicated-placement": (
        "capa_instance",
        lambda a: machine_args(a, name="md-ded", tenancy="dedicated", placement_group_name="gold-pg"),
    ),
    "instance/worker-ssm-backend": (
        "capa_instance",
        lambda a: machine_args(
            a, name="md-ssm", bootstrap=dict(machine_args(a)["bootstrap"], backend="ssm-parameter-store")
        ),
    ),
    "instance/worker-every-machine-option": (
        "capa_instance",
        lambda a: machine_args(
            a,
            name="md-opts",
            failure_domains=["us-east-1b"],
            root_volume={"size": 120, "type": "gp2", "encrypted": False},
            imds={"http_tokens": "optional", "http_put_response_hop_limit": 2},
            ssh_key_name="gold-key",
            iam_instance_profile="nodes.cluster-api-provider-aws.sigs.k8s.io",
            security_group_ids=[a.groups["node"], a.groups["lb"], a.groups["bastion"]],
        ),
    ),
    "instance/worker-ami-id-raw-bootstrap": (
        "capa_instance",
        lambda a: machine_args(
            a,
            name="md-raw",
            ami={"id": "ami-20d96325567dfd672"},
            bootstrap={"type": "raw", "data": "#cloud-config\nruncmd: [echo hello]\n"},
        ),
    ),
    "instance/bastion": (
        "capa_instance",
        lambda a: {
            "name": "bastion",
            "role": "bastion",
            "subnets": a.subnets,
            "security_group_ids": [a.groups["bastion"]],
            "ssh_key_name": "gold-key",
        },
    ),
    "asg/pool-defaults": ("capa_asg", pool_args),
    "asg/pool-mixed-instances-spot": (
        "capa_asg",
        lambda a: pool_args(
            a,
            name="mp-mixed",
            mixed_instances_policy={
                "instances_distribution": {
                    "on_demand_base_capacity": 1,
                    "on_demand_percentage_above_base_capacity": 0,
                    "spot_allocation_strategy": "capacity-optimized",
                },
                "overrides": [{"instance_type": "t3.large"}, {"instance_type": "m5.large"}],
            },
        ),
    ),
    "asg/pool-spot-ssm-volume-imds": (
        "capa_asg",
        lambda a: pool_args(
            a,
            name="mp-spot",
            spot_market_options={"max_price": "0.04"},
            root_volume={"size": 60},
            imds={"http_put_response_hop_limit": 2},
            bootstrap=dict(machine_args(a)["bootstrap"], backend="ssm-parameter-store"),
            iam_instance_profile="nodes.cluster-api-provider-aws.sigs.k8s.io",
        ),
    ),
    "asg/eks-self-managed-pool": (
        "capa_asg",
        lambda a: pool_args(
            a,
            name="eks-mp-0",
            kubernetes_version="1.31",
            security_group_ids=[a.groups["node-eks-additional"]],
            bootstrap={"type": "eks"},
        ),
    ),
    "fleet/fleet-pool": (
        "capa_fleet",
        lambda a: machine_args(
            a,
            name="fp-0",
            total_target_capacity=3,
            on_demand_target_capacity=1,
            instance_types=["t3.large", "m5.large"],
        ),
    ),
}


def observe_case(name: str, tmp_path: Path) -> dict[str, Any]:
    module, build = CASES[name]
    with mock_aws():
        seed_moto()
        with Account(tmp_path) as account:
            if name.startswith("asg/eks"):
                account.eks_cluster()
            calls: list[dict[str, Any]] = []
            after = run_module(module, build(account), recorder=calls)
    observed: dict[str, Any] = {
        "inputs": account.ids,
        "requests": [normalise(c, account.ids) for c in calls],
    }
    if module == "capa_instance":
        observed["template_hash"] = after["template_hash"]
    return observed


def _golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@pytest.mark.parametrize("name", sorted(CASES))
def test_machines_are_built_as_pinned(name: str, tmp_path: Path) -> None:
    observed = observe_case(name, tmp_path)
    if os.environ.get("CAPA_GOLDEN_WRITE"):
        golden = _golden()
        golden[name] = observed
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    expected = _golden().get(name)
    assert expected is not None, f"no golden entry for {name} (CAPA_GOLDEN_WRITE=1 writes it)"
    assert observed["inputs"] == expected["inputs"], "moto's seeded ids changed (a moto upgrade?): regenerate"
    assert observed.get("template_hash") == expected.get("template_hash"), "the machine template hash changed"
    assert observed["requests"] == expected["requests"]


def test_every_kind_of_machine_is_pinned() -> None:
    """At least twelve specs, every machine module, and at least one request pinned per case."""
    golden = _golden()
    assert len(CASES) >= 12
    assert {name.split("/")[0] for name in CASES} == {"instance", "asg", "fleet"}
    assert all(golden[name]["requests"] for name in CASES)
