"""capa_eks_cluster applies ``kube-system/aws-auth`` itself (CONFIG_MAP mode), as CAPA does, on the simulator's EKS API
server: the token is the presigned STS GetCallerIdentity URL of the run's credentials (checked by the simulator
against moto's STS), the server certificate is checked against the CA EKS reports, mappings someone else put there
(EKS maps its managed node groups' roles itself) stay, and a second run writes nothing.
"""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client

MODULE = "clusterapi.aws.capa_eks_cluster"
CLUSTER = "eksauth"
NODE_ROLE = "arn:aws:iam::123456789012:role/eksauth-nodes"
ADMIN_ROLE = "arn:aws:iam::123456789012:role/platform-admins"
MANAGED_ROLE = "arn:aws:iam::123456789012:role/eks-managed-node-group"


def aws_auth(sim) -> dict[str, Any]:
    found = client.CoreV1Api(sim.api_client()).read_namespaced_config_map("aws-auth", "kube-system")
    return {key: yaml.safe_load(value) for key, value in (found.data or {}).items()}


def test_aws_auth_is_applied_merged_and_left_alone_when_equal(aws, kubesim, run_module, build_network, tmp_path):
    sim = kubesim.register(CLUSTER, kind="eks")
    network = build_network(CLUSTER, kind="eks")
    params = {
        "cluster_name": CLUSTER,
        "version": "1.31",
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["node-eks-additional"]["id"]],
        "node_role_arns": [NODE_ROLE],
        "iam_authenticator": {"map_roles": [{"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["ops"]}]},
        "kubernetes_api": {"server": f"https://127.0.0.1:{sim.port}", "mode": "required"},
        "output_dir": str(tmp_path / "out"),
        "wait_timeout": 120,
    }
    created = run_module(MODULE, params)
    assert not created.get("failed"), created.get("msg")
    assert ("k8s:Apply", "ConfigMap kube-system/aws-auth") in [(p["call"], p["resource"]) for p in created["plan"]]
    assert created["conditions"]["IAMAuthenticatorConfigured"]["status"] is True
    roles = {m["rolearn"]: m for m in aws_auth(sim)["mapRoles"]}
    assert roles[NODE_ROLE]["groups"] == ["system:bootstrappers", "system:nodes"]
    assert roles[ADMIN_ROLE] == {"rolearn": ADMIN_ROLE, "username": "admin", "groups": ["ops"]}

    again = run_module(MODULE, params)
    assert not again["changed"] and again["plan"] == [], again["plan"]
    assert again["api_calls"]["k8s:GetConfigMap"] == 1

    # EKS (or an operator) maps another role; a mapping the spec adds later is merged in, theirs stays.
    current = client.CoreV1Api(sim.api_client()).read_namespaced_config_map("aws-auth", "kube-system")
    theirs = yaml.safe_load(current.data["mapRoles"]) + [
        {"rolearn": MANAGED_ROLE, "username": "system:node:{{EC2PrivateDNSName}}", "groups": ["system:nodes"]}
    ]
    current.data["mapRoles"] = yaml.safe_dump(theirs)
    client.CoreV1Api(sim.api_client()).replace_namespaced_config_map("aws-auth", "kube-system", current)
    more = {
        **params,
        "iam_authenticator": {
            **params["iam_authenticator"],
            "map_users": [{"userarn": "arn:aws:iam::123456789012:user/dev", "groups": ["dev"]}],
        },
    }
    merged = run_module(MODULE, more)
    assert not merged.get("failed") and merged["changed"], merged.get("msg")
    now = aws_auth(sim)
    assert {m["rolearn"] for m in now["mapRoles"]} == {NODE_ROLE, ADMIN_ROLE, MANAGED_ROLE}
    assert now["mapUsers"] == [{"userarn": "arn:aws:iam::123456789012:user/dev", "groups": ["dev"]}]
