# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_eks_cluster: pure decisions (table-driven), the token, and the AWS paths moto cannot serve.

moto lacks EKS addons, UpdateClusterVersion, AssociateEncryptionConfig, DescribeUpdate, access entries and
UpdateClusterConfig's accessConfig, so those paths run here against botocore's Stubber: every request is
checked (operation, parameters, order) and ``assert_no_pending_responses`` proves each expected one was made.
"""

from __future__ import annotations

import base64
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.stub import ANY, Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import cluster_plan as _eks_plan
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import eks_cluster as _eks
from ansible_collections.clusterapi.aws.plugins.module_utils.eks import kubeconfig as _eks_kubeconfig
from ansible_collections.clusterapi.aws.plugins.module_utils.iam import roles as _iam
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

CLUSTER = "demo"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ARN = "arn:aws:eks:us-east-1:123456789012:cluster/demo"
ROLE_ARN = "arn:aws:iam::123456789012:role/given"
NODE_ROLE = "arn:aws:iam::123456789012:role/nodes"
ADMIN_ROLE = "arn:aws:iam::123456789012:role/admins"
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
# A valid policy document for in-process moto IAM tests.
POLICY = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "*"}]}'
OTHER_KEY = "arn:aws:kms:us-east-1:123456789012:key/ffffffff-12ab-34cd-56ef-1234567890ab"


# pure decisions ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "current, desired, steps",
    [
        ("1.29", "1.31", ["1.30", "1.31"]),
        ("1.29", "1.30", ["1.30"]),
        ("1.31", "1.31", []),
        ("1.31", None, []),
        ("1.27", "1.31", ["1.28", "1.29", "1.30", "1.31"]),
    ],
)
def test_version_steps_one_minor_at_a_time(current, desired, steps):
    assert _eks_plan.version_steps(current, desired) == steps


@pytest.mark.parametrize("current, desired, words", [("1.31", "1.30", "downgraded"), ("1.31", "2.0", "major")])
def test_version_steps_refused(current, desired, words):
    with pytest.raises(SpecError) as error:
        _eks_plan.version_steps(current, desired)
    assert error.value.field == "version" and words in str(error.value)


@pytest.mark.parametrize("value", ["1.31.2", "v1", "latest", ""])
def test_bad_versions(value):
    with pytest.raises(SpecError):
        _eks_plan.parse_version(value)


@pytest.mark.parametrize(
    "observed, wanted, expected",
    [
        ([], None, None),
        ([], {"provider": KEY, "resources": ["secrets"]}, [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]),
        ([{"resources": ["secrets"], "provider": {"keyArn": KEY}}], {"provider": KEY, "resources": ["secrets"]}, None),
    ],
)
def test_encryption_can_be_added(observed, wanted, expected):
    assert _eks_plan.encryption_to_associate(observed, wanted) == expected


@pytest.mark.parametrize(
    "wanted, words",
    [(None, "cannot be removed"), ({"provider": OTHER_KEY, "resources": ["secrets"]}, "cannot be changed")],
)
def test_encryption_cannot_change_or_go(wanted, words):
    observed = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    with pytest.raises(ReconcileError, match=words):
        _eks_plan.encryption_to_associate(observed, wanted)


ALL_OFF = {
    "clusterLogging": [{"types": ["api", "audit", "authenticator", "controllerManager", "scheduler"], "enabled": False}]
}


@pytest.mark.parametrize(
    "observed, wanted, expected",
    [
        (ALL_OFF, {}, None),
        (None, {"audit": False}, None),
        (
            ALL_OFF,
            {"api_server": True, "audit": True},
            {
                "clusterLogging": [
                    {"types": ["api", "audit"], "enabled": True},
                    {"types": ["authenticator", "controllerManager", "scheduler"], "enabled": False},
                ]
            },
        ),
        ({"clusterLogging": [{"types": ["audit"], "enabled": True}]}, {"audit": True}, None),
        (
            {"clusterLogging": [{"types": ["audit"], "enabled": True}]},
            {},
            {
                "clusterLogging": [
                    {"types": ["api", "audit", "authenticator", "controllerManager", "scheduler"], "enabled": False}
                ]
            },
        ),
    ],
)
def test_logging_update(observed, wanted, expected):
    assert _eks_plan.logging_update(observed, wanted) == expected


DEFAULT_ENDPOINT = {"public": True, "private": False, "public_cidrs": ["0.0.0.0/0"]}


@pytest.mark.parametrize(
    "observed, wanted, expected",
    [
        (
            {"endpointPublicAccess": True, "endpointPrivateAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]},
            DEFAULT_ENDPOINT,
            None,
        ),
        ({}, DEFAULT_ENDPOINT, None),  # AWS's defaults
        (
            {"endpointPublicAccess": True, "endpointPrivateAccess": False},
            {"public": True, "private": True, "public_cidrs": ["203.0.113.7/24"]},
            {"endpointPublicAccess": True, "endpointPrivateAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]},
        ),
        # A private-only endpoint ignores its CIDR list: no drift.
        (
            {"endpointPublicAccess": False, "endpointPrivateAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]},
            {"public": False, "private": True, "public_cidrs": ["10.0.0.0/8"]},
            None,
        ),
        # CIDR order does not matter.
        (
            {"endpointPublicAccess": True, "publicAccessCidrs": ["198.51.100.0/24", "203.0.113.0/24"]},
            {"public": True, "private": False, "public_cidrs": ["203.0.113.0/24", "198.51.100.0/24"]},
            None,
        ),
    ],
)
def test_endpoint_update(observed, wanted, expected):
    assert _eks_plan.endpoint_update(observed, wanted) == expected


@pytest.mark.parametrize(
    "observed, wanted, expected",
    [
        ({}, "CONFIG_MAP", None),
        ({"accessConfig": {"authenticationMode": "CONFIG_MAP"}}, "API", {"authenticationMode": "API"}),
        ({"accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}}, "API", {"authenticationMode": "API"}),
    ],
)
def test_access_config_update(observed, wanted, expected):
    assert _eks_plan.access_config_update(observed, wanted) == expected


def test_authentication_mode_cannot_go_back():
    with pytest.raises(SpecError) as error:
        _eks_plan.access_config_update({"accessConfig": {"authenticationMode": "API"}}, "CONFIG_MAP")
    assert error.value.field == "access_config.authentication_mode"


def test_addon_plan_creates_updates_deletes_ours_and_leaves_others():
    wanted = [
        {"name": "vpc-cni", "version": "v1.19.0", "conflict_resolution": "overwrite"},
        {"name": "coredns", "configuration": '{"replicaCount": 3}', "conflict_resolution": "preserve"},
        {"name": "kube-proxy", "conflict_resolution": "none"},
        {"name": "foreign"},
        {"name": "same", "configuration": '{"a": 1, "b": 2}'},
    ]
    observed = {
        "vpc-cni": {"addonVersion": "v1.18.0"},
        "coredns": {"addonVersion": "v1.11.1", "configurationValues": '{"replicaCount": 2}'},
        "foreign": {"addonVersion": "v1"},
        "same": {"configurationValues": '{"b": 2, "a": 1}'},
        "dropped": {"addonVersion": "v1"},
        "other-dropped": {"addonVersion": "v1"},
    }
    owned = {"vpc-cni", "coredns", "same", "dropped"}
    actions, foreign = _eks_plan.plan_addons(wanted, observed, owned)
    assert [(a.action, a.name) for a in actions] == [
        ("update", "vpc-cni"),
        ("update", "coredns"),
        ("create", "kube-proxy"),
        ("delete", "dropped"),
    ]
    assert actions[0].request == {"addonName": "vpc-cni", "resolveConflicts": "OVERWRITE", "addonVersion": "v1.19.0"}
    assert actions[1].request["resolveConflicts"] == "PRESERVE"
    assert actions[2].request == {"addonName": "kube-proxy", "resolveConflicts": "NONE"}
    assert foreign == ["foreign"]


def test_aws_auth_renders_node_roles_then_users_mappings():
    roles, users = _eks_plan.aws_auth_mappings(
        [{"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["system:masters"]}],
        [{"userarn": "arn:aws:iam::123456789012:user/alice", "username": "alice", "groups": []}],
        [NODE_ROLE],
    )
    manifest = yaml.safe_load(_eks_plan.render_aws_auth(roles, users, _eks_kubeconfig.dump_yaml))
    assert manifest["metadata"] == {"name": "aws-auth", "namespace": "kube-system"}
    assert yaml.safe_load(manifest["data"]["mapRoles"]) == [
        {
            "rolearn": NODE_ROLE,
            "username": "system:node:{{EC2PrivateDNSName}}",
            "groups": ["system:bootstrappers", "system:nodes"],
        },
        {"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["system:masters"]},
    ]
    assert yaml.safe_load(manifest["data"]["mapUsers"])[0]["userarn"].endswith("user/alice")


def test_access_entries_leave_out_system_groups():
    entries = _eks_plan.desired_access_entries(
        [NODE_ROLE],
        [{"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["system:masters", "ops"], "policy_arn": ADMIN_POLICY}],
    )
    assert entries == [
        {"principalArn": NODE_ROLE, "type": "EC2_LINUX"},
        {
            "principalArn": ADMIN_ROLE,
            "type": "STANDARD",
            "username": "admin",
            "kubernetesGroups": ["ops"],
            "policyArn": ADMIN_POLICY,
        },
    ]


@pytest.mark.parametrize(
    "subnets, restrict, field_words",
    [
        (["subnet-0123456789abcdef0"], False, "at least two subnets"),
        (
            [
                {"id": "subnet-0a", "availability_zone": "us-east-1a"},
                {"id": "subnet-0b", "availability_zone": "us-east-1a"},
            ],
            False,
            "two availability zones",
        ),
        (
            [
                {"id": "subnet-0a", "availability_zone": "us-east-1a", "is_public": True},
                {"id": "subnet-0b", "availability_zone": "us-east-1b", "is_public": True},
                {"id": "subnet-0c", "availability_zone": "us-east-1a", "is_public": False},
            ],
            True,
            "private subnets",
        ),
        (["vpc-0123"], False, "not a subnet id"),
    ],
)
def test_subnet_checks(subnets, restrict, field_words):
    with pytest.raises(SpecError, match=field_words):
        _eks_plan.check_subnets(subnets, restrict)


def test_subnet_ids_from_capa_subnet_results():
    subnets = [
        {"id": "subnet-0a", "availability_zone": "us-east-1a", "is_public": True, "route_table_id": "rtb-1"},
        {"id": "subnet-0b", "availability_zone": "us-east-1b", "is_public": False},
        "subnet-0c",
    ]
    assert _eks_plan.subnet_ids(subnets, False) == ["subnet-0a", "subnet-0b", "subnet-0c"]
    assert _eks_plan.subnet_ids(subnets, True) == ["subnet-0b", "subnet-0c"]


def test_trust_policy_template_names_the_issuer():
    issuer = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
    provider = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
    assert _eks_plan.provider_matches_issuer(provider, issuer)
    template = _eks_plan.irsa_trust_policy_template(provider, issuer)
    condition = template["Statement"][0]["Condition"]["StringEquals"]
    assert condition["oidc.eks.us-east-1.amazonaws.com/id/ABC:aud"] == "sts.amazonaws.com"


def test_iam_ownership_and_trust():
    assert _iam.role_is_owned({"kubernetes.io/cluster/demo": "owned"}, "demo")
    assert _iam.role_is_owned({OWNER: "owned"}, "demo")
    assert not _iam.role_is_owned({"kubernetes.io/cluster/other": "owned"}, "demo")
    assert not _iam.role_is_owned(None, "demo")
    assert _iam.trusted_services(
        '{"Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}}]}'
    ) == {"eks.amazonaws.com"}
    assert _iam.trusted_services(_iam.trust_policy(["b", "a"])) == {"a", "b"}
    assert _iam.managed_policy_arn("cn-north-1", "X") == "arn:aws-cn:iam::aws:policy/X"


def test_token_is_a_presigned_sts_url_for_the_cluster():
    session = AwsSession("eu-west-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    token = _eks_kubeconfig.token(session.credentials(), "eu-west-1", "my-eks")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    body = token[len("k8s-aws-v1.") :]
    url = urllib.parse.urlparse(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode())
    query = urllib.parse.parse_qs(url.query)
    assert (url.scheme, url.netloc, url.path) == ("https", "sts.eu-west-1.amazonaws.com", "/")
    assert query["Action"] == ["GetCallerIdentity"] and query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/") and "/eu-west-1/sts/" in query["X-Amz-Credential"][0]


def test_thumbprint_fetch_failure_is_a_clear_error():
    with pytest.raises(ReconcileError, match="oidc_thumbprint"):
        _eks_kubeconfig.fetch_root_ca_thumbprint("https://127.0.0.1:9/id/x", timeout=2)


# AWS paths moto lacks (Stubber) -----------------------------------------------------------------------------------
def params(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    """The module's parameters after argument-spec defaults."""
    out = {
        "cluster_name": CLUSTER,
        "state": "present",
        "name": None,
        "version": "1.31",
        "role_arn": ROLE_ARN,
        "role_name": None,
        "subnets": ["subnet-0a", "subnet-0b"],
        "restrict_private_subnets": False,
        "security_group_ids": [],
        "endpoint_access": {"public": True, "private": False, "public_cidrs": ["0.0.0.0/0"]},
        "logging": {k: False for k in _eks_plan.LOG_TYPES},
        "encryption_config": None,
        "access_config": {"authentication_mode": "CONFIG_MAP", "bootstrap_cluster_creator_admin_permissions": True},
        "addons": None,
        "associate_oidc_provider": False,
        "oidc_thumbprint": None,
        "iam_authenticator": {"map_roles": [], "map_users": []},
        "node_role_arns": [],
        "output_dir": str(tmp_path / "out"),
    }
    out.update(extra)
    return out


def described(version: str = "1.31", status: str = "ACTIVE", **extra: Any) -> dict[str, Any]:
    cluster = {
        "name": CLUSTER,
        "arn": ARN,
        "version": version,
        "status": status,
        "endpoint": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificateAuthority": {"data": "Q0EK"},
        "roleArn": ROLE_ARN,
        "resourcesVpcConfig": {
            "subnetIds": ["subnet-0a", "subnet-0b"],
            "endpointPublicAccess": True,
            "endpointPrivateAccess": False,
            "publicAccessCidrs": ["0.0.0.0/0"],
            "clusterSecurityGroupId": "sg-0eks",
        },
        "logging": ALL_OFF,
        "identity": {"oidc": {"issuer": "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"}},
        "accessConfig": {"authenticationMode": "CONFIG_MAP"},
        "tags": {
            OWNER: "owned",
            "sigs.k8s.io/cluster-api-provider-aws/role": "common",
            "Name": CLUSTER,
            f"kubernetes.io/cluster/{CLUSTER}": "owned",
        },
    }
    cluster.update(extra)
    return {"cluster": cluster}


@pytest.fixture
def aws_stub(monkeypatch):
    monkeypatch.setattr(_eks, "POLL_DELAY", 0)
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    eks = Stubber(session.client("eks").raw)
    iam = Stubber(session.client("iam").raw)
    eks.activate()
    iam.activate()
    yield session, eks, iam
    eks.deactivate()
    iam.deactivate()


def run(session: AwsSession, p: dict[str, Any], check: bool = False, wait: bool = True) -> tuple[Context, Any]:
    ctx = Context(session=session, cluster=CLUSTER, check_mode=check, wait=wait, wait_timeout=30)
    _eks.EksClusterTier().validate(p, "us-east-1")
    before, after = _eks.EksClusterTier().reconcile(ctx, p)
    return ctx, after


def update(update_id: str, status: str = "InProgress", kind: str = "VersionUpdate") -> dict[str, Any]:
    return {"update": {"id": update_id, "status": status, "type": kind}}


def test_upgrade_129_to_131_is_two_version_updates_each_waited_for(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    eks.add_response("update_cluster_version", update("u1"), {"name": CLUSTER, "version": "1.30"})
    eks.add_response("describe_update", update("u1"), {"name": CLUSTER, "updateId": "u1"})
    eks.add_response("describe_update", update("u1", "Successful"), {"name": CLUSTER, "updateId": "u1"})
    eks.add_response("update_cluster_version", update("u2"), {"name": CLUSTER, "version": "1.31"})
    eks.add_response("describe_update", update("u2", "Successful"), {"name": CLUSTER, "updateId": "u2"})
    eks.add_response("describe_cluster", described("1.31"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path))
    eks.assert_no_pending_responses()
    assert [(p.call, p.resource, p.reason) for p in ctx.ops.plan] == [
        ("eks:UpdateClusterVersion", CLUSTER, "version 1.30"),
        ("eks:UpdateClusterVersion", CLUSTER, "version 1.31"),
        ("file:WriteFile", str(tmp_path / "out" / CLUSTER / "user-kubeconfig"), "kubeconfig missing"),
    ]
    assert after["cluster"]["version"] == "1.31"
    # Both kubeconfigs written; the token one is not in the plan.
    assert (tmp_path / "out" / CLUSTER / "kubeconfig").is_file()
    assert [p.call for p in ctx.ops.plan].count("file:WriteFile") == 1


def test_failed_version_update_stops_the_run(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    eks.add_response("update_cluster_version", update("u1"), {"name": CLUSTER, "version": "1.30"})
    failed = update("u1", "Failed")
    failed["update"]["errors"] = [{"errorMessage": "insufficient free IPs"}]
    eks.add_response("describe_update", failed, {"name": CLUSTER, "updateId": "u1"})
    with pytest.raises(ReconcileError, match="insufficient free IPs"):
        run(session, params(tmp_path))
    eks.assert_no_pending_responses()


def test_without_wait_only_the_first_step_is_made(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    eks.add_response("update_cluster_version", update("u1"), {"name": CLUSTER, "version": "1.30"})
    eks.add_response("describe_cluster", described("1.29", "UPDATING"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path), wait=False)
    eks.assert_no_pending_responses()
    assert [p.call for p in ctx.ops.plan if p.call.startswith("eks:")] == ["eks:UpdateClusterVersion"]
    assert any("version 1.31" in w for w in ctx.warnings)


def test_downgrade_is_refused_before_any_mutating_request(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.31"), {"name": CLUSTER})
    with pytest.raises(SpecError, match="cannot be downgraded"):
        run(session, params(tmp_path, version="1.30"))
    eks.assert_no_pending_responses()
    assert session.recorder.mutating() == {}


def test_check_mode_plans_every_step_without_requests(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path), check=True)
    eks.assert_no_pending_responses()
    assert [p.call for p in ctx.ops.plan if p.call.startswith("eks:")] == ["eks:UpdateClusterVersion"] * 2
    assert after["cluster"]["version"] == "1.31"
    assert not (tmp_path / "out").exists()


def test_encryption_is_associated_and_waited_for(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    encryption = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    eks.add_response(
        "associate_encryption_config",
        update("e1", kind="AssociateEncryptionConfig"),
        {"clusterName": CLUSTER, "encryptionConfig": encryption},
    )
    eks.add_response("describe_update", update("e1", "Successful"), {"name": CLUSTER, "updateId": "e1"})
    eks.add_response("describe_cluster", described(encryptionConfig=encryption), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, encryption_config={"provider": KEY, "resources": ["secrets"]}))
    eks.assert_no_pending_responses()
    assert after["cluster"]["encryption"] == {"provider": KEY, "resources": ["secrets"]}


def test_encryption_change_is_an_error_before_any_mutating_request(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    encryption = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    eks.add_response("describe_cluster", described(encryptionConfig=encryption), {"name": CLUSTER})
    with pytest.raises(ReconcileError, match="cannot be changed"):
        run(session, params(tmp_path, encryption_config={"provider": OTHER_KEY, "resources": ["secrets"]}))
    assert session.recorder.mutating() == {}


def addon(name: str, status: str = "ACTIVE", owned: bool = True, version: str = "v1", **extra: Any) -> dict[str, Any]:
    tags = {OWNER: "owned", "sigs.k8s.io/cluster-api-provider-aws/role": "common"} if owned else {}
    return {
        "addon": {
            "addonName": name,
            "clusterName": CLUSTER,
            "status": status,
            "addonVersion": version,
            "addonArn": f"arn:aws:eks:us-east-1:123456789012:addon/demo/{name}/x",
            "tags": tags,
            **extra,
        }
    }


def test_addons_created_updated_deleted_and_waited_for(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_addons", {"addons": ["vpc-cni", "old", "theirs"]}, {"clusterName": CLUSTER})
    eks.add_response("describe_addon", addon("vpc-cni"), {"clusterName": CLUSTER, "addonName": "vpc-cni"})
    eks.add_response("describe_addon", addon("old"), {"clusterName": CLUSTER, "addonName": "old"})
    eks.add_response("describe_addon", addon("theirs", owned=False), {"clusterName": CLUSTER, "addonName": "theirs"})
    eks.add_response(
        "update_addon",
        update("a1", kind="AddonUpdate"),
        {
            "clusterName": CLUSTER,
            "addonName": "vpc-cni",
            "addonVersion": "v2",
            "resolveConflicts": "OVERWRITE",
            "serviceAccountRoleArn": ROLE_ARN,
            "clientRequestToken": ANY,
        },
    )
    eks.add_response(
        "create_addon",
        addon("coredns", "CREATING"),
        {
            "clusterName": CLUSTER,
            "addonName": "coredns",
            "configurationValues": '{"replicaCount": 3}',
            "resolveConflicts": "PRESERVE",
            "tags": {OWNER: "owned", "sigs.k8s.io/cluster-api-provider-aws/role": "common"},
            "clientRequestToken": ANY,
        },
    )
    eks.add_response("delete_addon", addon("old", "DELETING"), {"clusterName": CLUSTER, "addonName": "old"})
    # waits: the update by id, the create until ACTIVE, the delete until gone
    eks.add_response("describe_update", update("a1"), {"name": CLUSTER, "updateId": "a1", "addonName": "vpc-cni"})
    eks.add_response(
        "describe_update", update("a1", "Successful"), {"name": CLUSTER, "updateId": "a1", "addonName": "vpc-cni"}
    )
    eks.add_response("describe_addon", addon("coredns", "CREATING"), {"clusterName": CLUSTER, "addonName": "coredns"})
    eks.add_response("describe_addon", addon("coredns", "ACTIVE"), {"clusterName": CLUSTER, "addonName": "coredns"})
    eks.add_response("describe_addon", addon("old", "DELETING"), {"clusterName": CLUSTER, "addonName": "old"})
    eks.add_client_error(
        "describe_addon", "ResourceNotFoundException", expected_params={"clusterName": CLUSTER, "addonName": "old"}
    )
    wanted = [
        {"name": "vpc-cni", "version": "v2", "service_account_role_arn": ROLE_ARN, "conflict_resolution": "overwrite"},
        {"name": "coredns", "configuration": '{"replicaCount": 3}', "conflict_resolution": "preserve"},
        {"name": "theirs", "version": "v9", "conflict_resolution": "overwrite"},
    ]
    ctx, after = run(session, params(tmp_path, addons=wanted))
    eks.assert_no_pending_responses()
    assert [p.call for p in ctx.ops.plan if p.call.startswith("eks:")] == [
        "eks:UpdateAddon",
        "eks:CreateAddon",
        "eks:DeleteAddon",
    ]
    assert after["addons"] == {"installed": ["coredns", "vpc-cni"], "other": ["theirs"]}
    assert any("theirs" in w for w in ctx.warnings)


def test_failed_addon_is_reported(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_addons", {"addons": []}, {"clusterName": CLUSTER})
    eks.add_response("create_addon", addon("coredns", "CREATING"), None)
    failed = addon(
        "coredns", "CREATE_FAILED", health={"issues": [{"code": "InsufficientNumberOfReplicas", "message": "no nodes"}]}
    )
    eks.add_response("describe_addon", failed, {"clusterName": CLUSTER, "addonName": "coredns"})
    with pytest.raises(ReconcileError, match="CREATE_FAILED: no nodes"):
        run(session, params(tmp_path, addons=[{"name": "coredns", "conflict_resolution": "overwrite"}]))


def test_access_entries_and_auth_mode_update(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response(
        "update_cluster_config",
        update("c1", kind="AccessConfigUpdate"),
        {"name": CLUSTER, "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}},
    )
    eks.add_response("describe_update", update("c1", "Successful"), {"name": CLUSTER, "updateId": "c1"})
    eks.add_response(
        "describe_cluster", described(accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"}), {"name": CLUSTER}
    )
    eks.add_response("list_access_entries", {"accessEntries": []}, {"clusterName": CLUSTER})
    tags = {OWNER: "owned", "sigs.k8s.io/cluster-api-provider-aws/role": "common"}
    eks.add_response(
        "create_access_entry",
        {},
        {
            "clusterName": CLUSTER,
            "principalArn": NODE_ROLE,
            "type": "EC2_LINUX",
            "tags": tags,
            "clientRequestToken": ANY,
        },
    )
    eks.add_response(
        "create_access_entry",
        {},
        {
            "clusterName": CLUSTER,
            "principalArn": ADMIN_ROLE,
            "type": "STANDARD",
            "username": "admin",
            "tags": tags,
            "clientRequestToken": ANY,
        },
    )
    eks.add_response(
        "associate_access_policy",
        {},
        {
            "clusterName": CLUSTER,
            "principalArn": ADMIN_ROLE,
            "policyArn": ADMIN_POLICY,
            "accessScope": {"type": "cluster"},
        },
    )
    p = params(
        tmp_path,
        access_config={
            "authentication_mode": "API_AND_CONFIG_MAP",
            "bootstrap_cluster_creator_admin_permissions": True,
        },
        iam_authenticator={
            "map_roles": [
                {"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["system:masters"], "policy_arn": ADMIN_POLICY}
            ],
            "map_users": [],
        },
        node_role_arns=[NODE_ROLE],
    )
    ctx, after = run(session, p)
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == [
        "eks:UpdateClusterConfig",
        "eks:CreateAccessEntry",
        "eks:CreateAccessEntry",
        "eks:AssociateAccessPolicy",
    ]
    assert Path(after["aws_auth"]).is_file()  # API_AND_CONFIG_MAP still reads aws-auth


def test_existing_access_entries_only_get_missing_policies(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(accessConfig={"authenticationMode": "API"}), {"name": CLUSTER})
    eks.add_response("list_access_entries", {"accessEntries": [NODE_ROLE, ADMIN_ROLE]}, {"clusterName": CLUSTER})
    eks.add_response(
        "list_associated_access_policies",
        {"clusterName": CLUSTER, "principalArn": ADMIN_ROLE, "associatedAccessPolicies": [{"policyArn": ADMIN_POLICY}]},
        {"clusterName": CLUSTER, "principalArn": ADMIN_ROLE},
    )
    p = params(
        tmp_path,
        access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
        iam_authenticator={
            "map_roles": [{"rolearn": ADMIN_ROLE, "groups": [], "policy_arn": ADMIN_POLICY}],
            "map_users": [],
        },
        node_role_arns=[NODE_ROLE],
    )
    ctx, after = run(session, p)
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if not c.call.startswith("file:")] == []
    assert after["aws_auth"] is None  # API mode: no ConfigMap


def test_foreign_cluster_is_used_as_it_is(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29", tags={}), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, addons=[{"name": "x", "conflict_resolution": "overwrite"}]))
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if not c.call.startswith("file:")] == []
    assert any("without the ownership tag" in w for w in ctx.warnings)


def test_create_retries_while_iam_propagates_the_new_role(aws_stub, tmp_path, monkeypatch):
    monkeypatch.setattr(_eks, "ROLE_PROPAGATION_RETRY", 0)
    session, eks, _iam_stub = aws_stub
    eks.add_client_error("describe_cluster", "ResourceNotFoundException")
    eks.add_client_error(
        "create_cluster",
        "InvalidParameterException",
        "Role with arn: given, could not be assumed because it does not exist",
    )
    eks.add_response("create_cluster", described(status="CREATING"), None)
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path))
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == ["eks:CreateCluster"]
    assert after["cluster"]["status"] == "ACTIVE"


def test_owned_oidc_provider_gets_client_id_thumbprint_and_tags(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    issuer = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
    arn = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    iam.add_response(
        "list_open_id_connect_providers",
        {"OpenIDConnectProviderList": [{"Arn": arn}, {"Arn": arn.replace("ABC", "OTHER")}]},
        {},
    )
    iam.add_response(
        "get_open_id_connect_provider",
        {"Url": issuer, "ClientIDList": [], "ThumbprintList": ["0" * 40], "Tags": [{"Key": OWNER, "Value": "owned"}]},
        {"OpenIDConnectProviderArn": arn},
    )
    iam.add_response(
        "add_client_id_to_open_id_connect_provider",
        {},
        {"OpenIDConnectProviderArn": arn, "ClientID": "sts.amazonaws.com"},
    )
    iam.add_response(
        "update_open_id_connect_provider_thumbprint",
        {},
        {"OpenIDConnectProviderArn": arn, "ThumbprintList": ["a" * 40]},
    )
    iam.add_response("tag_open_id_connect_provider", {}, {"OpenIDConnectProviderArn": arn, "Tags": ANY})
    ctx, after = run(session, params(tmp_path, associate_oidc_provider=True, oidc_thumbprint="A" * 40))
    iam.assert_no_pending_responses()
    assert after["cluster"]["oidc"]["provider_arn"] == arn


def test_delete_refuses_while_fargate_profiles_remain(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": CLUSTER})
    eks.add_response("list_fargate_profiles", {"fargateProfileNames": ["fp-default"]}, {"clusterName": CLUSTER})
    with pytest.raises(ReconcileError, match="Fargate profiles fp-default"):
        run(session, params(tmp_path, state="absent"))
    assert session.recorder.mutating() == {}


def test_iam_role_drift_is_reconciled_and_owned_role_deleted_with_its_attachments():
    """In-process moto: trust, boundary, policies and tags of an owned role; deletion of everything on it."""
    import json

    from moto import mock_aws

    with mock_aws():
        session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
        raw = session.client("iam").raw
        wanted = raw.create_policy(PolicyName="wanted", PolicyDocument=POLICY)
        extra = raw.create_policy(PolicyName="extra", PolicyDocument=POLICY)
        raw.create_role(
            RoleName="r",
            AssumeRolePolicyDocument=json.dumps(_iam.trust_policy("ec2.amazonaws.com")),
            PermissionsBoundary=extra["Policy"]["Arn"],
            Tags=[{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}],
        )
        raw.attach_role_policy(RoleName="r", PolicyArn=extra["Policy"]["Arn"])
        ctx = Context(session=session, cluster=CLUSTER, check_mode=False)
        role = _iam.ensure_role(ctx, "r", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])
        assert role["managed"] and not role["created"]
        assert [c.call for c in ctx.ops.plan] == [
            "iam:UpdateAssumeRolePolicy",
            "iam:DeleteRolePermissionsBoundary",
            "iam:DetachRolePolicy",
            "iam:AttachRolePolicy",
            "iam:TagRole",
        ]
        again = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.ensure_role(again, "r", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])
        assert again.ops.plan == []

        raw.put_role_policy(RoleName="r", PolicyName="inline", PolicyDocument=POLICY)
        raw.create_instance_profile(InstanceProfileName="p")
        raw.add_role_to_instance_profile(InstanceProfileName="p", RoleName="r")
        gone = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.delete_owned_role(gone, "r")
        assert [c.call for c in gone.ops.plan] == [
            "iam:DetachRolePolicy",
            "iam:DeleteRolePolicy",
            "iam:RemoveRoleFromInstanceProfile",
            "iam:DeleteRole",
        ]
        assert _iam.get_role(gone, "r") is None

        # A role without the cluster's tags is used as it is and never deleted.
        raw.create_role(RoleName="theirs", AssumeRolePolicyDocument=json.dumps(_iam.trust_policy("eks.amazonaws.com")))
        theirs = Context(session=session, cluster=CLUSTER, check_mode=False)
        assert not _iam.ensure_role(theirs, "theirs", "eks.amazonaws.com", [wanted["Policy"]["Arn"]])["managed"]
        _iam.delete_owned_role(theirs, "theirs")
        assert theirs.ops.plan == [] and _iam.get_role(theirs, "theirs") is not None


def test_boundary_is_put_on_an_owned_role():

    from moto import mock_aws

    with mock_aws():
        session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
        raw = session.client("iam").raw
        boundary = raw.create_policy(PolicyName="b", PolicyDocument=POLICY)
        ctx = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.ensure_role(ctx, "r", "eks.amazonaws.com", [])
        again = Context(session=session, cluster=CLUSTER, check_mode=False)
        _iam.ensure_role(again, "r", "eks.amazonaws.com", [], permissions_boundary=boundary["Policy"]["Arn"])
        assert [c.call for c in again.ops.plan] == ["iam:PutRolePermissionsBoundary"]


def test_tag_drift_on_cluster_and_owned_addons_is_tag_resource(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": {"team": "platform"}})
    eks.add_response("list_addons", {"addons": ["coredns"]}, {"clusterName": CLUSTER})
    eks.add_response("describe_addon", addon("coredns"), {"clusterName": CLUSTER, "addonName": "coredns"})
    eks.add_response(
        "tag_resource", {}, {"resourceArn": addon("coredns")["addon"]["addonArn"], "tags": {"team": "platform"}}
    )
    ctx = Context(session=session, cluster=CLUSTER, check_mode=False, additional_tags={"team": "platform"})
    _eks.EksClusterTier().reconcile(
        ctx, params(tmp_path, addons=[{"name": "coredns", "conflict_resolution": "overwrite"}])
    )
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == ["eks:TagResource", "eks:TagResource"]
