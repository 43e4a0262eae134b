# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""cluster/describe.py and cluster/topology.py: the describe tree and the topology graph of a cluster's status."""

from __future__ import annotations

import datetime
import subprocess
from typing import Any
from xml.etree import ElementTree

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.describe import describe_tree
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.topology import AMBER, GREEN, RED, topology_dot

NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)
OK = {"status": True, "reason": "Available", "message": ""}


def machine(ident: str, group: str, subnet: str, state: str = "running", ready: bool | None = True) -> dict[str, Any]:
    return {
        "id": ident,
        "name": f"{group}-{ident}",
        "group": group,
        "pool": None,
        "role": "node",
        "state": state,
        "subnet_id": subnet,
        "node": f"ip-{ident}" if ready is not None else None,
        "node_ready": ready,
        "launched_at": "2026-12-03T11:50:00+00:00",
    }


def self_managed() -> dict[str, Any]:
    instances = [machine(f"i-cp{n}", "control-plane", f"subnet-{n}") for n in range(3)]
    instances += [machine("i-md0", "md-0", "subnet-0"), machine("i-md1", "md-0", "subnet-1", ready=False)]
    return {
        "cluster": "demo",
        "kind": "unmanaged",
        "region": "us-east-1",
        "state": "present",
        "conditions": {"VpcReady": OK, "LoadBalancerReady": OK},
        "not_read": [],
        "groups": {
            "control-plane": {
                "ready": True,
                "reason": "InstanceReady",
                "message": "3 of 3 running",
                "instances": ["i-cp0", "i-cp1", "i-cp2"],
            },
            "md-0": {
                "ready": False,
                "reason": "NodeNotReady",
                "message": "2 of 2 running, 1 Nodes Ready",
                "instances": ["i-md0", "i-md1"],
            },
        },
        "machine_pools": {
            "mp-0": {
                "kind": "asg",
                "desired": 2,
                "in_service": 2,
                "nodes_ready": 2,
                "ready": True,
                "reason": "ReplicasReady",
                "instances": [],
            },
        },
        "eks": None,
        "resources": {
            "vpc": [{"id": "vpc-1", "cidr_block": "10.0.0.0/16", "state": "available"}],
            "internet_gateway": [{"id": "igw-1", "state": "available"}],
            "subnet": [
                {
                    "id": f"subnet-{n}",
                    "availability_zone": f"us-east-1{'abc'[n]}",
                    "cidr_block": f"10.0.{n}.0/24",
                    "public": False,
                    "state": "available",
                }
                for n in range(3)
            ]
            + [
                {
                    "id": "subnet-p",
                    "availability_zone": "us-east-1a",
                    "cidr_block": "10.0.9.0/24",
                    "public": True,
                    "state": "available",
                }
            ],
            "nat_gateway": [{"id": "nat-1", "subnet_id": "subnet-p", "state": "pending"}],
            "load_balancer": [{"name": "demo-apiserver", "state": None}],
            "instance": instances,
        },
    }


def rows_of(lines: list[str]) -> dict[str, str]:
    """Each row by its NAME cell (the tree drawing kept), the rest of the row as its value."""
    width = lines[0].index("READY")
    return {line[:width].rstrip(): line[width:] for line in lines[1:]}


def test_the_tree_reads_as_clusterctls_with_identical_machines_folded():
    lines = describe_tree(self_managed(), NOW)
    assert lines[0].split() == ["NAME", "READY", "REASON", "SINCE", "MESSAGE"]
    names = list(rows_of(lines))
    assert names == [
        "Cluster/demo",
        "├─ClusterInfrastructure - AWSCluster/demo",
        "│ ├─VpcReady",
        "│ └─LoadBalancerReady",
        "├─ControlPlane - KubeadmControlPlane/demo-control-plane",
        "│ └─3 Machines...",
        "└─Workers",
        "  ├─MachineDeployment/md-0",
        "  │ ├─Machine/ip-i-md0",
        "  │ └─Machine/ip-i-md1",
        "  └─MachinePool - AWSMachinePool/mp-0",
    ]
    row = rows_of(lines)
    assert row["Cluster/demo"].split()[0] == "False"  # md-0 is not ready
    assert "10m" in row["│ └─3 Machines..."] and "See i-cp0, i-cp1, i-cp2" in row["│ └─3 Machines..."]
    assert "NodeNotReady" in row["  │ └─Machine/ip-i-md1"] and "False" in row["  │ └─Machine/ip-i-md1"]
    assert all(line == line.rstrip() and len(line) <= 120 for line in lines)


def test_what_was_not_read_is_not_claimed_ready():
    status = self_managed()
    status["groups"]["md-0"].update(ready=True)
    status["not_read"] = ["Nodes: kubernetes_api.mode is none"]
    first = rows_of(describe_tree(status, NOW))["Cluster/demo"]
    assert first.split()[0] == "-" and "not read: Nodes: kubernetes_api" in first


def test_a_deleted_cluster_reads_as_deleted():
    gone = rows_of(describe_tree({"cluster": "demo", "state": "absent", "counts": {"vpc": 0}}, NOW))["Cluster/demo"]
    assert gone.split()[:2] == ["True", "Deleted"] and "nothing remains" in gone
    left = describe_tree({"cluster": "demo", "state": "absent", "counts": {"vpc": 1}}, NOW)
    assert "Deleting" in left[1] and "still owned: vpc=1" in left[1]


def test_an_eks_tree_has_the_control_plane_node_groups_and_fargate_profiles():
    status = {
        "cluster": "e",
        "kind": "eks",
        "state": "present",
        "conditions": {"EKSControlPlaneReady": OK, "IAMControlPlaneRolesReady": OK, "OIDCProviderReady": OK},
        "eks": {
            "cluster": {"name": "e", "status": "ACTIVE", "created_at": "2026-12-03T10:00:00+00:00"},
            "node_groups": {"ng-0": {"status": "CREATING", "desired": 2, "nodes": 0, "nodes_ready": 0}},
            "fargate_profiles": {"fp-0": {"status": "ACTIVE", "namespaces": ["default"], "nodes": 0}},
        },
    }
    rows = {name.lstrip("│├└─ "): row for name, row in rows_of(describe_tree(status, NOW)).items()}
    assert "2h" in rows["ControlPlane - AWSManagedControlPlane/e"]
    assert rows["MachinePool - AWSManagedMachinePool/ng-0"].split()[:2] == ["False", "CREATING"]
    assert "0/0 Nodes" not in rows["FargateProfile - AWSFargateProfile/fp-0"]  # a Fargate Node per pod: none yet
    assert "IAMControlPlaneRolesReady" in rows and "OIDCProviderReady" in rows


def test_the_topology_nests_subnets_in_zones_and_colours_by_state():
    dot = topology_dot(self_managed())
    assert dot.index('subgraph "cluster_us-east-1c"') < dot.index('subgraph "cluster_us-east-1a"')
    assert f'"nat-1" [label="NAT gateway\\nnat-1", fillcolor="{AMBER}"]' in dot  # pending
    assert f'"subnet-1_md-0" [label="md-0 x1\\n1 running, 0 Ready", fillcolor="{RED}"]' in dot
    assert f'"subnet-0_md-0" [label="md-0 x1\\n1 running, 1 Ready", fillcolor="{GREEN}"]' in dot
    assert dot.count('-> "subnet-') == 3  # the load balancer to the control-plane machine of each zone
    assert topology_dot(self_managed()) == dot  # the same status, the same text: a file of it changes only with it


def test_graphviz_draws_it():
    """Graphviz's dot (Debian's graphviz, which make test installs) lays the graph out as SVG."""
    svg = subprocess.run(
        ["dot", "-Tsvg"], input=topology_dot(self_managed()), capture_output=True, text=True, check=False
    )
    assert svg.returncode == 0, svg.stderr
    texts = [t.text for t in ElementTree.fromstring(svg.stdout).iter("{http://www.w3.org/2000/svg}text")]
    assert "md-0 x1" in texts and "NAT gateway" in texts and "VPC vpc-1 10.0.0.0/16" in texts


# the run's summary (what "Show the cluster" prints: capa_status returns it) -------------------------------------------
def summary_status(**overrides: Any) -> dict[str, Any]:
    voter = {"node_ready": "True", "etcd_member": "voter", "signal": "NodeReady"}
    status = {
        "cluster": "demo",
        "kind": "unmanaged",
        "region": "us-east-1",
        "state": "present",
        "endpoint": "https://demo-apiserver:6443",
        "conditions": {"VpcReady": OK, "LoadBalancerReady": {"status": False, "reason": "Pending"}},
        "not_read": [],
        "counts": {"vpc": 1, "nat_gateway": 0, "subnet": 6},
        "orphans": [],
        "groups": {
            "control-plane": {"ready": True},
            "md-0": {"ready": False},
            "bastion": {"ready": False, "reason": "NotRunning", "message": "0 of 1 running"},
        },
        "machine_pools": {
            "mp-0": {
                "kind": "asg",
                "in_service": 1,
                "desired": 2,
                "nodes_ready": None,
                "ready": False,
                "reason": "ScalingUp",
            }
        },
        "eks": None,
        "machines": {
            "control-plane": [
                {"kubernetes": voter},
                {"kubernetes": voter, "health": {"state": "unhealthy", "remediated": True}},
                {"kubernetes": {**voter, "node_ready": "False", "etcd_member": "learner"}, "health": None},
            ],
            "md-0": [{"kubernetes": {"signal": "InstanceRunning", "node_ready": None}}, {"kubernetes": None}],
        },
        "certificates": {
            "machines": {"i-1": "2027-12-03T21:18:08Z", "i-2": None},
            "cluster_ca": "2036-11-30",
            "etcd_ca": "2036-11-29",
            "front_proxy_ca": None,
        },
        "etcd_backup": {"bucket": "demo-etcd", "newest": None},
    }
    return {**status, **overrides}


def test_the_summary_says_per_group_what_the_cluster_saw_and_what_is_not_ready():
    from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.describe import cluster_report, summary_lines

    assert summary_lines(summary_status(), ".capa/demo/status.json") == [
        "cluster demo (unmanaged, us-east-1): present",
        "  endpoint: https://demo-apiserver:6443",
        "  control-plane: 3 machines, 2 Nodes Ready, 2 etcd voters, 1 unhealthy (1 replaced)",
        "  md-0: 2 machines, 0 Nodes Ready (judged by InstanceRunning: the Kubernetes API was not asked or did not"
        " answer)",
        "  bastion: 0 of 1 running (NotRunning)",
        "  mp-0 (asg pool): 1/2 in service (ScalingUp)",
        "  certificates expire: control plane 2027-12-03T21:18:08Z, CAs 2036-11-29",
        "  etcd snapshots: demo-etcd, newest none",
        "  resources: vpc=1, subnet=6",
        "  not ready: LoadBalancerReady, md-0, bastion, mp-0",
        "  status: .capa/demo/status.json",
    ]
    unread = summary_lines(summary_status(conditions={}, groups={}, machine_pools={}, not_read=["Nodes: no API"]))
    assert unread[-2:] == ["  not ready: none of what was read", "  not read: Nodes: no API"]
    report = cluster_report(summary_status(), None)
    assert report[: report.index("")] == summary_lines(summary_status())
    assert report[report.index("") + 1].split() == ["NAME", "READY", "REASON", "SINCE", "MESSAGE"]


def test_the_summary_of_a_deleted_cluster_is_what_it_still_owns_without_a_tree():
    from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.describe import cluster_report

    gone = summary_status(state="absent", counts={"vpc": 0}, orphans=[])
    assert cluster_report(gone) == ["cluster demo (unmanaged, us-east-1): deleted", "  nothing it owned remains"]
    left = summary_status(state="absent", counts={"vpc": 1}, orphans=[{"name": "sg-1"}])
    assert cluster_report(left) == [
        "cluster demo (unmanaged, us-east-1): deleted",
        "  still owned: vpc=1",
        "  orphans: sg-1",
    ]


def test_the_summary_of_an_eks_cluster_reads_its_control_plane_node_groups_and_addons():
    from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.describe import summary_lines

    eks = {
        "cluster": {"status": "ACTIVE", "version": "1.31"},
        "node_groups": {"ng-0": {"status": "ACTIVE", "desired": 2, "nodes": 2, "nodes_ready": 1}},
        "fargate_profiles": {"fp-0": {"status": "ACTIVE"}},
        "addons": {"vpc-cni": {"status": "ACTIVE"}, "coredns": {"status": "CREATING"}},
        "role": {"name": "demo-eks-role"},
        "oidc_provider": "arn:oidc",
        "access_entries": [{}, {}],
    }
    conditions = {
        "EKSControlPlaneReady": {"status": True, "reason": "Active"},
        "IAMControlPlaneRolesReady": {"status": True, "reason": "Created"},
    }
    lines = summary_lines(
        summary_status(
            kind="eks",
            eks=eks,
            conditions=conditions,
            machines={},
            groups={},
            machine_pools={},
            certificates=None,
            etcd_backup=None,
        )
    )
    assert lines[2:9] == [
        "  EKS control plane: ACTIVE, Kubernetes 1.31 (Active)",
        "  node group ng-0: ACTIVE, 2 desired, 1/2 Nodes Ready",
        "  Fargate profile fp-0: ACTIVE",
        "  addons: vpc-cni ACTIVE, coredns CREATING",
        "  IAM role: demo-eks-role (Created)",
        "  OIDC provider: arn:oidc",
        "  access entries: 2",
    ]
