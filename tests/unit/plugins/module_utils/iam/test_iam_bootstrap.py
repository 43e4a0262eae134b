# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The IAM bootstrap's pure parts: the policy documents (and that the controllers policies allow every AWS
operation the collection's code makes, found by scanning plugins/module_utils), names, roles per option,
validation, and the choice of the policy version to prune."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import boto3
import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.iam import iam as bootstrap
from ansible_collections.clusterapi.aws.plugins.module_utils.iam import policies
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.resources import BY_NAME
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.tags import TAGGERS

MODULE_UTILS = Path(__file__).resolve().parents[5] / "plugins" / "module_utils"
# The bootstrap runs with an administrator's credentials before the controllers role exists.
NOT_CONTROLLERS = {"iam/iam.py"}
IAM_PREFIX = {
    "elb": "elasticloadbalancing",
    "elbv2": "elasticloadbalancing",
    "resourcegroupstaggingapi": "tag",
    "service-quotas": "servicequotas",
}
# Helpers of aws.ec2 take an EC2 method name as a string without calling ctx.client("ec2") in the caller.
EC2_HELPERS = re.compile(r"\b(describe|describe_by_ids|require_by_ids|describe_kind|delete_when_free)\(ctx")
# A file reading the one table of EC2 kinds (describe_kind / kind) names kinds as strings; each is described the
# table's way.
TABLE_READERS = re.compile(r"\b(describe_kind|kind)\(")
# Allowed without a direct call: permissions AWS checks on behalf of another call.
IMPLIED = {
    "iam:PassRole",  # RunInstances/CreateCluster/CreateNodegroup with a role
    "iam:CreateServiceLinkedRole",  # first ASG/ELB/spot/EKS use in an account
    "secretsmanager:TagResource",  # CreateSecret with Tags
    "ssm:AddTagsToResource",  # PutParameter with Tags
    "kms:GenerateDataKey",  # PutObject/UploadPart into an SSE-KMS bucket
    "kms:Decrypt",  # GetObject of an SSE-KMS object (a restore's presigned GET)
}
SUFFIX = bootstrap.DEFAULT_SUFFIX
BOTH = list(policies.SECRET_BACKENDS)


def params(**over: Any) -> bootstrap.BootstrapSpec:
    """capa_iam's typed spec of its defaults, with ``over``."""
    base = {
        "state": "present",
        "prefix": "",
        "suffix": SUFFIX,
        "path": "/",
        "permissions_boundary": None,
        "eks": True,
        "eks_nodegroup": False,
        "eks_fargate": False,
        "secret_backends": ["secrets-manager"],
        "extra_statements": {},
    }
    base.update(over)
    return bootstrap.BootstrapSpec.from_params(base)


def _method_maps() -> dict[str, dict[str, str]]:
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    services = set()
    for path in MODULE_UTILS.rglob("*.py"):
        services.update(re.findall(r'client\("([a-z0-9-]+)"[,)]', path.read_text()))
    services.update(tagger.service for tagger in TAGGERS.values())
    return {s: session.client(s).meta.method_to_api_mapping for s in services}


def _waiter_operations(service: str, waiter: str) -> str:
    client = boto3.session.Session(region_name="us-east-1").client(service)
    return client.get_waiter(waiter).config.operation


def called_actions() -> dict[str, set[str]]:
    """Every AWS operation the code calls, per file, as IAM actions.

    A name counts when it is a method of a client the file uses and appears as a string (``ops.call(client,
    "x")``, ``.paginate("x")``, ``describe(ctx, "x")``) or as an attribute called or handed on (``client.x(``,
    ``missing_as_none(client.x, ...)``).
    """
    maps = _method_maps()
    found: dict[str, set[str]] = {}
    for path in sorted(MODULE_UTILS.rglob("*.py")):
        relative = path.relative_to(MODULE_UTILS).as_posix()
        if relative in NOT_CONTROLLERS:
            continue
        text = path.read_text()
        services = set(re.findall(r'client\("([a-z0-9-]+)"[,)]', text))
        if EC2_HELPERS.search(text):
            services.add("ec2")
        names = set(re.findall(r'"([a-z][a-z0-9_]+)"', text)) | set(re.findall(r"\.([a-z][a-z0-9_]+)[(,]", text))
        if TABLE_READERS.search(text):
            names |= {BY_NAME[name].describe for name in names if name in BY_NAME}
        actions = set()
        for service in services:
            prefix = IAM_PREFIX.get(service, service)
            for name in names & set(maps[service]):
                operation = maps[service][name]
                # S3's IAM actions are named otherwise than its operations (policies.S3_ACTIONS says which).
                mapped = policies.S3_ACTIONS.get(operation, ()) if service == "s3" else (f"{prefix}:{operation}",)
                actions.update(mapped)
            for waiter in re.findall(r'waiter\("([a-z_]+)"\)', text):
                try:
                    actions.add(f"{prefix}:{_waiter_operations(service, waiter)}")
                except ValueError:
                    continue
        # Tag repair goes through one kernel function over a table of tagging APIs: a call of it names its kind
        # (and may make both its tagging and its untagging call).
        for kind in re.findall(r'repair_tags\(\s*[a-z_.]+,\s*"([a-z0-9-]+)"', text):
            tagger = TAGGERS[kind]
            prefix = IAM_PREFIX.get(tagger.service, tagger.service)
            actions.add(f"{prefix}:{maps[tagger.service][tagger.method]}")
            actions.add(f"{prefix}:{maps[tagger.service][tagger.untag_method]}")
        if actions:
            found[relative] = actions
    return found


def allowed(document: dict[str, Any]) -> set[str]:
    return {a for s in document["Statement"] for a in s["Action"] if s["Effect"] == "Allow"}


def controllers_allowed() -> set[str]:
    return allowed(policies.controllers_policy(SUFFIX, BOTH)) | allowed(policies.controllers_eks_policy())


def test_scanner_sees_the_calls_it_must():
    found = called_actions()
    assert "ec2:CreateVpc" in found["network/vpc.py"]
    assert "ec2:DescribeVpcs" in found["network/vpc.py"]
    assert "autoscaling:CreateAutoScalingGroup" in found["machines/asg.py"]
    assert "elasticloadbalancing:CreateLoadBalancer" in found["network/elb.py"]
    assert "iam:CreateRole" in found["iam/roles.py"]
    assert "iam/iam.py" not in found


def test_controllers_policies_allow_every_call_the_code_makes():
    permitted = controllers_allowed()
    missing = {f: sorted(a - permitted) for f, a in called_actions().items() if a - permitted}
    assert missing == {}


def unknown_to_this_sdk(actions: set[str]) -> set[str]:
    """The actions whose operation the installed botocore does not know: the floor's predates a few reads (which the
    code then skips with a warning), so the scanner cannot see their calls there."""
    boto3_name = {prefix: name for name, prefix in IAM_PREFIX.items()}
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    unknown = set()
    for action in actions:
        prefix, operation = action.split(":", 1)
        service = boto3_name.get(prefix, prefix)
        if service in session.get_available_services():
            if operation not in session.client(service).meta.method_to_api_mapping.values():
                unknown.add(action)
    return unknown


def test_controllers_policies_allow_nothing_the_code_does_not_call():
    called = set().union(*called_actions().values())
    extra = controllers_allowed() - called - IMPLIED
    assert extra - unknown_to_this_sdk(extra) == set()


@pytest.mark.parametrize(
    "backends, has_secrets, has_parameters",
    [(["secrets-manager"], True, False), (["ssm-parameter-store"], False, True), (BOTH, True, True)],
)
def test_nodes_policy_scopes_bootstrap_data(backends, has_secrets, has_parameters):
    statements = {s["Sid"]: s for s in policies.nodes_policy(backends)["Statement"]}
    assert ("BootstrapSecrets" in statements) is has_secrets
    assert ("BootstrapParameters" in statements) is has_parameters
    if has_secrets:
        secret = statements["BootstrapSecrets"]
        assert secret["Action"] == ["secretsmanager:DeleteSecret", "secretsmanager:GetSecretValue"]
        assert secret["Resource"] == "arn:*:secretsmanager:*:*:secret:aws.cluster.x-k8s.io/*"
    if has_parameters:
        parameter = statements["BootstrapParameters"]
        assert parameter["Action"] == ["ssm:DeleteParameter", "ssm:GetParameter"]
        assert parameter["Resource"] == "arn:*:ssm:*:*:parameter/cluster.x-k8s.io/*"
    node = statements["Node"]["Action"]
    assert "autoscaling:CompleteLifecycleAction" in node and "autoscaling:DescribeAutoScalingInstances" in node
    assert "ec2:DescribeInstances" in node
    # Nothing broad outside the scoped statements.
    assert not any(a.startswith(("secretsmanager:", "ssm:Get", "ssm:Delete")) for a in node)


def test_policies_fit_iams_size_limit():
    for document in (
        policies.controllers_policy(SUFFIX, BOTH),
        policies.controllers_eks_policy(),
        policies.control_plane_policy(),
        policies.nodes_policy(BOTH),
    ):
        assert policies.policy_size(document) <= bootstrap.POLICY_SIZE_LIMIT


def test_pass_role_is_limited_to_the_suffix():
    statements = {s["Sid"]: s for s in policies.controllers_policy(".x.example", ["secrets-manager"])["Statement"]}
    assert statements["PassClusterRoles"]["Resource"] == "arn:*:iam::*:role/*.x.example"
    assert "iam:PassRole" not in statements["Controllers"]["Action"]


@pytest.mark.parametrize(
    "over, roles",
    [
        ({}, ["control-plane", "controllers", "nodes", "eks-controlplane"]),
        ({"eks": False}, ["control-plane", "controllers", "nodes"]),
        (
            {"eks_nodegroup": True, "eks_fargate": True},
            ["control-plane", "controllers", "nodes", "eks-controlplane", "eks-nodegroup", "eks-fargate"],
        ),
    ],
)
def test_roles_per_option(over, roles):
    desired = bootstrap.desired_state(params(**over), "us-east-1")
    assert [r.base for r in desired.roles] == roles
    assert {r.base for r in desired.roles if r.instance_profile} == {"control-plane", "controllers", "nodes"}
    assert len(desired.unwanted_roles) == 6 - len(roles)


def test_names_trust_and_attachments():
    desired = bootstrap.desired_state(params(prefix="team-", eks_fargate=True), "cn-north-1")
    roles = {r.base: r for r in desired.roles}
    assert roles["nodes"].name == "team-nodes" + SUFFIX
    assert roles["eks-controlplane"].trust == "eks.amazonaws.com"
    assert roles["eks-fargate"].trust == "eks-fargate-pods.amazonaws.com"
    assert roles["controllers"].trust == ["ec2.amazonaws.com", "pods.eks.amazonaws.com"]
    without_eks = {r.base: r for r in bootstrap.desired_state(params(eks=False), None).roles}
    assert without_eks["controllers"].trust == "ec2.amazonaws.com"
    assert roles["eks-fargate"].aws_policies == ["arn:aws-cn:iam::aws:policy/AmazonEKSFargatePodExecutionRolePolicy"]
    assert roles["control-plane"].customer_policies == ["control-plane", "nodes", "controllers", "controllers-eks"]
    assert set(desired.policies) == {"controllers", "controllers-eks", "control-plane", "nodes"}
    assert bootstrap.desired_state(params(eks=False), None).unwanted_policies == ["controllers-eks" + SUFFIX]


def test_extra_statements_are_appended():
    extra = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}
    desired = bootstrap.desired_state(params(extra_statements={"nodes": [extra]}), None)
    assert desired.policies["nodes"]["Statement"][-1] == extra


@pytest.mark.parametrize(
    "over, field",
    [
        ({"prefix": "bad prefix"}, "prefix"),
        ({"prefix": "x" * 40}, "prefix"),
        ({"path": "capa"}, "path"),
        ({"path": "/capa"}, "path"),
        ({"permissions_boundary": "boundary"}, "permissions_boundary"),
        ({"secret_backends": []}, "secret_backends"),
        ({"extra_statements": {"workers": []}}, "extra_statements.workers"),
        ({"extra_statements": {"nodes": {}}}, "extra_statements.nodes"),
        ({"extra_statements": {"nodes": [{"Action": "s3:*"}]}}, "extra_statements.nodes[0]"),
        (
            {
                "extra_statements": {
                    "nodes": [{"Effect": "Allow", "Action": f"s3:A{i}", "Resource": "*"} for i in range(200)]
                }
            },
            "extra_statements.nodes",
        ),
    ],
)
def test_validation(over, field):
    with pytest.raises(SpecError) as error:
        bootstrap.validate(params(**over))
    assert error.value.field == field


def test_validation_accepts_defaults_and_paths():
    bootstrap.validate(params())
    bootstrap.validate(params(path="/capa/team/", prefix="a-"))


@pytest.mark.parametrize(
    "versions, pruned",
    [
        ([("v1", True)], None),
        ([("v1", False), ("v2", False), ("v3", False), ("v4", True)], None),
        ([("v1", False), ("v2", False), ("v3", False), ("v4", False), ("v5", True)], "v1"),
        ([("v1", True), ("v2", False), ("v3", False), ("v4", False), ("v5", False)], "v2"),
        ([("v9", False), ("v10", False), ("v11", True), ("v12", False), ("v13", False)], "v9"),
    ],
)
def test_version_to_prune(versions, pruned):
    listed = [{"VersionId": v, "IsDefaultVersion": d, "CreateDate": "2026-01-01T00:00:00Z"} for v, d in versions]
    assert bootstrap.version_to_prune(listed) == pruned


@pytest.mark.parametrize(
    "left, right, same",
    [
        ({"a": 1, "b": [1]}, '{"b": [1], "a": 1}', True),
        ({"a": 1}, {"a": 2}, False),
    ],
)
def test_canonical(left, right, same):
    assert (bootstrap.canonical(left) == bootstrap.canonical(right)) is same


def test_controllers_trust_eks_pod_identity_with_tag_session():
    """clusterawsadm's controllers role trusts EKS Pod Identity, which needs sts:TagSession, when EKS is on."""
    from ansible_collections.clusterapi.aws.plugins.module_utils.iam import roles as _iam

    roles = {r.base: r for r in bootstrap.desired_state(params(), None).roles}
    document = _iam.trust_policy(roles["controllers"].trust)
    assert _iam.trust_grants(document) == {
        ("ec2.amazonaws.com", "sts:AssumeRole"),
        ("pods.eks.amazonaws.com", "sts:AssumeRole"),
        ("pods.eks.amazonaws.com", "sts:TagSession"),
    }
    # An older role trusting only EC2 (or pods without TagSession) differs, so the bootstrap updates it.
    assert _iam.trust_grants(_iam.trust_policy("ec2.amazonaws.com")) != _iam.trust_grants(document)


def _resources(document: dict[str, Any], action: str) -> list[str]:
    found = []
    for statement in document["Statement"]:
        if action in statement["Action"]:
            resources = statement["Resource"]
            found += [resources] if isinstance(resources, str) else resources
    return found


def _arn_allowed(patterns: list[str], arn: str) -> bool:
    return any(re.fullmatch(re.escape(p).replace(r"\*", ".*"), arn) for p in patterns)


def test_scoped_statements_cover_the_names_the_code_gives():
    """Actions are derived from the calls; the scoped resources must match the names the code creates: the PKI
    secret (_kubeadm.secret_name) and the bootstrap data (_bootstrap_data.new_prefix) - and nothing broader."""
    import uuid

    from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as _kubeadm
    from ansible_collections.clusterapi.aws.plugins.module_utils.machines import bootstrap_data as _bootstrap_data

    document = policies.controllers_policy(SUFFIX, BOTH)
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:{}-AbCdEf"
    names = [_kubeadm.secret_name("c1"), _bootstrap_data.new_prefix("secrets-manager", uuid.uuid4()) + "/0"]
    for action in ("secretsmanager:CreateSecret", "secretsmanager:GetSecretValue", "secretsmanager:DeleteSecret"):
        patterns = _resources(document, action)
        assert "*" not in patterns
        for name in names:
            assert _arn_allowed(patterns, arn.format(name)), (action, name)
        assert not _arn_allowed(patterns, arn.format("someone-else/secret"))
    parameter = _bootstrap_data.new_prefix("ssm-parameter-store", uuid.uuid4()) + "/0"
    patterns = _resources(document, "ssm:PutParameter")
    assert _arn_allowed(patterns, f"arn:aws:ssm:us-east-1:123456789012:parameter{parameter}")


def test_optional_permissions_are_exactly_what_only_the_preflight_calls():
    """OPTIONAL_ACTIONS (documented: what each enables) is derived knowledge: the actions of capa_preflight's tables
    that no other tier of the controllers calls. A tier starting to use one makes it required, and this fails."""
    tables = {**policies.CONTROLLER_ACTIONS, **policies.CONTROLLER_EKS_ACTIONS}
    preflight = set(tables["preflight"]) | set(tables["eks_preflight"])
    others = {a for key, actions in tables.items() if key not in ("preflight", "eks_preflight") for a in actions}
    assert set(policies.OPTIONAL_ACTIONS) == preflight - others - {"sts:GetCallerIdentity"}
    # sts:GetCallerIdentity is never denied by IAM: listing it as optional would promise a warning that cannot come.
    assert "sts:GetCallerIdentity" in preflight


def test_optional_permissions_sit_in_optional_statements_only():
    documents = [policies.controllers_policy(SUFFIX, BOTH), policies.controllers_eks_policy()]
    for document in documents:
        for statement in document["Statement"]:
            optional = set(statement["Action"]) & set(policies.OPTIONAL_ACTIONS)
            if policies.is_optional(statement):
                assert set(statement["Action"]) == optional, statement
            else:
                assert optional == set(), statement
    sids = {s["Sid"] for d in documents for s in d["Statement"] if policies.is_optional(s)}
    assert sids == {
        "OptionalPreflightChecks",
        "OptionalInstanceProfileCheck",
        "OptionalPermissionCheck",
        "OptionalEksPreflightChecks",
    }
    everything = set().union(*(allowed(d) for d in documents))
    assert set(policies.OPTIONAL_ACTIONS) <= everything


def test_without_the_optional_statements_every_tier_but_the_preflight_checks_is_allowed():
    found = called_actions()
    documents = [policies.controllers_policy(SUFFIX, BOTH), policies.controllers_eks_policy()]
    required = {
        a
        for d in documents
        for s in d["Statement"]
        if not policies.is_optional(s) and s["Effect"] == "Allow"
        for a in s["Action"]
    }
    # The service wrappers behind the optional reads are called by the preflight alone.
    optional_wrappers = (
        "describe_key",
        "quota_value",
        "cluster_versions",
        "get_instance_profile",
        "simulate_principal",
    )
    for path in MODULE_UTILS.rglob("*.py"):
        relative = path.relative_to(MODULE_UTILS).as_posix()
        if relative.startswith("aws/") or relative in NOT_CONTROLLERS or relative == "cluster/preflight.py":
            continue
        used = [w for w in optional_wrappers if re.search(rf"\b{w}\(", path.read_text())]
        assert used == [], f"{relative} calls {used}: its permission is no longer optional"
    missing = {
        f: sorted(a - required)
        for f, a in found.items()
        if not f.startswith("aws/") and f != "cluster/preflight.py" and a - required
    }
    assert missing == {}
