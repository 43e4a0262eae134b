# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Least privilege, proven: site.yml and delete.yml run with the keys of a user that holds ONLY the controllers
policies playbooks/iam.yml generates, on a moto server with IAM enforcement switched on.

How moto enforces IAM (moto 5.2, read from ``moto/core/authorization.py``, ``moto/core/responses.py`` and
``moto/iam/access_control.py``):

* It is switched on at run time: ``POST /moto-api/reset-auth`` with a count N (the same switch as
  ``INITIAL_NO_AUTH_ACTION_COUNT`` in the server's environment): after N requests every request is checked. The
  tests create the user and its policy as the unchecked administrator first, then switch it on with N=0 and back
  off (``inf``) when done, so the shared per-worker server is left as it was.
* Enforced: every service moto answers through ``BaseResponse.call_action`` - all the ones this collection uses:
  EC2, ELB and ELBv2 (``elasticloadbalancing``), Auto Scaling, EKS, IAM, STS, Secrets Manager, SSM and the
  Resource Groups Tagging API (S3 has its own check). Not enforced: ``sts:GetCallerIdentity`` (always allowed),
  Cognito's public operations; permissions AWS checks on behalf of another call (``iam:PassRole`` on
  RunInstances/CreateCluster/CreateNodegroup, ``iam:CreateServiceLinkedRole``, ``ec2:CreateTags`` for
  TagSpecifications, ``secretsmanager:TagResource`` for CreateSecret with tags) are not checked at all.
* Evaluation: the caller's identity policies, Allow/Deny on ``Action``/``NotAction``; ``Condition`` elements of
  identity policies are not evaluated (treated as met); the resource is ``*`` except for IAM role actions (the
  role's ARN) and sts:AssumeRole (the role ARN, plus the role's trust policy).
* Answer: HTTP 403, code ``AccessDenied``, "User: <arn> is not authorized to perform: <service>:<Operation>"
  (real EC2 answers ``UnauthorizedOperation`` with an encoded message; our failure message names both the call
  and, for a mutating call, the resource it was for).

tools/moto_server.py fixes what made moto stricter than AWS here (its fixes 2-4: SigV4 check of bodiless REST
requests such as EKS GETs, ``tag:`` as the Tagging API's action prefix, secret / parameter / not-yet-existing role
ARNs as the evaluated resource), so a scoped statement allows exactly what AWS would.
"""

from __future__ import annotations

import json
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from cluster_helpers import eks_spec, write_inventory

REPO = Path(__file__).resolve().parents[2]
IAM_PLAYBOOK = REPO / "playbooks/iam.yml"
SITE = REPO / "playbooks/site.yml"
DELETE = REPO / "playbooks/delete.yml"
SUFFIX = ".cluster-api-provider-aws.sigs.k8s.io"
CONTROLLER_POLICIES = (f"controllers{SUFFIX}", f"controllers-eks{SUFFIX}")
USER = "capa-controllers"


def owner(cluster):
    return f"sigs.k8s.io/cluster-api-provider-aws/cluster/{cluster}"


def tags(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


@contextmanager
def iam_enforced(aws):
    """Every request is checked against the caller's IAM policies while inside."""

    def switch(count: str) -> None:
        request = urllib.request.Request(
            f"{aws.url}/moto-api/reset-auth", data=count.encode(), method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["status"] == "ok"

    switch("0")
    try:
        yield
    finally:
        switch("inf")


def self_managed(name, load_balancer="classic"):
    return {
        "name": name,
        "region": "us-east-1",
        "network": {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "single"},
        "bastion": {"enabled": True},
        "control_plane": {"replicas": 1},
        "control_plane_load_balancer": {"type": load_balancer},
        "machine_deployments": [{"name": "md-0", "replicas": 1}],
        "machine_pools": [
            {"name": f"{name}-asg", "min_size": 1, "max_size": 1, "desired_capacity": 1},
            {
                "name": f"{name}-fleet",
                "kind": "fleet",
                "desired_capacity": 1,
                "max_size": 1,
                "mixed_instances_policy": {"overrides": [{"instance_type": "t3.large"}]},
            },
        ],
    }


def eks_cluster(name):
    return eks_spec(name, node_group={"scaling": {"min_size": 1, "max_size": 1, "desired_size": 1}})


def controllers_documents(aws):
    """The controllers policies iam.yml created (name -> default version's document)."""
    iam = aws.client("iam")
    found = {}
    for policy in iam.list_policies(Scope="Local")["Policies"]:
        if policy["PolicyName"] in CONTROLLER_POLICIES:
            version = iam.get_policy_version(PolicyArn=policy["Arn"], VersionId=policy["DefaultVersionId"])
            found[policy["PolicyName"]] = (policy["Arn"], version["PolicyVersion"]["Document"])
    assert sorted(found) == sorted(CONTROLLER_POLICIES), found
    return found


def actions_of(document):
    return {a for s in document["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}


def user_environment(aws, policy_arns):
    """A new user holding only ``policy_arns``; the environment that runs playbooks with ONLY its keys."""
    iam = aws.client("iam")
    iam.create_user(UserName=USER)
    for arn in policy_arns:
        iam.attach_user_policy(UserName=USER, PolicyArn=arn)
    key = iam.create_access_key(UserName=USER)["AccessKey"]
    attached = [p["PolicyArn"] for p in iam.list_attached_user_policies(UserName=USER)["AttachedPolicies"]]
    assert sorted(attached) == sorted(policy_arns)
    assert iam.list_user_policies(UserName=USER)["PolicyNames"] == []
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


def user_client(aws, env, service):
    return boto3.client(
        service,
        endpoint_url=aws.url,
        region_name="us-east-1",
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )


def failed_tasks(result):
    return [t for t in result.tasks if t.failed]


def without_statements(aws, documents, keep, name_prefix):
    """The controllers policies as new managed policies, with only the statements ``keep(statement)`` accepts."""
    iam = aws.client("iam")
    arns = []
    for name, (_arn, document) in documents.items():
        reduced = dict(document, Statement=[s for s in document["Statement"] if keep(s)])
        created = iam.create_policy(PolicyName=f"{name_prefix}-{name}", PolicyDocument=json.dumps(reduced))
        arns.append(created["Policy"]["Arn"])
    return arns


def without_action(document, action):
    for statement in document["Statement"]:
        if isinstance(statement["Action"], list):
            statement["Action"] = [a for a in statement["Action"] if a != action]
    return document


def is_optional(statement):
    return statement.get("Sid", "").startswith("Optional")


def warnings_of(result):
    return [w for t in result.tasks for w in t.result.get("warnings", [])]


def test_site_and_delete_need_nothing_beyond_the_controllers_policies(aws, run_playbook, tmp_path):
    """A self-managed cluster (VPC, NAT, NLB, bastion, control plane, machine deployment, ASG pool, fleet pool)
    and an EKS cluster (OIDC provider, node group, Fargate profile), built and deleted with the controllers'
    keys only - and without the policies' Optional statements (the permissions only the preflight's checks use:
    Service Quotas, DescribeClusterVersions, DescribeInstanceTypeOfferings, DescribeKeyPairs, GetInstanceProfile,
    DescribeKey, SimulatePrincipalPolicy): the clusters are built, and the run's warnings name each check it skipped
    and the permission that would enable it."""
    run_playbook(IAM_PLAYBOOK)
    documents = controllers_documents(aws)
    optional = {a for _arn, doc in documents.values() for s in doc["Statement"] if is_optional(s) for a in s["Action"]}
    assert {"servicequotas:GetServiceQuota", "eks:DescribeClusterVersions", "iam:SimulatePrincipalPolicy"} <= optional
    env = user_environment(aws, without_statements(aws, documents, lambda s: not is_optional(s), "required"))
    actions = set().union(*(actions_of(doc) for _arn, doc in documents.values())) - optional
    inventory = write_inventory(tmp_path, self_managed("lp-self", "nlb"), eks_cluster("lp-eks"))

    with iam_enforced(aws):
        # Enforcement is live: the user may not do what the policies do not name, nor may the keys-less admin.
        with pytest.raises(ClientError) as refused:
            user_client(aws, env, "iam").create_user(UserName="intruder")
        assert refused.value.response["Error"]["Code"] == "AccessDenied"
        aws.reset_requests()
        started = time.monotonic()
        built = run_playbook(SITE, inventory=inventory, env=env, expect_rc=None)
        assert built.rc == 0, [(t.host, t.name, t.result.get("msg")) for t in failed_tasks(built)] or built.describe()
        site_requests = len(aws.requests())
        skipped = [w for w in warnings_of(built) if "check was skipped" in w]
        removed = run_playbook(DELETE, inventory=inventory, env=env, expect_rc=None)
        assert removed.rc == 0, [(t.host, t.name, t.result.get("msg")) for t in failed_tasks(removed)]
        elapsed = time.monotonic() - started
        total = aws.requests()
    print(
        f"least privilege: {len(actions)} required actions in the controllers policies (optional ones left out);"
        f" site.yml {site_requests} requests, delete.yml {len(total) - site_requests}, all under enforcement,"
        f" {elapsed:.0f}s; skipped checks: {skipped}"
    )
    # Each skipped check is named once per cluster with the permission that would enable it.
    for check, permission in (
        ("instance_type_offerings", "ec2:DescribeInstanceTypeOfferings"),
        ("quotas", "servicequotas:GetServiceQuota"),
        ("permissions", "iam:SimulatePrincipalPolicy"),
        ("eks_version", "eks:DescribeClusterVersions"),
    ):
        named = [w for w in skipped if f"the {check} check was skipped: {permission}" in w and "was denied" in w]
        assert named, (check, skipped)
    assert all(w.startswith("preflight: ") for w in skipped), skipped
    # What the run asked for really was the whole set of tiers.
    operations = {f"{r['service']}:{r['operation']}" for r in total}
    for needed in (
        "ec2:CreateNatGateway",
        "elasticloadbalancing:CreateLoadBalancer",
        "elasticloadbalancing:CreateTargetGroup",
        "ec2:RunInstances",
        "autoscaling:CreateAutoScalingGroup",
        "ec2:CreateFleet",
        "eks:CreateCluster",
        "eks:CreateNodegroup",
        "eks:CreateFargateProfile",
        "iam:CreateOpenIDConnectProvider",
        "secretsmanager:CreateSecret",
        "eks:DeleteCluster",
        "ec2:DeleteVpc",
    ):
        assert needed in operations, needed
    ec2 = aws.client("ec2")
    assert [v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] == []
    assert aws.client("eks").list_clusters()["clusters"] == []


def denied_nat_run(aws, run_playbook, tmp_path, keep_optional):
    """site.yml of a small cluster under the controllers policies without ec2:CreateNatGateway (and, unless
    ``keep_optional``, without their Optional statements)."""
    run_playbook(IAM_PLAYBOOK)
    documents = {
        name: (arn, without_action(document, "ec2:CreateNatGateway"))
        for name, (arn, document) in controllers_documents(aws).items()
    }
    arns = without_statements(aws, documents, lambda s: keep_optional or not is_optional(s), "reduced")
    env = user_environment(aws, arns)
    cluster = "lp-deny"
    spec = {
        key: value
        for key, value in self_managed(cluster).items()
        if key not in ("machine_deployments", "machine_pools")
    }
    inventory = write_inventory(tmp_path, dict(spec, bastion={"enabled": False}))
    with iam_enforced(aws):
        aws.reset_requests()
        result = run_playbook(SITE, inventory=inventory, env=env, expect_rc=None)
        requests = aws.requests()
    return cluster, inventory, result, requests


def test_a_missing_permission_fails_in_the_preflight_before_any_change(aws, run_playbook, tmp_path):
    """The controllers policies without ec2:CreateNatGateway, their optional permission check kept: the preflight asks
    IAM's policy simulation and fails naming the permission and the caller, before the first mutating request."""
    cluster, _inventory, result, requests = denied_nat_run(aws, run_playbook, tmp_path, keep_optional=True)
    assert result.rc != 0
    [failed] = failed_tasks(result)
    message = failed.result["msg"]
    print(f"denied run: {len(requests)} requests; failed task {failed.name!r}: {message}")
    assert "Preflight" in failed.name
    assert "nothing was changed" in message and "permissions:" in message
    assert f"arn:aws:iam::123456789012:user/{USER} may not call ec2:CreateNatGateway" in message
    assert [r for r in requests if not r["operation"].startswith(("Describe", "List", "Get", "Simulate"))] == []
    assert "SimulatePrincipalPolicy" in {r["operation"] for r in requests}
    assert [v for v in aws.client("ec2").describe_vpcs()["Vpcs"] if not v["IsDefault"]] == []


def test_one_missing_action_fails_clearly_and_leaves_only_owned_resources(aws, run_playbook, tmp_path):
    """The same policies without the optional permission check as well: the preflight warns that it could not check
    the permissions, and the run stops at the NAT gateway with AWS's access-denied error naming the call and the
    resource; all created so far carries the cluster's owner tag, and delete.yml (as administrator) removes it."""
    cluster, inventory, result, requests = denied_nat_run(aws, run_playbook, tmp_path, keep_optional=False)
    assert result.rc != 0
    [failed] = failed_tasks(result)
    message = failed.result["msg"]
    print(f"denied run: {len(requests)} requests; failed task {failed.name!r}: {message}")
    assert any("the permissions check was skipped: iam:SimulatePrincipalPolicy" in w for w in warnings_of(result))
    assert "ec2:CreateNatGateway" in message
    assert "AccessDenied" in message or "UnauthorizedOperation" in message
    assert f"{cluster}-nat" in message  # the resource it was creating (the NAT gateway's Name)
    assert "is not authorized to perform: ec2:CreateNatGateway" in message
    assert requests[-1]["operation"] == "CreateNatGateway"

    # Everything created so far is tagged for the cluster; nothing is left untracked.
    ec2 = aws.client("ec2")
    key = owner(cluster)
    vpcs = [v for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]]
    assert len(vpcs) == 1 and tags(vpcs[0]).get(key) == "owned"
    vpc_id = vpcs[0]["VpcId"]
    in_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]
    created = {
        "subnet": ec2.describe_subnets(Filters=in_vpc)["Subnets"],
        "route-table": [
            t
            for t in ec2.describe_route_tables(Filters=in_vpc)["RouteTables"]
            if not any(a.get("Main") for a in t.get("Associations", []))  # the VPC's own main table (AWS made it)
        ],
        "internet-gateway": ec2.describe_internet_gateways()["InternetGateways"],
        "elastic-ip": ec2.describe_addresses()["Addresses"],
        "security-group": [
            g for g in ec2.describe_security_groups(Filters=in_vpc)["SecurityGroups"] if g["GroupName"] != "default"
        ],
        "instance": [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]],
        "nat-gateway": ec2.describe_nat_gateways()["NatGateways"],
    }
    counts = {kind: len(items) for kind, items in created.items()}
    print(f"left by the denied run: {counts}")
    assert counts["subnet"] >= 2 and counts["internet-gateway"] == 1 and counts["nat-gateway"] == 0
    untracked = {kind: [r for r in items if tags(r).get(key) != "owned"] for kind, items in created.items()}
    assert {kind: items for kind, items in untracked.items() if items} == {}

    admin = run_playbook(DELETE, inventory=inventory)
    assert admin.rc == 0
    assert [v for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] == []
    assert ec2.describe_addresses()["Addresses"] == []
    assert ec2.describe_internet_gateways()["InternetGateways"] == []
