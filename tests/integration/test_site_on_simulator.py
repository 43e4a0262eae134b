"""A whole self-managed cluster through site.yml on the workload-cluster simulator, as `make demo` runs it - and
brought back by restore.yml from an etcd snapshot after it lost quorum.

The controller reaches the API server at the load balancer's own DNS name through the simulator's HTTP CONNECT proxy,
given once for the inventory (``capa_kubernetes_api``, the roles' controller-wide setting). The control plane is
initialized first (one machine), the addons follow, the worker is launched (Cluster API starts MachineDeployments
once the control plane is initialized), then the other control-plane machines join with the CNI already there while
the worker boots - so every Node is Ready when the run ends and the status says so; the second run changes nothing,
sends no mutating AWS request and writes nothing to the Kubernetes API (its etcd snapshot of the first run is fresh
enough).

etcd_backup: a run takes a snapshot into the cluster's own bucket (SSE-KMS, versioned, public access blocked, owned)
when the newest is older than last_snapshot_min_age. restore.yml refuses while etcd keeps quorum; with two of three
members gone it replaces the control plane - the first machine restores the newest snapshot before kubeadm init, the
others join it - and the keys written before that snapshot are in etcd again, the one written after it is not.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from xml.etree import ElementTree

from cluster_helpers import write_inventory
from kubesim_fixtures import wait_for

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
RESTORE = REPO / "playbooks/restore.yml"
SNAPSHOT = REPO / "playbooks/etcd_snapshot.yml"
CONTROLLER = "clusterapi.aws:controller"
NAME = "simc"


def test_site_yml_on_the_simulator_joins_every_node_and_a_second_run_writes_nothing(
    aws, kubesim, run_playbook, tmp_path
):
    sim = kubesim.register(NAME)
    spec = {
        "name": NAME,
        "region": "us-east-1",
        "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "single"},
        "control_plane": {"replicas": 3},
        "addons": {"enabled": True},
        "machine_deployments": [{"name": "md-0", "replicas": 1}],
        "machine_pools": [
            {"name": "mp-0", "kind": "asg", "min_size": 1, "max_size": 2, "desired_capacity": 1},
            {
                "name": "fp-0",
                "kind": "fleet",
                "min_size": 1,
                "max_size": 2,
                "desired_capacity": 1,
                "mixed_instances_policy": {"overrides": [{"instance_type": "t3.large"}]},
            },
        ],
        "bastion": {"enabled": True},
        "etcd_backup": {"enabled": True},
    }
    controller = {"capa_kubernetes_api": {"proxy": kubesim.proxy, "mode": "required"}}
    inventory = write_inventory(tmp_path, spec, extra_vars=controller)
    first = run_playbook(SITE, inventory)
    assert first.rc == 0, first.describe()
    status = json.loads((tmp_path / "out" / NAME / "status.json").read_text())
    control_plane = [m["kubernetes"] for m in status["machines"]["control-plane"]]
    workers = [m["kubernetes"] for m in status["machines"]["md-0"]]
    assert [(k["node_ready"], k["etcd_member"]) for k in control_plane] == [("True", "voter")] * 3, control_plane
    assert [k["node_ready"] for k in workers] == ["True"], workers
    assert "control-plane: 3 machines, 3 Nodes Ready, 3 etcd voters" in first.stdout
    assert "md-0: 1 machines, 1 Nodes Ready" in first.stdout
    assert_every_kind_in_the_status(status, first.stdout, tmp_path)

    # KubeadmControlPlane's and a ClusterResourceSet's order: the first machine, the CNI, then the other machines.
    timeline = kubesim.journal(cluster=NAME)
    cni = next(
        e["time"]
        for e in timeline
        if e.get("user") == CONTROLLER and e.get("method") == "PATCH" and e.get("path", "").endswith("/calico-node")
    )
    launches = [e["time"] for e in timeline if e.get("source") == "moto" and e.get("operation") == "RunInstances"]
    # The bastion and the first control-plane machine come before the CNI; the others after (pools launch through
    # their auto scaling group and fleet, not RunInstances).
    assert len([t for t in launches if t < cni]) == 2 and len(launches) == 5, (launches, cni)
    # Cluster API starts MachineDeployments once the control plane is initialized: the worker boots before the last
    # control-plane machine (launched only once the one before it joined) and its Node registers meanwhile.
    nodes = [e for e in timeline if e.get("source") == "node"]
    booted = {e["machine"]: e["time"] for e in nodes if e.get("event") == "booted"}
    registered = {e["machine"]: e["time"] for e in nodes if e.get("event") == "registered"}
    control_plane_boots = sorted(t for m, t in booted.items() if "-control-plane-" in m)
    worker_boots = [t for m, t in booted.items() if "-md-0-" in m]
    assert len(control_plane_boots) == 3 and len(worker_boots) == 1, booted
    assert control_plane_boots[0] < worker_boots[0] < control_plane_boots[-1], booted
    worker_joined = [t for m, t in registered.items() if "-md-0-" in m]
    assert worker_joined and worker_joined[0] < control_plane_boots[-1], (registered, booted)
    tunnels = {e["target"] for e in timeline if e.get("source") == "proxy" and e.get("status") == 200}
    assert tunnels and all(t.endswith(".elb.amazonaws.com:6443") for t in tunnels), tunnels

    aws.reset_requests()
    since = time.time()
    second = run_playbook(SITE, inventory)
    assert second.rc == 0 and second.changed == 0, [(t.name, t.result.get("plan")) for t in second.changed_tasks]
    assert aws.mutating_requests() == []
    asked = [
        e
        for e in kubesim.journal(cluster=NAME, source="apiserver", moto=False, since=since)
        if e.get("user") == CONTROLLER
    ]
    writes = [e for e in asked if e.get("method") != "GET"]
    assert asked and writes == [], writes
    # One Node list for the whole run: the first machine group's is handed on to the other groups and to the status
    # (shared reads; capa_cluster_info judges every group by its Nodes).
    assert len([e for e in asked if e.get("path") == "/api/v1/nodes"]) == 1
    # ... so the status reads no PKI secret and mints no client certificate: the trust is asked for when a request
    # goes out (workload/kube.py), and none does. The machine groups each read it (a secret never travels).
    (status_run,) = [
        t.result for t in second.tasks if t.name.endswith("Read back what the cluster owns, its conditions and orphans")
    ]
    assert status_run["reads_shared"].get("k8s:ListNodes") == 1, status_run["reads_shared"]
    assert "secretsmanager:GetSecretValue" not in status_run["api_calls"], status_run["api_calls"]
    # The pools looked for their groups and templates among the cluster's own, and capa_elb for the load balancer by
    # its name: the status's reads of them are the same questions, answered without a request.
    for read in ("autoscaling:DescribeAutoScalingGroups", "ec2:DescribeLaunchTemplates", "elb:DescribeLoadBalancers"):
        assert read in status_run["reads_shared"] and read not in status_run["api_calls"], (read, status_run)
    assert kubesim.state()["clusters"][NAME]["quorum"]["failed_windows"] == []
    first_snapshot = status_of(tmp_path)["etcd_backup"]["newest"]
    assert first_snapshot["key"].startswith("etcd/") and first_snapshot["size"] > 0

    assert f"etcd snapshots: {status_of(tmp_path)['etcd_backup']['bucket']}, newest {first_snapshot['key']}" in (
        second.stdout
    )

    # An ad hoc snapshot (etcd_snapshot.yml, what the AWX schedule runs) has the keys written meanwhile.
    sim.etcd_kv(put={"/tests/before": "kept"})
    third = run_playbook(SNAPSHOT, inventory, extra_vars={"capa_etcd_snapshot_min_age": 0})
    assert third.rc == 0, third.describe()
    (snapshot,) = [t.result["snapshot"] for t in third.changed_tasks]
    assert snapshot["key"] != first_snapshot["key"] and snapshot["member"] in voters(sim)
    assert f"{NAME}: took {snapshot['key']}" in third.stdout
    bucket = status_of(tmp_path)["etcd_backup"]["bucket"]
    taken = snapshot
    s3 = aws.client("s3")
    rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    assert all(s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"].values())
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert tags[f"sigs.k8s.io/cluster-api-provider-aws/cluster/{NAME}"] == "owned"
    body = s3.get_object(Bucket=bucket, Key=taken["key"])["Body"].read()
    assert hashlib.sha256(body).hexdigest() == snapshot["sha256"] and len(body) == taken["size"]
    assert body[:16].hex() not in third.stdout  # names and sizes in the output, never the content
    sim.etcd_kv(put={"/tests/after": "not in the snapshot"})

    # While etcd keeps quorum, a restore is refused before any change.
    aws.reset_requests()
    refused = run_playbook(RESTORE, inventory, expect_rc=None)
    assert refused.rc != 0 and "has quorum (3 of 3 etcd members answer)" in refused.stdout, refused.describe()
    assert aws.mutating_requests() == []

    # Two of three members die: quorum is lost, and restore.yml brings the control plane back from the snapshot.
    old = {m["name"] for m in status_of(tmp_path)["machines"]["control-plane"]}
    for member in voters(sim)[:2]:
        sim.etcd_member(member, power="off")
    wait_for(lambda: not sim.etcd()["quorum"]["has_quorum"], 30, "etcd to lose quorum")
    restored = run_playbook(RESTORE, inventory)
    assert restored.rc == 0, restored.describe()
    assert "X-Amz-Signature" not in restored.stdout  # the snapshot's URL travels in bootstrap data only
    after = status_of(tmp_path)
    control_plane = [m for m in after["machines"]["control-plane"] if m["state"] == "running"]
    assert len(control_plane) == 3 and not {m["name"] for m in control_plane} & old
    assert [m["kubernetes"]["etcd_member"] for m in control_plane] == ["voter"] * 3
    assert "control-plane: 3 machines, 3 Nodes Ready, 3 etcd voters" in restored.stdout
    assert sim.etcd_kv(get=["/tests/before", "/tests/after"]) == {"/tests/before": "kept", "/tests/after": None}
    restores = [e for e in kubesim.journal(cluster=NAME, source="node") if e["event"] == "etcd-snapshot-restore"]
    assert [e["rc"] for e in restores] == [0]


def assert_every_kind_in_the_status(status: dict, stdout: str, tmp_path: Path) -> None:
    """Every machine group, both machine pools and the bastion are in status.json, read back from AWS and judged by
    their Ready Nodes (the pools' Nodes were awaited: the run ends with them Ready), in the summary, in the describe
    tree and in the topology picture; nothing is left unread."""
    assert status["not_read"] == [], status["not_read"]
    assert set(status["groups"]) == {"control-plane", "bastion", "md-0"}
    assert {g: (v["ready"], v["nodes_ready"]) for g, v in status["groups"].items()} == {
        "control-plane": (True, 3),
        "bastion": (True, None),  # no Node: the bastion is no member of the cluster
        "md-0": (True, 1),
    }
    pools = status["machine_pools"]
    assert {p: (v["kind"], v["desired"], v["in_service"], v["nodes_ready"], v["reason"]) for p, v in pools.items()} == {
        "fp-0": ("fleet", 1, 1, 1, "ReplicasReady"),
        "mp-0": ("asg", 1, 1, 1, "ReplicasReady"),
    }
    assert status["conditions"]["BastionHostReady"]["status"] is True
    for line in (
        "  bastion: 1 of 1 running",
        "  mp-0 (asg pool): 1/1 in service, 1 Nodes Ready",
        "  fp-0 (fleet pool): 1/1 in service, 1 Nodes Ready",
        "  not ready: none",
    ):
        assert line in stdout, line
    for row in (
        "Cluster/simc",
        "KubeadmControlPlane/simc-control-plane",
        "3 Machines...",
        "MachineDeployment/md-0",
        "AWSMachinePool/mp-0",
        "AWSMachinePool (fleet)/fp-0",
        "BastionHostReady",
        "Bastion",
    ):
        assert row in stdout, row
    svg = ElementTree.parse(tmp_path / "out" / NAME / "topology.svg").getroot()
    texts = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    for label in ("control-plane x", "md-0 x1", "mp-0 x1", "fp-0 x1", "bastion x1", "NAT gateway", "API load balancer"):
        assert label in texts, (label, texts)


def status_of(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "out" / NAME / "status.json").read_text())


def voters(sim) -> list[str]:
    return sorted(m["name"] for m in sim.etcd().get("members", []) if m["started"] and not m["is_learner"])
