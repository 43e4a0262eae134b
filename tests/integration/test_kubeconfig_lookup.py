# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_kubeconfig lookup from a job: ``kubernetes.core.k8s_info`` reads a cluster with the kubeconfig the lookup
builds in memory, through the simulator's CONNECT proxy at the cluster's real endpoint name (as from AWX).

* EKS: the token is signed in the job (no aws CLI); the simulator's API server checks it as aws-iam-authenticator
  does - against moto's STS - and maps its IAM identity: the cluster creator (the environment's keys), an IAM user
  given as ``access_key``/``secret_key`` options, and a role assumed through ``identity`` with an external id (mapped
  with its session name, which names the cluster).
* Self-managed under ``identity``: ``capa_kubeadm`` keeps the cluster PKI in account A, through the role the cluster is
  built with; the lookup reaches it only by assuming that role (without it: no PKI in the caller's own account). The
  control-plane node boots from that PKI; it runs in the caller's account because the simulator watches that
  account's instances only (what the lookup reads lives in account A, which is what the test is about).

The playbook's output is scanned: no token, key or client certificate in it (kubernetes.core hides its
``kubeconfig`` option; the lookup's errors name no secret).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import kubesim_helpers as h
from kubernetes import client
from test_identity import ACCOUNT_A, create_role, session_in, trust

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as k

LOOKUP = "clusterapi.aws.capa_kubeconfig"
EKS_NAME = "lk-eks"
SELF_MANAGED = "lk-self"
ENDPOINT = f"{SELF_MANAGED}-apiserver-1234567890.us-east-1.elb.amazonaws.com"
HOME = "123456789012"
# What a leaked credential would look like in the output: an EKS token, a PEM block or its base64 (as a kubeconfig
# carries certificates and keys). kubernetes.core shows its kubeconfig option's keys with every value masked.
LEAKS = ("k8s-aws-v1.", "PRIVATE KEY", "BEGIN CERTIFICATE", "LS0tLS1CRUdJTi")


def k8s_info_task(name: str, kind: str, lookup_args: str, proxy: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kubernetes.core.k8s_info": {
            "kind": kind,
            "kubeconfig": f"{{{{ lookup('{LOOKUP}', {lookup_args}) }}}}",
            "proxy": proxy,
        },
        **extra,
    }


def write_play(tmp_path: Path, name: str, tasks: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{name}.yml"
    path.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    return path


def names(task_result: dict[str, Any]) -> set[str]:
    return {r["metadata"]["name"] for r in task_result["resources"]}


def assert_no_secret(output: str, *secrets: str) -> None:
    for leak in (*LEAKS, *secrets):
        assert leak not in output, f"{leak[:12]}... shows in the playbook's output"


def api_users(kubesim: Any, cluster: str, since: float) -> set[str]:
    return {
        e["user"]
        for e in kubesim.journal(since=since, cluster=cluster, source="apiserver", moto=False)
        if e.get("event") == "request" and e.get("status") == 200 and e.get("user")
    }


def test_an_eks_cluster_with_a_token_signed_in_the_job(aws, kubesim, run_playbook, tmp_path):
    iam = aws.client("iam")
    service = json.dumps(
        {"Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    )
    cluster_role = iam.create_role(RoleName="lk-eks-cluster", AssumeRolePolicyDocument=service)["Role"]["Arn"]
    sim = kubesim.register(EKS_NAME, kind="eks")
    aws.client("eks").create_cluster(
        name=EKS_NAME, roleArn=cluster_role, version="1.31", resourcesVpcConfig={"subnetIds": [h.subnet(aws)]}
    )
    sim.wait_initialized()
    # Who else may read the cluster (EKS makes only its creator admin): an IAM user with keys of its own and a role
    # the job assumes with an external id, mapped with its session name.
    iam.create_user(UserName="lk-dev")
    key = iam.create_access_key(UserName="lk-dev")["AccessKey"]
    ops_role = iam.create_role(RoleName="lk-ops", AssumeRolePolicyDocument=json.dumps(trust("ext-ops")))["Role"]["Arn"]
    mappings = {
        "mapUsers": [{"userarn": key_arn(key), "username": "dev", "groups": ["system:masters"]}],
        "mapRoles": [{"rolearn": ops_role, "username": "ops:{{SessionName}}", "groups": ["system:masters"]}],
    }
    client.CoreV1Api(sim.api_client()).create_namespaced_config_map(
        "kube-system",
        {"metadata": {"name": "aws-auth"}, "data": {k: json.dumps(v) for k, v in mappings.items()}},
    )
    proxy = kubesim.proxy
    identity = {"role_arn": ops_role, "external_id": "ext-ops"}
    tasks = [
        k8s_info_task("as the creator", "Namespace", f"'{EKS_NAME}'", proxy),
        k8s_info_task(
            "as an IAM user",
            "Namespace",
            f"'{EKS_NAME}', kind='eks', access_key='{key['AccessKeyId']}', secret_key='{key['SecretAccessKey']}'",
            proxy,
        ),
        k8s_info_task("as a role", "Namespace", f"'{EKS_NAME}', identity={identity!r}", proxy),
    ]
    since = time.time()
    creator = aws.client("sts").get_caller_identity()["Arn"]  # the environment's keys: they made the cluster
    aws.reset_requests()
    result = run_playbook(write_play(tmp_path, "eks", tasks))

    for task in ("as the creator", "as an IAM user", "as a role"):
        assert {"default", "kube-system"} <= names(result.task(task).result), task
    # Each read was made as the identity the kubeconfig was signed by, none as another.
    assert api_users(kubesim, EKS_NAME, since) == {creator, "dev", f"ops:capa-{EKS_NAME}"}
    # The lookup asked EKS for the cluster (auto, and kind=eks) and STS for the role; it changed nothing.
    operations = [r["operation"] for r in aws.requests()]
    assert operations.count("DescribeCluster") == 3 and operations.count("AssumeRole") == 1, operations
    assert [r for r in aws.mutating_requests() if r["operation"] != "AssumeRole"] == []
    assert_no_secret(result.stdout + result.stderr, key["SecretAccessKey"])


def key_arn(key: dict[str, Any]) -> str:
    return f"arn:aws:iam::{HOME}:user/{key['UserName']}"


def test_a_self_managed_cluster_built_under_identity(aws, kubesim, run_module, run_playbook, tmp_path):
    role = create_role(aws, ACCOUNT_A, "capa-team-a", "ext-a")
    identity = {"role_arn": role, "external_id": "ext-a"}
    made = run_module(
        "clusterapi.aws.capa_kubeadm",
        {
            "cluster_name": SELF_MANAGED,
            "kubernetes_version": h.VERSION,
            "endpoint": {"host": ENDPOINT},
            "output_dir": "",
            "identity": identity,
        },
    )
    assert made["changed"] and not made.get("failed"), made.get("msg")
    secret = f"clusterapi.aws/{SELF_MANAGED}/pki"
    in_a = session_in(aws, role, "ext-a").client("secretsmanager", endpoint_url=aws.url)
    pki = k.ClusterPki.from_secret_string(in_a.get_secret_value(SecretId=secret)["SecretString"], secret)
    assert aws.client("secretsmanager").list_secrets()["SecretList"] == []  # nothing in the caller's own account

    # The control plane boots from that PKI (kubeadm init with the cluster CA, the endpoint as controlPlaneEndpoint).
    sim = kubesim.register(SELF_MANAGED, endpoint=f"{ENDPOINT}:6443")
    booted = h.Pki(pki.cluster_ca_cert, pki.cluster_ca_key, pki.etcd_ca_cert, pki.etcd_ca_key, h.new_token())
    document = h.cloud_config("init", booted, SELF_MANAGED, f"{ENDPOINT}:6443")
    h.launch(aws, SELF_MANAGED, f"{SELF_MANAGED}-cp-0", document, h.subnet(aws))
    sim.wait_initialized()

    proxy = kubesim.proxy
    tasks = [
        k8s_info_task("nodes", "Node", f"'{SELF_MANAGED}', host='{ENDPOINT}', identity={identity!r}", proxy),
        k8s_info_task(
            "without the identity", "Node", f"'{SELF_MANAGED}', host='{ENDPOINT}'", proxy, ignore_errors=True
        ),
    ]
    since = time.time()
    aws.reset_requests()
    result = run_playbook(write_play(tmp_path, "self-managed", tasks))

    [node] = result.task("nodes").result["resources"]
    assert node["metadata"]["name"].startswith("ip-")
    assert api_users(kubesim, SELF_MANAGED, since) == {"kubernetes-admin"}
    refused = result.task("without the identity").result
    assert refused["failed"] and f"{secret} not found" in refused["msg"], refused["msg"]
    # One AssumeRole, then the PKI read in account A; the second task read the caller's own account and found none.
    assert [r["operation"] for r in aws.requests()] == ["AssumeRole", "GetSecretValue", "GetSecretValue"]
    assert_no_secret(result.stdout + result.stderr)
