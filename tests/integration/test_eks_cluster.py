# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_eks_cluster through ansible-playbook against the moto server, checked with boto3.

The network comes from capa_vpc / capa_subnet / capa_security_group (kind eks). moto makes a cluster ACTIVE at
once and implements CreateCluster, DescribeCluster, UpdateClusterConfig (endpoint access and logging),
TagResource, DeleteCluster, ListNodegroups, ListFargateProfiles and the IAM role / OIDC provider calls; the test
endpoint adds UpdateClusterVersion and DescribeUpdate (tools/moto_server.py fix 18). What moto lacks (addons,
AssociateEncryptionConfig, access entries) is tested with botocore's Stubber in tests/unit/plugins/module_utils/eks/
(test_control_plane.py, test_addons.py, test_access.py).
"""

from __future__ import annotations

import base64
import os
import stat
import urllib.parse
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

CLUSTER = "eks-it"
MODULE = "clusterapi.aws.capa_eks_cluster"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
K8S_OWNER = f"kubernetes.io/cluster/{CLUSTER}"
ROLE = f"{CLUSTER}-iam-service-role"
CLUSTER_POLICY = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"
THUMBPRINT = "9e99a48a9960b14926bb7f3b02e22da2b0ab7280"
NODE_ROLE = "arn:aws:iam::123456789012:role/eks-it-nodes"


@pytest.fixture
def network(build_network) -> dict[str, Any]:
    made = build_network(CLUSTER, kind="eks")
    return {"subnets": made["subnets"], "sg": made["groups"]["node-eks-additional"]["id"]}


def spec(network: dict[str, Any], tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {
        "cluster_name": CLUSTER,
        "version": "1.31",
        "subnets": network["subnets"],
        "security_group_ids": [network["sg"]],
        "associate_oidc_provider": True,
        "oidc_thumbprint": THUMBPRINT,
        "node_role_arns": [NODE_ROLE],
        "output_dir": str(tmp_path / "out"),
        "wait_timeout": 60,
        **extra,
    }


def calls(result: dict[str, Any]) -> list[str]:
    return [p["call"] for p in result["plan"]]


def oidc_providers(aws) -> list[dict[str, Any]]:
    iam = aws.client("iam")
    arns = [p["Arn"] for p in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]]
    return [{"Arn": a, **iam.get_open_id_connect_provider(OpenIDConnectProviderArn=a)} for a in arns]


def test_create_noop_update_and_delete(aws, run_module, network, tmp_path):
    args = spec(network, tmp_path)
    created = run_module(MODULE, args)
    assert not created.get("failed"), created.get("msg")
    assert created["changed"]
    assert calls(created)[:3] == ["iam:CreateRole", "iam:AttachRolePolicy", "eks:CreateCluster"]
    cluster = created["cluster"]
    assert cluster["status"] == "ACTIVE" and cluster["version"] == "1.31"
    assert created["conditions"]["EKSControlPlaneReady"]["status"] is True

    # The cluster, independently read: subnets, the node-eks-additional group, tags, role.
    described = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    assert sorted(described["resourcesVpcConfig"]["subnetIds"]) == sorted(s["id"] for s in network["subnets"])
    assert described["resourcesVpcConfig"]["securityGroupIds"] == [network["sg"]]
    assert described["tags"][OWNER] == "owned" and described["tags"][K8S_OWNER] == "owned"
    role = aws.client("iam").get_role(RoleName=ROLE)["Role"]
    assert described["roleArn"] == role["Arn"]
    role_tags = {t["Key"]: t["Value"] for t in role["Tags"]}
    assert role_tags[K8S_OWNER] == "owned" and role_tags[OWNER] == "owned"
    attached = aws.client("iam").list_attached_role_policies(RoleName=ROLE)["AttachedPolicies"]
    assert [p["PolicyArn"] for p in attached] == [CLUSTER_POLICY]

    # OIDC provider for the issuer, with the client id and the given thumbprint.
    providers = oidc_providers(aws)
    assert len(providers) == 1
    provider = providers[0]
    assert provider["ClientIDList"] == ["sts.amazonaws.com"]
    assert provider["ThumbprintList"] == [THUMBPRINT]
    assert cluster["oidc"]["provider_arn"] == provider["Arn"]
    template = cluster["oidc"]["trust_policy_template"]
    assert template["Statement"][0]["Principal"]["Federated"] == provider["Arn"]

    # Kubeconfigs: 0600, token decodes to a presigned sts.<region> GetCallerIdentity URL for the cluster.
    paths = created["kubeconfig"]
    for path in (paths["path"], paths["user_kubeconfig"], created["aws_auth"]):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    token_config = yaml.safe_load(Path(paths["path"]).read_text())
    token = token_config["users"][0]["user"]["token"]
    assert token not in str(created)
    assert token.startswith("k8s-aws-v1.")
    encoded = token[len("k8s-aws-v1.") :]
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    parts = urllib.parse.urlparse(url)
    query = urllib.parse.parse_qs(parts.query)
    assert parts.scheme == "https" and parts.netloc == "sts.us-east-1.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"] and query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert token_config["current-context"] == CLUSTER
    user_config = yaml.safe_load(Path(paths["user_kubeconfig"]).read_text())
    assert user_config["users"][0]["user"]["exec"]["args"] == [
        "eks",
        "get-token",
        "--cluster-name",
        CLUSTER,
        "--region",
        "us-east-1",
    ]
    load_with_kubernetes_client(paths["path"], paths["user_kubeconfig"], described["endpoint"])
    aws_auth = yaml.safe_load(Path(created["aws_auth"]).read_text())
    assert yaml.safe_load(aws_auth["data"]["mapRoles"])[0]["rolearn"] == NODE_ROLE

    # No-op: nothing planned, no mutating request, the observe budget.
    aws.reset_requests()
    again = run_module(MODULE, args)
    assert not again["changed"], again["plan"]
    assert aws.mutating_requests() == []
    assert again["api_calls"] == {
        "eks:DescribeCluster": 1,
        "iam:GetRole": 1,
        "iam:ListAttachedRolePolicies": 1,
        "iam:ListOpenIDConnectProviders": 1,
        "iam:GetOpenIDConnectProvider": 1,
        # aws-auth is read through the EKS API (moto's endpoint does not serve one: the run warns, applies nothing;
        # tests/integration/test_eks_aws_auth.py applies it on the simulator).
        "k8s:GetConfigMap": 1,
    }
    # moto has no addons API: an empty addon list is only asked when addons are in the spec.

    # Endpoint access and logging through UpdateClusterConfig, one update at a time.
    changed_args = {
        **args,
        "endpoint_access": {"public": True, "private": True, "public_cidrs": ["203.0.113.0/24"]},
        "logging": {"api_server": True, "audit": True},
    }
    check = run_module(MODULE, changed_args, check=True)
    assert calls(check) == ["eks:UpdateClusterConfig", "eks:UpdateClusterConfig"]
    updated = run_module(MODULE, changed_args)
    assert calls(updated) == ["eks:UpdateClusterConfig", "eks:UpdateClusterConfig"], updated
    described = aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]
    assert described["resourcesVpcConfig"]["endpointPrivateAccess"] is True
    assert described["resourcesVpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]
    enabled = [e for e in described["logging"]["clusterLogging"] if e["enabled"]]
    assert enabled == [{"types": ["api", "audit"], "enabled": True}]
    assert updated["cluster"]["logging"]["audit"] is True
    assert not run_module(MODULE, changed_args)["changed"]

    # Kubernetes 1.31 -> 1.33, one minor at a time as EKS allows: two UpdateClusterVersion, each awaited by its
    # update id (moto fix 18 in tools/moto_server.py answers them as EKS does), then nothing left to do.
    upgrade_args = {**changed_args, "version": "1.33"}
    planned = run_module(MODULE, upgrade_args, check=True)
    assert calls(planned) == ["eks:UpdateClusterVersion", "eks:UpdateClusterVersion"], planned["plan"]
    assert [p["reason"] for p in planned["plan"]] == ["version 1.32", "version 1.33"]
    assert aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.31"
    upgraded = run_module(MODULE, upgrade_args)
    assert calls(upgraded) == ["eks:UpdateClusterVersion", "eks:UpdateClusterVersion"], upgraded
    assert upgraded["api_calls"]["eks:DescribeUpdate"] == 2
    assert upgraded["cluster"]["version"] == "1.33"
    updates = aws.client("eks").list_updates(name=CLUSTER)["updateIds"]
    statuses = [aws.client("eks").describe_update(name=CLUSTER, updateId=u)["update"]["status"] for u in updates]
    assert statuses == ["Successful", "Successful"]
    assert aws.client("eks").describe_cluster(name=CLUSTER)["cluster"]["version"] == "1.33"
    assert not run_module(MODULE, upgrade_args)["changed"]

    # A downgrade is refused before any request.
    refused = run_module(MODULE, {**args, "version": "1.30"})
    assert refused["failed"] and "cannot be downgraded" in refused["msg"]
    assert "eks:UpdateClusterVersion" not in refused.get("api_calls", {})

    # Absent: refused while a node group remains (named), then cluster, role, OIDC provider and files gone.
    aws.client("eks").create_nodegroup(
        clusterName=CLUSTER,
        nodegroupName="ng-left",
        nodeRole=NODE_ROLE,
        subnets=[s["id"] for s in network["subnets"]],
    )
    blocked = run_module(MODULE, {**args, "state": "absent"})
    assert blocked["failed"] and "ng-left" in blocked["msg"]
    aws.client("eks").delete_nodegroup(clusterName=CLUSTER, nodegroupName="ng-left")
    # wait=false (as the cluster role starts the deletion, then releases the egress meanwhile): the deletion asked,
    # the role and OIDC provider kept - what the caller asked for, so no warning - and the condition says so.
    started = run_module(MODULE, {**args, "state": "absent", "wait": False})
    assert started["changed"] and "eks:DeleteCluster" in calls(started), started
    assert "iam:DeleteRole" not in calls(started) and "iam:DeleteOpenIDConnectProvider" not in calls(started)
    assert "warnings" not in started, started.get("warnings")
    assert started["conditions"]["EKSControlPlaneReady"]["reason"] == "Deleting"
    assert aws.client("iam").get_role(RoleName=ROLE)["Role"]["RoleName"] == ROLE
    # The run that waits (moto deleted the cluster at once) deletes what the cluster's deletion left.
    gone = run_module(MODULE, {**args, "state": "absent"})
    assert gone["changed"], gone
    assert "eks:DeleteCluster" not in calls(gone) and "iam:DeleteRole" in calls(gone)
    assert "iam:DeleteOpenIDConnectProvider" in calls(gone)
    assert aws.client("eks").list_clusters()["clusters"] == []
    assert oidc_providers(aws) == []
    with pytest.raises(aws.client("iam").exceptions.NoSuchEntityException):
        aws.client("iam").get_role(RoleName=ROLE)
    assert not Path(paths["path"]).exists() and not Path(paths["user_kubeconfig"]).exists()
    assert not run_module(MODULE, {**args, "state": "absent"})["changed"]


def load_with_kubernetes_client(token_path: str, user_path: str, endpoint: str) -> None:
    """Both files load with the Kubernetes Python client; the exec plugin is mocked, never run."""
    from kubernetes import client, config

    config.load_kube_config(config_file=token_path)
    configuration = client.Configuration.get_default_copy()
    assert configuration.host.rstrip("/") == endpoint.rstrip("/")
    token = bearer_token(configuration)
    assert token.startswith("Bearer k8s-aws-v1."), token[:20]

    with mock.patch("kubernetes.config.kube_config.ExecProvider") as provider:
        provider.return_value.run.return_value = {"token": "from-exec"}
        config.load_kube_config(config_file=user_path)
    command = provider.call_args.args[0]
    assert command["command"] == "aws" and "get-token" in command["args"]
    assert bearer_token(client.Configuration.get_default_copy()) == "Bearer from-exec"


def bearer_token(configuration: Any) -> str:
    """The token a loaded kubeconfig gave the client: kubernetes < 34 keeps it under "authorization" (its prefix
    apart), 34+ under "BearerToken" (the token with its "Bearer " prefix)."""
    return configuration.get_api_key_with_prefix("authorization") or configuration.api_key.get("BearerToken", "")


def test_check_mode_from_empty_plans_everything_and_changes_nothing(aws, run_module, network, tmp_path):
    args = spec(network, tmp_path, addons=[{"name": "vpc-cni"}])
    aws.reset_requests()
    result = run_module(MODULE, args, check=True)
    assert not result.get("failed"), result
    assert result["changed"]
    assert calls(result) == [
        "iam:CreateRole",
        "iam:AttachRolePolicy",
        "eks:CreateCluster",
        "eks:CreateAddon",
        "iam:CreateOpenIDConnectProvider",
        "file:WriteFile",
        "k8s:Apply",  # aws-auth, applied once the cluster is active
        "file:WriteFile",
    ]
    assert aws.mutating_requests() == []
    assert result["cluster"]["arn"] == f"planned:eks:{CLUSTER}"
    assert aws.client("eks").list_clusters()["clusters"] == []
    assert not (tmp_path / "out").exists()


def test_bad_input_fails_before_any_request(aws, run_module, network, tmp_path):
    one_zone = [s for s in network["subnets"] if s["availability_zone"] == network["subnets"][0]["availability_zone"]]
    cases = [
        ({"version": "1.31.2"}, "version"),
        ({"subnets": one_zone}, "subnets"),
        ({"encryption_config": {"provider": "my-key"}}, "encryption_config.provider"),
        ({"addons": [{"name": "coredns", "configuration": "{not json"}]}, "addons[0].configuration"),
        ({"oidc_thumbprint": "abc"}, "oidc_thumbprint"),
    ]
    for extra, field in cases:
        aws.reset_requests()
        result = run_module(MODULE, spec(network, tmp_path, **extra))
        assert result["failed"] and result["field"] == field, (extra, result)
        assert aws.requests() == []
