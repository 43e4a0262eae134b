# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/cluster_plan.py: the pure decisions of capa_eks_cluster, table-driven (no AWS, no Stubber)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import cluster_plan as plan
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster_spec import EksClusterSpec
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.kubeconfig import dump_yaml
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError

from .eks_stubs import ADMIN_POLICY, ADMIN_ROLE, ALL_OFF, KEY, NODE_ROLE, OTHER_KEY, ROLE_ARN, described, params


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
    assert plan.version_steps(current, desired) == steps


@pytest.mark.parametrize("current, desired, words", [("1.31", "1.30", "downgraded"), ("1.31", "2.0", "major")])
def test_version_steps_refused(current, desired, words):
    with pytest.raises(SpecError) as error:
        plan.version_steps(current, desired)
    assert error.value.field == "version" and words in str(error.value)


@pytest.mark.parametrize("value", ["1.31.2", "v1", "latest", ""])
def test_bad_versions(value):
    with pytest.raises(SpecError):
        plan.parse_version(value)


@pytest.mark.parametrize(
    "observed, wanted, expected",
    [
        ([], None, None),
        ([], {"provider": KEY, "resources": ["secrets"]}, [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]),
        ([{"resources": ["secrets"], "provider": {"keyArn": KEY}}], {"provider": KEY, "resources": ["secrets"]}, None),
    ],
)
def test_encryption_can_be_added(observed, wanted, expected):
    assert plan.encryption_to_associate(observed, wanted) == expected


@pytest.mark.parametrize(
    "wanted, words",
    [(None, "cannot be removed"), ({"provider": OTHER_KEY, "resources": ["secrets"]}, "cannot be changed")],
)
def test_encryption_cannot_change_or_go(wanted, words):
    observed = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    with pytest.raises(ReconcileError, match=words):
        plan.encryption_to_associate(observed, wanted)


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
    assert plan.logging_update(observed, wanted) == expected


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
    assert plan.endpoint_update(observed, wanted) == expected


@pytest.mark.parametrize(
    "observed, wanted, expected",
    [
        ({}, "CONFIG_MAP", None),
        ({"accessConfig": {"authenticationMode": "CONFIG_MAP"}}, "API", {"authenticationMode": "API"}),
        ({"accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"}}, "API", {"authenticationMode": "API"}),
    ],
)
def test_access_config_update(observed, wanted, expected):
    assert plan.access_config_update(observed, wanted) == expected


def test_authentication_mode_cannot_go_back():
    with pytest.raises(SpecError) as error:
        plan.access_config_update({"accessConfig": {"authenticationMode": "API"}}, "CONFIG_MAP")
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
    actions, foreign = plan.plan_addons(wanted, observed, owned)
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
    roles, users = plan.aws_auth_mappings(
        [{"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["system:masters"]}],
        [{"userarn": "arn:aws:iam::123456789012:user/alice", "username": "alice", "groups": []}],
        [NODE_ROLE],
    )
    manifest = yaml.safe_load(plan.render_aws_auth(roles, users, dump_yaml))
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


def test_aws_auth_maps_roles_without_their_iam_path():
    """The authenticator matches the assumed role's ARN, which has no path: a pathed mapping would never match."""
    pathed_node = "arn:aws:iam::123456789012:role/teams/ops/pool-nodes"
    roles, _ = plan.aws_auth_mappings(
        [{"rolearn": "arn:aws-us-gov:iam::123456789012:role/admins/admin", "username": "admin", "groups": []}],
        [],
        [pathed_node, NODE_ROLE],
    )
    assert [r["rolearn"] for r in roles] == [
        "arn:aws:iam::123456789012:role/pool-nodes",
        NODE_ROLE,
        "arn:aws-us-gov:iam::123456789012:role/admin",
    ]
    assert plan.aws_auth_role_arn(NODE_ROLE) == NODE_ROLE
    assert plan.aws_auth_role_arn("arn:aws:iam::123456789012:user/alice") == "arn:aws:iam::123456789012:user/alice"


def test_access_entries_leave_out_system_groups():
    entries = plan.desired_access_entries(
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
        plan.check_subnets(subnets, restrict)


def test_subnet_ids_from_capa_subnet_results():
    subnets = [
        {"id": "subnet-0a", "availability_zone": "us-east-1a", "is_public": True, "route_table_id": "rtb-1"},
        {"id": "subnet-0b", "availability_zone": "us-east-1b", "is_public": False},
        "subnet-0c",
    ]
    assert plan.subnet_ids(subnets, False) == ["subnet-0a", "subnet-0b", "subnet-0c"]
    assert plan.subnet_ids(subnets, True) == ["subnet-0b", "subnet-0c"]


def test_trust_policy_template_names_the_issuer():
    issuer = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
    provider = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
    assert plan.provider_matches_issuer(provider, issuer)
    template = plan.irsa_trust_policy_template(provider, issuer)
    condition = template["Statement"][0]["Condition"]["StringEquals"]
    assert condition["oidc.eks.us-east-1.amazonaws.com/id/ABC:aud"] == "sts.amazonaws.com"


# input checks of the whole spec ------------------------------------------------------------------------------
def spec_of(tmp_path: Path, **extra) -> EksClusterSpec:
    return EksClusterSpec.from_params(params(tmp_path, **extra))


@pytest.mark.parametrize(
    "extra, field_name",
    [
        ({"name": "-bad"}, "name"),
        ({"output_dir": ""}, "output_dir"),
        ({"version": "1.31.2"}, "version"),
        ({"role_arn": "given"}, "role_arn"),
        ({"subnets": ["subnet-0a"]}, "subnets"),
        ({"security_group_ids": ["default"]}, "security_group_ids[0]"),
        ({"endpoint_access": {"public": True, "private": False, "public_cidrs": ["nowhere"]}}, "endpoint_access"),
        ({"encryption_config": {"provider": None, "resources": ["secrets"]}}, "encryption_config.provider"),
        ({"encryption_config": {"provider": "my-key", "resources": ["secrets"]}}, "encryption_config.provider"),
        ({"addons": [{"name": "coredns", "configuration": "{not json"}]}, "addons[0].configuration"),
        ({"addons": [{"name": "a"}, {"name": "a"}]}, "addons[1].name"),
        ({"iam_authenticator": {"map_roles": [{"rolearn": "admins"}], "map_users": []}}, "iam_authenticator.map_roles"),
        ({"iam_authenticator": {"map_roles": [], "map_users": [{"userarn": ""}]}}, "iam_authenticator.map_users"),
        ({"node_role_arns": ["nodes"]}, "node_role_arns[0]"),
        ({"oidc_thumbprint": "abc"}, "oidc_thumbprint"),
    ],
)
def test_bad_input_names_its_field(tmp_path, extra, field_name):
    with pytest.raises(SpecError) as error:
        plan.validate_spec(spec_of(tmp_path, **extra))
    assert error.value.field.startswith(field_name), error.value


def test_a_cluster_to_delete_needs_only_its_name(tmp_path):
    plan.validate_spec(spec_of(tmp_path, state="absent", version="latest", subnets=[]))
    with pytest.raises(SpecError):
        plan.validate_spec(spec_of(tmp_path, state="absent", name="-bad"))


# the control plane -------------------------------------------------------------------------------------------
def test_create_request_carries_the_whole_spec(tmp_path):
    spec = spec_of(
        tmp_path,
        subnets=[{"id": "subnet-0a", "is_public": True}, {"id": "subnet-0b"}, {"id": "subnet-0c"}],
        restrict_private_subnets=True,
        security_group_ids=["sg-0a"],
        logging={"audit": True},
        encryption_config={"provider": KEY, "resources": ["secrets"]},
        access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": False},
    )
    request = plan.create_request(spec, ROLE_ARN, {"Name": "demo"}, "capa-token")
    assert request == {
        "name": "demo",
        "roleArn": ROLE_ARN,
        "resourcesVpcConfig": {
            "subnetIds": ["subnet-0b", "subnet-0c"],
            "securityGroupIds": ["sg-0a"],
            "endpointPublicAccess": True,
            "endpointPrivateAccess": False,
            "publicAccessCidrs": ["0.0.0.0/0"],
        },
        "logging": {
            "clusterLogging": [
                {"types": ["audit"], "enabled": True},
                {"types": ["api", "authenticator", "controllerManager", "scheduler"], "enabled": False},
            ]
        },
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
        "tags": {"Name": "demo"},
        "clientRequestToken": "capa-token",
        "version": "1.31",
        "encryptionConfig": [{"resources": ["secrets"], "provider": {"keyArn": KEY}}],
    }
    assert "version" not in plan.create_request(spec_of(tmp_path, version=None), ROLE_ARN, {}, "t")
    predicted = plan.predicted_cluster(request)
    assert predicted["arn"] == "planned:eks:demo" and predicted["status"] == "CREATING"
    assert "endpoint" not in predicted and plan.is_planned(predicted)


ENDPOINT = {"public": True, "private": True, "public_cidrs": ["203.0.113.0/24"]}
VERSION, CONFIG, ENCRYPTION = plan.VERSION_UPDATE, plan.CONFIG_UPDATE, plan.ENCRYPTION_UPDATE


@pytest.mark.parametrize(
    "observed, extra, expected",
    [
        ({}, {}, []),
        ({"version": "1.29"}, {}, [(VERSION, "version 1.30"), (VERSION, "version 1.31")]),
        ({}, {"version": None}, []),
        ({}, {"endpoint_access": ENDPOINT}, [(CONFIG, "endpoint access differs")]),
        ({}, {"logging": {"audit": True}}, [(CONFIG, "logging differs")]),
        (
            {},
            {"access_config": {"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True}},
            [(CONFIG, "authentication mode differs")],
        ),
        ({}, {"encryption_config": {"provider": KEY, "resources": ["secrets"]}}, [(ENCRYPTION, "encryption added")]),
        # Everything at once: the version first, then each config update, encryption last.
        (
            {"version": "1.30"},
            {
                "endpoint_access": ENDPOINT,
                "logging": {"api_server": True},
                "encryption_config": {"provider": KEY, "resources": ["secrets"]},
            },
            [
                (VERSION, "version 1.31"),
                (CONFIG, "endpoint access differs"),
                (CONFIG, "logging differs"),
                (ENCRYPTION, "encryption added"),
            ],
        ),
    ],
)
def test_cluster_updates(tmp_path, observed, extra, expected):
    cluster = {**described()["cluster"], **observed}
    updates = plan.cluster_updates(spec_of(tmp_path, **extra), cluster)
    assert [(u.kind, u.reason) for u in updates] == expected


def test_cluster_update_requests(tmp_path):
    spec = spec_of(tmp_path, version="1.30", endpoint_access=ENDPOINT, logging={"api_server": True})
    version, endpoint, logging = plan.cluster_updates(spec, described("1.29")["cluster"])
    assert version.request == {"name": "demo", "version": "1.30"}
    assert endpoint.request == {
        "name": "demo",
        "resourcesVpcConfig": {
            "endpointPublicAccess": True,
            "endpointPrivateAccess": True,
            "publicAccessCidrs": ["203.0.113.0/24"],
        },
    }
    assert logging.request["logging"]["clusterLogging"][0] == {"types": ["api"], "enabled": True}
    predicted = plan.predicted_after_updates(described("1.29")["cluster"], [version, endpoint, logging])
    assert predicted["version"] == "1.30"
    assert predicted["resourcesVpcConfig"]["endpointPrivateAccess"] is True
    assert predicted["resourcesVpcConfig"]["clusterSecurityGroupId"] == "sg-0eks"  # kept from what was observed
    assert predicted["logging"] == logging.request["logging"]


def test_cluster_updates_refuse_what_eks_cannot_do(tmp_path):
    with pytest.raises(SpecError, match="downgraded"):
        plan.cluster_updates(spec_of(tmp_path, version="1.30"), described("1.31")["cluster"])
    encrypted = {
        **described()["cluster"],
        "encryptionConfig": [{"resources": ["secrets"], "provider": {"keyArn": KEY}}],
    }
    with pytest.raises(ReconcileError, match="cannot be changed"):
        plan.cluster_updates(spec_of(tmp_path, encryption_config={"provider": OTHER_KEY}), encrypted)


@pytest.mark.parametrize(
    "cluster, status, reason",
    [
        ({"status": "ACTIVE"}, True, ""),
        ({"status": "UPDATING"}, True, ""),
        ({"status": "CREATING"}, False, "EKSControlPlaneCreating"),
        (None, False, "EKSControlPlaneCreating"),
        ({"status": "FAILED"}, False, "EKSControlPlaneReconciliationFailed"),
    ],
)
def test_ready_condition(cluster, status, reason):
    ready = plan.ready_condition(cluster)
    assert (ready["status"], ready["reason"]) == (status, reason)


def test_issuer_and_planned_cluster():
    assert plan.issuer_of(described()["cluster"]) == "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
    assert plan.issuer_of({"identity": {"oidc": None}}) is None and plan.issuer_of(None) is None
    assert plan.is_planned(None) and plan.is_planned({"arn": "planned:eks:demo"})
    assert not plan.is_planned(described()["cluster"])
