"""etcd snapshots in S3 and the restore of a control plane that lost quorum, on the simulator's real etcd 3.4.

capa_etcd_snapshot streams etcd's snapshot through the port-forward the lifecycle code uses (the leader's member,
etcd's trailing sha256 checked) into the cluster's own bucket - SSE-KMS, versioned, public access blocked, tagged
as owned. With two of three members gone, capa_instance's ``etcd_restore`` terminates the control plane and boots a
first machine that downloads the snapshot (a presigned URL in its bootstrap data), restores it with etcdutl (the
simulator runs Debian's etcdctl 3.4 for the etcd image's etcdutl) and runs kubeadm init on the restored data; the
full reconcile then joins two more members. The keys written before the snapshot are there, the one written after
it is not.
"""

from __future__ import annotations

import hashlib
import json

from kubesim_fixtures import wait_for
from test_machine_lifecycle import MODULE, calls, control_plane, run, voters

SNAPSHOT = "clusterapi.aws.capa_etcd_snapshot"
OWNER = "sigs.k8s.io/cluster-api-provider-aws/cluster/lrestore"


def test_a_snapshot_in_s3_restores_a_control_plane_that_lost_quorum(aws, kubesim, run_module, tmp_path):
    sim, group = control_plane(aws, kubesim, run_module, tmp_path, "lrestore")
    built = run(run_module, group, replicas=3)
    assert len(voters(sim)) == 3
    sim.etcd_kv(put={"/tests/before/a": "kept", "/tests/before/b": "kept too"})

    args = {
        "cluster_name": "lrestore",
        "endpoint": {"host": "127.0.0.1", "port": sim.port},
        "kubernetes_api": {"mode": "required"},
    }
    taken = run_module(SNAPSHOT, args)
    assert not taken.get("failed"), taken.get("msg")
    snapshot, bucket = taken["snapshot"], taken["bucket"]
    assert taken["changed"] and calls(taken)[-1] == "s3:PutObject"
    assert snapshot["member"] in voters(sim) and int(snapshot["revision"]) > 0
    assert [s["key"] for s in taken["snapshots"]] == [snapshot["key"]]

    # The bucket as AWS reports it, not as the module says it is.
    s3 = aws.client("s3")
    name = bucket["name"]
    rule = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert s3.get_bucket_versioning(Bucket=name)["Status"] == "Enabled"
    assert all(s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"].values())
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=name)["TagSet"]}
    assert tags[OWNER] == "owned"
    stored = s3.get_object(Bucket=name, Key=snapshot["key"], VersionId=snapshot["version_id"])
    body = stored["Body"].read()
    assert stored["ServerSideEncryption"] == "aws:kms" and len(body) == snapshot["size"]
    assert hashlib.sha256(body).hexdigest() == snapshot["sha256"]
    assert hashlib.sha256(body[:-32]).digest() == body[-32:]  # etcd's own digest, as etcdutl checks it
    assert body[:16].hex() not in json.dumps(taken) and "blob" not in json.dumps(taken)  # names only, no content

    again = run_module(SNAPSHOT, args)
    assert not again["changed"] and again["plan"] == [] and again["snapshot"] is None  # one is 0 minutes old
    sim.etcd_kv(put={"/tests/after": "not in the snapshot"})

    restore = {"bucket": name, "key": snapshot["key"], "version_id": snapshot["version_id"]}
    refused = run_module(MODULE, {**group, "replicas": 3, "initialize": True, "etcd_restore": restore})
    assert refused.get("failed") and "has quorum (3 of 3 etcd members answer)" in refused["msg"], refused.get("msg")
    assert refused.get("plan", []) == [] and len(voters(sim)) == 3

    # Two of three members die: etcd has lost quorum (writes fail), the third member still runs.
    for member in voters(sim)[:2]:
        sim.etcd_member(member, power="off")
    wait_for(lambda: not sim.etcd()["quorum"]["has_quorum"], 30, "etcd to lose quorum")

    restored = run(run_module, group, replicas=3, initialize=True, etcd_restore=restore)
    assert calls(restored).count("ec2:TerminateInstances") == 1 and calls(restored).count("ec2:RunInstances") == 1
    terminated = next(p for p in restored["plan"] if p["call"] == "ec2:TerminateInstances")
    assert "etcd restore from s3://" in terminated["reason"] and "etcd lost quorum" in terminated["reason"]
    (first,) = [m for m in restored["machines"] if m["state"] == "running"]
    assert {m["state"] for m in restored["machines"] if m is not first} == {"terminated"}
    assert first["name"] not in {m["name"] for m in built["machines"]}
    assert "X-Amz-Signature" not in json.dumps(restored)  # the snapshot URL is in the bootstrap data only
    assert len(voters(sim)) == 1
    values = sim.etcd_kv(get=["/tests/before/a", "/tests/before/b", "/tests/after"])
    assert values == {"/tests/before/a": "kept", "/tests/before/b": "kept too", "/tests/after": None}
    restores = [e for e in kubesim.journal(cluster="lrestore", source="node") if e["event"] == "etcd-snapshot-restore"]
    assert [e["rc"] for e in restores] == [0]

    assert run(run_module, group, replicas=3, initialize=True, etcd_restore=restore)["plan"] == []  # done already
    full = run(run_module, group, replicas=3)
    assert calls(full).count("ec2:RunInstances") == 2 and len(voters(sim)) == 3
    assert sim.etcd_kv(get=["/tests/before/a"]) == {"/tests/before/a": "kept"}
