# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_iam and playbooks/iam.yml against the moto server (which loads AWS managed policies,
MOTO_IAM_LOAD_MANAGED_POLICIES=true): create, no-op, policy versions past IAM's limit, check mode, foreign
resources left alone, delete."""

from __future__ import annotations

from pathlib import Path

MODULE = "clusterapi.aws.capa_iam"
SUFFIX = ".cluster-api-provider-aws.sigs.k8s.io"
PLAYBOOK = Path(__file__).resolve().parents[2] / "playbooks" / "iam.yml"
TAG = "clusterapi.aws/bootstrap"


def names(base: str) -> str:
    return f"{base}{SUFFIX}"


def attached(iam, role: str) -> set[str]:
    return {p["PolicyName"] for p in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]}


def test_playbook_creates_everything_and_second_run_changes_nothing(aws, run_playbook):
    first = run_playbook(PLAYBOOK)
    assert first.changed_tasks, first.describe()
    iam = aws.client("iam")
    for base in ("control-plane", "controllers", "nodes", "eks-controlplane"):
        role = iam.get_role(RoleName=names(base))["Role"]
        assert {t["Key"]: t["Value"] for t in role["Tags"]}[TAG] == "default"
    for base in ("eks-nodegroup", "eks-fargate"):
        assert names(base) not in {r["RoleName"] for r in iam.list_roles()["Roles"]}
    profiles = {p["InstanceProfileName"]: p for p in iam.list_instance_profiles()["InstanceProfiles"]}
    for base in ("control-plane", "controllers", "nodes"):
        assert [r["RoleName"] for r in profiles[names(base)]["Roles"]] == [names(base)]
    local = {p["PolicyName"] for p in iam.list_policies(Scope="Local")["Policies"]}
    assert local == {names(b) for b in ("controllers", "controllers-eks", "control-plane", "nodes")}
    assert attached(iam, names("control-plane")) == {
        names("control-plane"),
        names("nodes"),
        names("controllers"),
        names("controllers-eks"),
    }
    assert attached(iam, names("nodes")) == {
        names("nodes"),
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
    }
    assert attached(iam, names("eks-controlplane")) == {"AmazonEKSClusterPolicy"}
    trust = iam.get_role(RoleName=names("eks-controlplane"))["Role"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"]["Service"] == "eks.amazonaws.com"

    aws.reset_requests()
    second = run_playbook(PLAYBOOK)
    assert not second.changed_tasks, second.describe()
    assert aws.mutating_requests() == []


def test_policy_versions_are_replaced_and_pruned(aws, run_module):
    args = {"cluster_name": "versions", "eks": False, "eks_nodegroup": True, "eks_fargate": True}
    created = run_module(MODULE, args)
    assert created["changed"], created
    iam = aws.client("iam")
    nodes_arn = next(p["arn"] for p in created["iam"]["policies"] if p["base"] == "nodes")
    assert attached(iam, names("eks-nodegroup")) == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
    }
    fargate = iam.get_role(RoleName=names("eks-fargate"))["Role"]["AssumeRolePolicyDocument"]
    assert fargate["Statement"][0]["Principal"]["Service"] == "eks-fargate-pods.amazonaws.com"
    for change in range(6):
        statement = {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::bucket-{change}/*"]}
        aws.reset_requests()
        result = run_module(MODULE, dict(args, extra_statements={"nodes": [statement]}))
        calls = [p["call"] for p in result["plan"]]
        assert calls[-1:] == ["iam:CreatePolicyVersion"] or "iam:CreatePolicyVersion" in calls, result["plan"]
        pruned = calls.count("iam:DeletePolicyVersion")
        assert pruned == (1 if change >= 4 else 0), (change, result["plan"])
        versions = iam.list_policy_versions(PolicyArn=nodes_arn)["Versions"]
        assert len(versions) == min(change + 2, 5)
        default = next(v for v in versions if v["IsDefaultVersion"])
        document = iam.get_policy_version(PolicyArn=nodes_arn, VersionId=default["VersionId"])["PolicyVersion"]
        assert f"bucket-{change}" in str(document["Document"])
        assert {m["service"] for m in aws.mutating_requests()} == {"iam"}
    # The oldest versions went first: v1 and v2 are gone, the newest five remain.
    remaining = sorted(int(v["VersionId"][1:]) for v in iam.list_policy_versions(PolicyArn=nodes_arn)["Versions"])
    assert remaining == [3, 4, 5, 6, 7]

    deleted = run_module(MODULE, dict(args, state="absent"))
    assert deleted["changed"], deleted
    assert iam.list_policies(Scope="Local")["Policies"] == []
    assert iam.list_roles()["Roles"] == []
    assert iam.list_instance_profiles()["InstanceProfiles"] == []
    again = run_module(MODULE, dict(args, state="absent"))
    assert not again["changed"], again


def test_check_mode_plans_without_changing(aws, run_module):
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": "dry"}, check=True)
    assert result["changed"], result
    assert aws.mutating_requests() == []
    calls = [p["call"] for p in result["plan"]]
    assert calls.count("iam:CreateRole") == 4 and calls.count("iam:CreatePolicy") == 4
    assert calls.count("iam:CreateInstanceProfile") == 3
    assert all(p["arn"].startswith("planned:") for p in result["iam"]["policies"])


def test_foreign_resources_are_used_and_never_deleted(aws, run_module):
    iam = aws.client("iam")
    iam.create_role(RoleName=names("nodes"), AssumeRolePolicyDocument='{"Version":"2012-10-17","Statement":[]}')
    created = run_module(MODULE, {"cluster_name": "mine", "eks": False})
    assert not created.get("failed"), created
    nodes = next(r for r in created["iam"]["roles"] if r["base"] == "nodes")
    assert nodes["managed"] is False
    assert attached(iam, names("nodes")) == set()
    other = run_module(MODULE, {"cluster_name": "other", "eks": False, "state": "absent"})
    assert not other["changed"], other["plan"]
    run_module(MODULE, {"cluster_name": "mine", "eks": False, "state": "absent"})
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]] == [names("nodes")]


def test_bad_input_fails_before_any_call(aws, run_module):
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": "bad", "path": "no-slash"})
    assert result["failed"] and result["field"] == "path", result
    result = run_module(MODULE, {"cluster_name": "bad", "extra_statements": {"workers": []}})
    assert result["failed"] and result["field"] == "extra_statements.workers", result
    assert aws.requests() == []


def test_drift_is_repaired_and_check_mode_on_existing_changes_nothing(aws, run_module):
    args = {"cluster_name": "drift", "eks": False}
    run_module(MODULE, args)
    iam = aws.client("iam")
    nodes_policy = next(
        p["Arn"] for p in iam.list_policies(Scope="Local")["Policies"] if p["PolicyName"] == names("nodes")
    )
    iam.detach_role_policy(RoleName=names("nodes"), PolicyArn=nodes_policy)
    iam.update_assume_role_policy(
        RoleName=names("controllers"),
        PolicyDocument='{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}',
    )
    aws.reset_requests()
    planned = run_module(MODULE, args, check=True, diff=True)
    assert aws.mutating_requests() == []
    assert {(p["call"], p["resource"]) for p in planned["plan"]} == {
        ("iam:AttachRolePolicy", names("nodes")),
        ("iam:UpdateAssumeRolePolicy", names("controllers")),
    }
    assert "before" in planned["diff"] and "after" in planned["diff"]
    repaired = run_module(MODULE, args)
    assert [p["call"] for p in repaired["plan"]] == [p["call"] for p in planned["plan"]]
    assert names("nodes") in attached(iam, names("nodes"))
    trust = iam.get_role(RoleName=names("controllers"))["Role"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"]["Service"] == "ec2.amazonaws.com"
    assert not run_module(MODULE, args)["changed"]
