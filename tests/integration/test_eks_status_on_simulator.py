"""An EKS cluster's status through site.yml on the workload-cluster simulator: every EKS resource the spec makes -
control plane, its IAM role, OIDC provider, managed node group, Fargate profile, self-managed pool - is in
``status.json`` with CAPA's condition, the node group and the pool with their Ready Nodes (Node lists with a token
signed in the run), in the run's summary, in the describe tree and in the topology picture. A status that left one of
them out fails here.

The pool's nodes join as the role of CAPA's nodes instance profile (the account's IAM bootstrapped first with
playbooks/iam.yml, as a user does): the cluster's run maps that role in aws-auth, as CAPA maps the instance profiles of
an EKS cluster's AWSMachinePools, and the pool's run waits for its Node, so the first run's status already counts it.

The controller reaches the EKS endpoint through the simulator's HTTP CONNECT proxy (``capa_kubernetes_api``). The
node group is created without waiting, the Fargate profile meanwhile, and the node group's Nodes are awaited after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from cluster_helpers import IAM_PLAYBOOK, eks_spec, write_inventory

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DESCRIBE = REPO / "playbooks/describe.yml"
DELETE = REPO / "playbooks/delete.yml"
NAME = "stat-eks"
EKS_CONDITIONS = (
    "EKSControlPlaneReady",
    "IAMControlPlaneRolesReady",
    "EKSNodegroupReady",
    "EKSFargateProfileReady",
    "OIDCProviderReady",
)
SVG = "{http://www.w3.org/2000/svg}text"
NODES_PROFILE = "nodes.cluster-api-provider-aws.sigs.k8s.io"
POOL = {"name": "pool-0", "min_size": 1, "max_size": 2, "desired_capacity": 1, "iam_instance_profile": NODES_PROFILE}


def test_an_eks_clusters_status_names_every_eks_resource_with_its_condition(aws, kubesim, run_playbook, tmp_path):
    kubesim.register(NAME, kind="eks")
    assert run_playbook(IAM_PLAYBOOK).rc == 0
    spec = eks_spec(
        NAME, node_group={"scaling": {"min_size": 1, "max_size": 2, "desired_size": 2}}, machine_pools=[POOL]
    )
    # mode required, as make demo runs it: the new cluster's aws-auth waits for its API to serve (the simulator starts
    # it a moment after ACTIVE), so the pool's role is mapped in this run and its Node awaited.
    api = {"proxy": kubesim.proxy, "mode": "required"}
    inventory = write_inventory(tmp_path, spec, extra_vars={"capa_kubernetes_api": api})
    result = run_playbook(SITE, inventory)
    assert result.rc == 0, result.describe()
    status = json.loads((tmp_path / "out" / NAME / "status.json").read_text())

    # The pool's node joined as the nodes profile's role, which the cluster mapped; the run waited for its Node.
    role = aws.client("iam").get_role(RoleName=NODES_PROFILE)["Role"]["Arn"]
    joined = [e for e in kubesim.journal(cluster=NAME) if e.get("event") == "joined" and e.get("machine") == "pool-0"]
    assert [e.get("role_arn") for e in joined] == [role], joined
    pool = status["machine_pools"]["pool-0"]
    assert (pool["kind"], pool["desired"], pool["in_service"], pool["nodes_ready"], pool["reason"]) == (
        "asg",
        1,
        1,
        1,
        "ReplicasReady",
    ), pool

    # A new cluster's node groups are created without waiting, the Fargate profile follows while they come up, and
    # their Nodes are awaited after it (EKS makes one Fargate profile at a time, node groups side by side).
    timeline = kubesim.journal(cluster=NAME)
    moto = {e["operation"]: e["time"] for e in reversed(timeline) if e.get("source") == "moto"}
    node_reads = [
        e["time"]
        for e in timeline
        if e.get("source") == "apiserver" and e.get("method") == "GET" and e.get("path") == "/api/v1/nodes"
    ]
    assert moto["CreateNodegroup"] < moto["CreateFargateProfile"], moto
    assert node_reads and not [t for t in node_reads if t < moto["CreateFargateProfile"]], (node_reads, moto)

    assert {c: status["conditions"][c]["status"] for c in EKS_CONDITIONS} == dict.fromkeys(EKS_CONDITIONS, True)
    assert status["not_read"] == [], status["not_read"]
    eks = status["eks"]
    assert (eks["cluster"]["name"], eks["cluster"]["status"], eks["cluster"]["version"]) == (NAME, "ACTIVE", "1.31")
    assert eks["role"]["name"] == f"{NAME}-iam-service-role"
    assert eks["oidc_provider"].startswith("arn:aws:iam::") and "oidc-provider/" in eks["oidc_provider"]
    group = eks["node_groups"]["ng-0"]
    assert (group["status"], group["desired"], group["nodes"], group["nodes_ready"]) == ("ACTIVE", 2, 2, 2), group
    assert set(eks["node_groups"]) == {"ng-0"} and set(eks["fargate_profiles"]) == {"fp-0"}
    assert eks["fargate_profiles"]["fp-0"]["status"] == "ACTIVE"
    assert eks["fargate_profiles"]["fp-0"]["namespaces"] == ["default"]

    for line in (
        "  EKS control plane: ACTIVE, Kubernetes 1.31 (Available)",
        "  node group ng-0: ACTIVE, 2 desired, 2/2 Nodes Ready",
        "  Fargate profile fp-0: ACTIVE",
        "  pool-0 (asg pool): 1/1 in service, 1 Nodes Ready",
        f"  IAM role: {NAME}-iam-service-role (Available)",
        f"  OIDC provider: {eks['oidc_provider']}",
        "  not ready: none",
    ):
        assert line in result.stdout, line
    for row in (
        f"ControlPlane - AWSManagedControlPlane/{NAME}",
        "MachinePool - AWSManagedMachinePool/ng-0",
        "FargateProfile - AWSFargateProfile/fp-0",
        "MachinePool - AWSMachinePool/pool-0",
        "IAMControlPlaneRolesReady",
        "OIDCProviderReady",
    ):
        assert row in result.stdout, row

    svg = ElementTree.parse(tmp_path / "out" / NAME / "topology.svg").getroot()
    texts = " ".join(t.text or "" for t in svg.iter(SVG))
    for label in (f"EKS control plane {NAME}", "node group ng-0", "Fargate profile fp-0", "2/2 Nodes Ready"):
        assert label in texts, (label, texts)

    # describe.yml: the same tree any time, read live, with no change to AWS.
    aws.reset_requests()
    described = run_playbook(DESCRIBE, inventory)
    assert described.rc == 0 and described.changed == 0, described.describe()
    assert aws.mutating_requests() == []
    for row in (f"Cluster/{NAME}", "MachinePool - AWSManagedMachinePool/ng-0", "2/2 Nodes Ready"):
        assert row in described.stdout, row

    # delete.yml: the node group's deletion starts before the Fargate profile's (EKS deletes one profile at a time,
    # node groups side by side) and is waited for after it; then the cluster goes.
    aws.reset_requests()
    deleted = run_playbook(DELETE, inventory)
    assert deleted.rc == 0, deleted.describe()
    deletions = ("DeleteNodegroup", "DeleteFargateProfile", "DeleteCluster")
    order = [r["operation"] for r in aws.mutating_requests() if r["operation"] in deletions]
    assert order == list(deletions), order
