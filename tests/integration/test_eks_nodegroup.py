"""capa_eks_nodegroup and capa_eks_fargate_profile against the moto server.

The EKS cluster is made with boto3 (a role and ``eks.create_cluster``) in subnets from capa_vpc/capa_subnet, so
these tests do not depend on capa_eks_cluster. Steps run as tasks of a few playbooks (one ansible-playbook start
for several module runs keeps the file fast); "no mutating request" is read from each run's ``api_calls`` (every
request the module made), and the state from boto3 between playbooks.

``UpdateNodegroupVersion`` (moto lacks it) and ``TagResource`` on node group / profile ARNs (moto answers
ResourceNotFound), the waits on CREATING/UPDATING/DELETING and failure states are exercised with botocore's
Stubber in tests/unit/plugins/module_utils/eks/test_eks_nodegroup.py and test_eks_fargate_profile.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CLUSTER = "ng-it"
EKS = "ng-it-eks"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
NODEGROUP = "clusterapi.aws.capa_eks_nodegroup"
FARGATE = "clusterapi.aws.capa_eks_fargate_profile"
WORKER_POLICIES = {
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
}
READS = ("Describe", "List", "Get", "Simulate")


@pytest.fixture
def steps(run_playbook, tmp_path: Path):
    """``steps([(name, module, args, options)...])`` runs them as one playbook; returns {name: result}.

    ``options`` may hold ``check_mode``, ``diff`` and ``ignore_errors`` (task keywords)."""
    counter = iter(range(100))

    def run(tasks: list[tuple[str, str, dict[str, Any], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        play = [
            {
                "name": "steps",
                "hosts": "localhost",
                "gather_facts": False,
                "tasks": [{"name": name, module: args, **options} for name, module, args, options in tasks],
            }
        ]
        path = tmp_path / f"steps-{next(counter)}.yml"
        path.write_text(json.dumps(play))
        result = run_playbook(path, expect_rc=None)
        results = {t.name: t.result for t in result.tasks}
        missing = [task[0] for task in tasks if task[0] not in results]
        assert not missing, f"tasks without a result: {missing}\n{result.describe()}"
        return results

    return run


@pytest.fixture
def eks_cluster(aws, steps):
    """A VPC with 2 public + 2 private subnets (no NAT) and an ACTIVE EKS cluster 1.31 in them."""
    subnet_args = {
        "cluster_name": CLUSTER,
        "vpc_id": "{{ network_vpc.vpc.id }}",
        "vpc_cidr_block": "{{ network_vpc.vpc.cidr_block }}",
        "internet_gateway_id": "{{ network_vpc.vpc.internet_gateway_id }}",
        "availability_zone_usage_limit": 2,
        "nat_gateways": "none",
        "wait_timeout": 30,
    }
    done = steps(
        [
            ("vpc", "clusterapi.aws.capa_vpc", {"cluster_name": CLUSTER}, {"register": "network_vpc"}),
            ("subnets", "clusterapi.aws.capa_subnet", subnet_args, {}),
        ]
    )
    subnets = done["subnets"]["subnets"]
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    role = aws.client("iam").create_role(RoleName="eks-cp", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    aws.client("eks").create_cluster(
        name=EKS, roleArn=role["Arn"], version="1.31", resourcesVpcConfig={"subnetIds": [s["id"] for s in subnets]}
    )
    return {"subnets": subnets, "private": sorted(s["id"] for s in subnets if not s["is_public"]), "role": role["Arn"]}


def args(**extra: Any) -> dict[str, Any]:
    return {"cluster_name": CLUSTER, "eks_cluster_name": EKS, "wait_timeout": 60, **extra}


def calls(result: dict[str, Any]) -> list[str]:
    assert not result.get("failed"), result
    return [p["call"] for p in result["plan"]]


def mutating(result: dict[str, Any]) -> list[str]:
    """Requests the run made that change something (its own count of every request)."""
    return [k for k in result["api_calls"] if not k.split(":", 1)[1].startswith(READS)]


def owned_roles(iam) -> list[str]:
    names = [r["RoleName"] for r in iam.list_roles()["Roles"]]
    return [n for n in names if OWNER in {t["Key"] for t in iam.list_role_tags(RoleName=n)["Tags"]}]


def nodegroups(eks) -> list[dict[str, Any]]:
    names = eks.list_nodegroups(clusterName=EKS)["nodegroups"]
    return [eks.describe_nodegroup(clusterName=EKS, nodegroupName=n)["nodegroup"] for n in names]


def test_nodegroup_life(aws, steps, eks_cluster):
    eks, iam = aws.client("eks"), aws.client("iam")
    role_name = f"{CLUSTER}-md-0-nodegroup-iam-service-role"
    base = args(
        name="md-0",
        subnets=eks_cluster["subnets"],
        labels={"team": "a", "tier": "web"},
        taints=[{"key": "dedicated", "value": "web", "effect": "NO_SCHEDULE"}],
    )
    update = {
        **base,
        "scaling": {"min_size": 2, "max_size": 5, "desired_size": 4},
        "labels": {"team": "b", "zone": "x"},
        "taints": [{"key": "dedicated", "value": "web", "effect": "NO_EXECUTE"}],
    }
    bigger = {**update, "instance_types": ["m5.large"]}
    auto = args(name="md-auto", externally_managed_replicas=True, scaling={"min_size": 1, "max_size": 6})
    aws.reset_requests()
    r = steps(
        [
            ("bad", NODEGROUP, args(name="md-0", scaling={"min_size": 3, "max_size": 2}), {"ignore_errors": True}),
            ("plan", NODEGROUP, base, {"check_mode": True}),
            ("create", NODEGROUP, base, {}),
            ("again", NODEGROUP, base, {}),
            ("update", NODEGROUP, update, {"diff": True}),
            ("plan replace", NODEGROUP, bigger, {"check_mode": True}),
            ("replace", NODEGROUP, bigger, {}),
            ("after replace", NODEGROUP, bigger, {}),
            ("auto", NODEGROUP, auto, {}),
        ]
    )
    assert r["bad"]["failed"] and r["bad"]["field"] == "scaling" and r["bad"]["api_calls"] == {}

    assert r["plan"]["changed"] is True
    assert calls(r["plan"]) == ["iam:CreateRole"] + ["iam:AttachRolePolicy"] * 3 + ["eks:CreateNodegroup"]
    assert mutating(r["plan"]) == []

    created = r["create"]
    assert created["changed"] is True and created["nodegroup"]["name"] == "md-0"
    assert created["nodegroup"]["version"] == "1.31"  # the cluster's
    assert sorted(created["nodegroup"]["subnets"]) == eks_cluster["private"]
    assert created["nodegroup"]["instance_types"] == ["t3.large"]
    assert created["nodegroup"]["ami_type"] == "AL2023_x86_64_STANDARD"
    assert created["nodegroup"]["scaling"] == {"min_size": 1, "max_size": 3, "desired_size": 2}
    assert created["nodegroup"]["node_role_arn"].endswith(f"/{role_name}")
    assert created["conditions"]["EKSNodegroupReady"]["status"] is True
    assert created["conditions"]["IAMNodegroupRolesReady"]["status"] is True

    assert r["again"]["changed"] is False and mutating(r["again"]) == [], r["again"]["plan"]
    assert r["again"]["api_calls"]["eks:DescribeNodegroup"] == 1

    # In place: scaling, one label changed + one removed + one added, a taint's effect changed.
    assert calls(r["update"]) == ["eks:UpdateNodegroupConfig"]
    assert r["update"]["nodegroup"]["labels"] == {"team": "b", "zone": "x"}
    assert r["update"]["nodegroup"]["taints"] == [{"key": "dedicated", "value": "web", "effect": "NO_EXECUTE"}]
    assert r["update"]["nodegroup"]["scaling"] == {"min_size": 2, "max_size": 5, "desired_size": 4}
    assert r["update"]["diff"]["before"]["nodegroup"]["labels"] == {"team": "a", "tier": "web"}

    # Immutable: a new instance type is a surge replacement, shown as such in check mode.
    assert calls(r["plan replace"]) == ["eks:CreateNodegroup", "eks:DeleteNodegroup"]
    assert "instance_types" in r["plan replace"]["plan"][0]["reason"]
    assert r["plan replace"]["plan"][1]["resource"] == "md-0"
    assert mutating(r["plan replace"]) == []
    assert calls(r["replace"]) == ["eks:CreateNodegroup", "eks:DeleteNodegroup"]
    assert r["replace"]["nodegroup"]["replaced_from"] == ["md-0"]
    assert r["after replace"]["changed"] is False and mutating(r["after replace"]) == []

    groups = {g["nodegroupName"]: g for g in nodegroups(eks)}
    assert sorted(groups) == sorted([r["replace"]["nodegroup"]["name"], "md-auto"])
    [new] = [g for name, g in groups.items() if name.startswith("md-0-")]
    assert len(new["nodegroupName"]) == len("md-0-") + 4 and new["instanceTypes"] == ["m5.large"]
    assert new["labels"] == {"team": "b", "zone": "x"}
    assert new["tags"][OWNER] == "owned"
    assert new["tags"][f"kubernetes.io/cluster/{EKS}"] == "owned"
    assert new["tags"]["clusterapi.aws/node-group"] == "md-0"
    attached = iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    assert {p["PolicyArn"] for p in attached} == WORKER_POLICIES
    assert "ec2.amazonaws.com" in json.dumps(iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"])

    # The autoscaled pool took the cluster's private subnets; an autoscaler changes its desired size.
    assert sorted(groups["md-auto"]["subnets"]) == eks_cluster["private"]
    assert groups["md-auto"]["scalingConfig"]["desiredSize"] == 2
    eks.update_nodegroup_config(clusterName=EKS, nodegroupName="md-auto", scalingConfig={"desiredSize": 5})
    # A node group of a pool's name that the cluster does not own is never touched.
    eks.create_nodegroup(clusterName=EKS, nodegroupName="md-x", nodeRole=eks_cluster["role"], subnets=["subnet-1"])

    r = steps(
        [
            ("kept", NODEGROUP, auto, {}),
            ("resized", NODEGROUP, {**auto, "scaling": {"min_size": 1, "max_size": 8}}, {}),
            ("foreign", NODEGROUP, args(name="md-x"), {"ignore_errors": True}),
            ("absent md-0", NODEGROUP, args(name="md-0", state="absent"), {}),
            # Started without a wait (as the eks_node_groups role starts a cluster's deletion), then waited for.
            ("started md-auto", NODEGROUP, args(name="md-auto", state="absent", wait=False), {}),
            ("absent md-auto", NODEGROUP, args(name="md-auto", state="absent"), {}),
            ("absent again", NODEGROUP, args(name="md-0", state="absent"), {}),
        ]
    )
    assert r["kept"]["changed"] is False and mutating(r["kept"]) == []
    assert r["kept"]["nodegroup"]["scaling"] == {"min_size": 1, "max_size": 6, "desired_size": 5}
    assert calls(r["resized"]) == ["eks:UpdateNodegroupConfig"]
    assert r["resized"]["nodegroup"]["scaling"] == {"min_size": 1, "max_size": 8, "desired_size": 5}
    assert r["foreign"]["failed"] and "not owned" in r["foreign"]["msg"] and mutating(r["foreign"]) == []
    gone = r["absent md-0"]
    assert gone["changed"] is True and gone["nodegroup"] is None
    assert calls(gone)[0] == "eks:DeleteNodegroup" and calls(gone)[-1] == "iam:DeleteRole"
    # wait=false: the deletion started, the role kept - what the caller asked for, so no warning - and the condition
    # says so; the run that waits deletes the role.
    started = r["started md-auto"]
    assert calls(started) == ["eks:DeleteNodegroup"] and "warnings" not in started, started.get("warnings")
    assert started["conditions"]["EKSNodegroupReady"] == {"status": False, "reason": "Deleting"}
    assert calls(r["absent md-auto"])[-1] == "iam:DeleteRole"
    assert r["absent again"]["changed"] is False
    assert [g["nodegroupName"] for g in nodegroups(eks)] == ["md-x"]
    assert owned_roles(iam) == []


def test_fargate_life(aws, steps, eks_cluster):
    eks, iam = aws.client("eks"), aws.client("iam")
    role_name = f"{CLUSTER}-system-fargate-iam-service-role"
    spec = args(name="system", selectors=[{"namespace": "kube-system"}], tags={"team": "platform"})
    r = steps(
        [
            ("plan", FARGATE, spec, {"check_mode": True}),
            ("create", FARGATE, spec, {}),
            ("again", FARGATE, spec, {}),
        ]
    )
    assert calls(r["plan"]) == ["iam:CreateRole", "iam:AttachRolePolicy", "eks:CreateFargateProfile"]
    assert mutating(r["plan"]) == []
    assert r["create"]["changed"] is True and r["create"]["conditions"]["EKSFargateProfileReady"]["status"] is True
    assert r["again"]["changed"] is False and mutating(r["again"]) == []
    profile = eks.describe_fargate_profile(clusterName=EKS, fargateProfileName="system")["fargateProfile"]
    assert sorted(profile["subnets"]) == eks_cluster["private"]  # the cluster's private subnets
    assert profile["tags"][OWNER] == "owned" and profile["tags"]["team"] == "platform"
    assert profile["tags"]["clusterapi.aws/fargate-profile"] == "system"
    assert profile["podExecutionRoleArn"].endswith(f"/{role_name}")
    attached = iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    assert [p["PolicyArn"] for p in attached] == ["arn:aws:iam::aws:policy/AmazonEKSFargatePodExecutionRolePolicy"]
    document = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    assert "eks-fargate-pods.amazonaws.com" in json.dumps(document)

    wider = {
        **spec,
        "selectors": [{"namespace": "kube-system"}, {"namespace": "batch", "labels": {"compute": "fargate"}}],
    }
    public = args(
        name="x", subnets=[{"id": "subnet-0123456789abcdef0", "is_public": True}], selectors=[{"namespace": "a"}]
    )
    r = steps(
        [
            ("plan replace", FARGATE, wider, {"check_mode": True}),
            ("replace", FARGATE, wider, {}),
            ("after replace", FARGATE, wider, {}),
            ("public subnet", FARGATE, public, {"ignore_errors": True}),
        ]
    )
    assert calls(r["plan replace"]) == ["eks:CreateFargateProfile", "eks:DeleteFargateProfile"]
    assert mutating(r["plan replace"]) == []
    assert calls(r["replace"]) == ["eks:CreateFargateProfile", "eks:DeleteFargateProfile"]
    assert r["replace"]["fargate_profile"]["replaced_from"] == ["system"]
    assert len(r["replace"]["fargate_profile"]["selectors"]) == 2
    assert r["after replace"]["changed"] is False and mutating(r["after replace"]) == []
    assert r["public subnet"]["failed"] and r["public subnet"]["field"] == "subnets[0]"
    names = eks.list_fargate_profiles(clusterName=EKS)["fargateProfileNames"]
    assert names == [r["replace"]["fargate_profile"]["name"]] and names[0].startswith("system-")

    r = steps(
        [
            ("absent", FARGATE, args(name="system", state="absent"), {}),
            ("again", FARGATE, args(name="system", state="absent"), {}),
        ]
    )
    assert calls(r["absent"])[0] == "eks:DeleteFargateProfile" and calls(r["absent"])[-1] == "iam:DeleteRole"
    assert r["again"]["changed"] is False
    assert eks.list_fargate_profiles(clusterName=EKS)["fargateProfileNames"] == []
    assert owned_roles(iam) == []
