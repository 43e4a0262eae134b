# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_etcd_snapshot's bucket and upload against in-process moto (the snapshot stream itself, from the simulator's
real etcd, is tests/integration/test_etcd_restore.py): the bucket is made what a backup store must be and a second
run writes nothing; a bucket the cluster does not own is refused before any write; state absent removes every
version; etcd's trailing sha256 is checked before anything is stored; a large snapshot goes up in parts."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "machines"))  # the tier runner of the golden tests
from test_golden_machines import CLUSTER, CREDENTIALS, REGION, run_tier  # noqa: E402

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import etcd_snapshot as es

BUCKET = "gold-etcd-snapshots-123456789012-us-east-1"
OWNER = {"Key": f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}", "Value": "owned"}
ARGS = {"endpoint": {"host": "api.gold.example.com"}}
WRITES = ("s3:Put", "s3:Create", "s3:Delete")


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("s3", region_name=REGION, **CREDENTIALS)


def sent_writes(args: dict[str, Any], check_mode: bool = False) -> tuple[list[str], dict[str, Any], list[str]]:
    sent: list[str] = []
    ctx, result = run_tier("capa_etcd_snapshot", args, record=lambda call, _p: sent.append(call), check_mode=check_mode)
    writes = [c for c in sent if c.startswith(WRITES)]
    return [p.call for p in ctx.ops.plan], result, writes


def existing_bucket(s3: Any, tags: list[dict[str, str]], snapshot: bool = True) -> None:
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": tags})
    if snapshot:
        s3.put_object(Bucket=BUCKET, Key="etcd/20261203T000000Z-r7.db", Body=b"x")


def test_check_mode_plans_the_whole_bucket_and_a_snapshot_and_sends_no_write(s3):
    plan, result, writes = sent_writes(ARGS, check_mode=True)
    assert plan == [
        "s3:CreateBucket",
        "s3:PutBucketEncryption",
        "s3:PutBucketVersioning",
        "s3:PutPublicAccessBlock",
        "s3:PutBucketLifecycleConfiguration",
        "s3:PutBucketTagging",
        "s3:PutObject",
    ]
    assert writes == [] and s3.list_buckets()["Buckets"] == []
    assert result["bucket"]["name"] == BUCKET and result["snapshot"] is None


def test_an_owned_bucket_is_made_a_backup_store_and_the_next_run_writes_nothing(s3):
    existing_bucket(s3, [OWNER])
    plan, result, _writes = sent_writes(ARGS)
    assert plan == [
        "s3:PutBucketEncryption",
        "s3:PutBucketVersioning",
        "s3:PutPublicAccessBlock",
        "s3:PutBucketLifecycleConfiguration",
        "s3:PutBucketTagging",
    ]  # a snapshot of this minute exists: none is due
    rule = s3.get_bucket_encryption(Bucket=BUCKET)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms"} and rule["BucketKeyEnabled"]
    assert s3.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled"
    assert all(s3.get_public_access_block(Bucket=BUCKET)["PublicAccessBlockConfiguration"].values())
    (lifecycle,) = s3.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]
    assert lifecycle["ID"] == es.RULE_ID and lifecycle["Expiration"] == {"Days": 30}
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=BUCKET)["TagSet"]}
    assert tags["sigs.k8s.io/cluster-api-provider-aws/role"] == "etcd-snapshots" and tags[OWNER["Key"]] == "owned"
    assert result["bucket"]["public_access_blocked"] and result["bucket"]["versioning"] == "Enabled"
    assert [s["key"] for s in result["snapshots"]] == ["etcd/20261203T000000Z-r7.db"]

    plan, again, writes = sent_writes(ARGS)
    assert plan == [] and writes == [] and again["bucket"] == result["bucket"]
    # A changed retention and key: only those properties are written.
    plan, _result, _writes = sent_writes({**ARGS, "retention_days": 90, "kms_key_id": "alias/etcd"})
    assert plan == ["s3:PutBucketEncryption", "s3:PutBucketLifecycleConfiguration"]


def test_a_bucket_the_cluster_does_not_own_is_refused_before_any_write(s3):
    existing_bucket(s3, [{"Key": "team", "Value": "storage"}])
    with pytest.raises(ReconcileError, match="without the ownership tag"):
        sent_writes(ARGS)
    assert s3.get_bucket_versioning(Bucket=BUCKET).get("Status") is None


def test_state_absent_removes_every_version_then_the_bucket(s3):
    existing_bucket(s3, [OWNER], snapshot=False)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"one", b"two"):
        s3.put_object(Bucket=BUCKET, Key="etcd/a.db", Body=body)
    s3.delete_object(Bucket=BUCKET, Key="etcd/a.db")  # a delete marker
    plan, result, _writes = sent_writes({"state": "absent"})
    assert plan == ["s3:DeleteObjects", "s3:DeleteBucket"] and result["bucket"] is None
    assert s3.list_buckets()["Buckets"] == []
    assert sent_writes({"state": "absent"})[0] == []  # gone: nothing to do


def test_spec_errors_come_before_any_request():
    def rejected(**params: Any) -> str:
        spec = es.SnapshotSpec.from_params(module_params(**params))
        with pytest.raises(SpecError) as raised:
            es.validate(spec, REGION)
        return raised.value.field

    assert rejected(bucket="Not_A_Bucket") == "bucket"
    assert rejected(retention_days=0) == "retention_days"
    assert rejected(last_snapshot_min_age=-1) == "last_snapshot_min_age"
    assert rejected(endpoint=None) == "endpoint"
    assert (
        rejected(control_plane_load_balancer={"type": "classic", "name": "gold-apiserver", "port": 6443}) == "endpoint"
    )
    assert rejected(kubernetes_api={"mode": "none"}) == "kubernetes_api.mode"
    long = es.SnapshotSpec.from_params(module_params(cluster_name="c" * 30))
    with pytest.raises(SpecError, match="longer than 63"):
        es.validate(long, REGION)


def module_params(**over: Any) -> dict[str, Any]:
    """capa_etcd_snapshot's parameters as its argument spec fills them in."""
    defaults = {
        "cluster_name": CLUSTER,
        "state": "present",
        "bucket": None,
        "kms_key_id": None,
        "retention_days": 30,
        "last_snapshot_min_age": 15,
        "endpoint": {"host": "api.gold.example.com", "port": 6443},
        "control_plane_load_balancer": None,
        "kubernetes_api": {},
    }
    return {**defaults, **over}


def snapshot_of(database: bytes, tail: bytes | None = None) -> es.SnapshotFile:
    snapshot = es.SnapshotFile()
    data = database + (hashlib.sha256(database).digest() if tail is None else tail)
    for start in range(0, len(data), 7):  # in odd pieces, as the stream brings them
        snapshot.write(data[start : start + 7])
    return snapshot


def test_a_snapshot_must_end_with_the_sha256_of_its_database():
    good = snapshot_of(b"bolt database" * 50)
    good.finish()
    good.remove()
    assert not Path(good.path).exists()
    broken = snapshot_of(b"bolt database" * 50, tail=b"\0" * 32)
    with pytest.raises(ReconcileError, match="does not end with the sha256"):
        broken.finish()
    broken.remove()


def test_a_snapshot_larger_than_a_part_is_uploaded_in_parts(s3, monkeypatch):
    """The multipart path (S3's smallest part is 5 MiB): the object that lands is the snapshot, SSE-KMS, tagged."""
    monkeypatch.setattr(es, "PART_SIZE", 5 * 1024 * 1024)
    existing_bucket(s3, [OWNER], snapshot=False)
    database = bytes(range(256)) * (11 * 4096)  # 11 MiB: three parts
    snapshot = snapshot_of(database)
    snapshot.finish()
    ctx = Context(session=AwsSession(REGION, None, dict(CREDENTIALS)), cluster=CLUSTER, check_mode=False)
    spec = es.SnapshotSpec.from_params(module_params(bucket=BUCKET))
    bucket = es.SnapshotBucket(ctx, spec)
    try:
        es._upload(ctx, bucket, "etcd/big.db", snapshot, {"etcd-revision": "9"}, "test")
    finally:
        snapshot.remove()
    assert [p.call for p in ctx.ops.plan] == [
        "s3:CreateMultipartUpload",
        "s3:UploadPart",
        "s3:UploadPart",
        "s3:UploadPart",
        "s3:CompleteMultipartUpload",
    ]
    stored = s3.get_object(Bucket=BUCKET, Key="etcd/big.db")
    assert stored["Body"].read() == database + hashlib.sha256(database).digest()
    assert stored["ServerSideEncryption"] == "aws:kms" and stored["Metadata"] == {"etcd-revision": "9"}
    tags = s3.get_object_tagging(Bucket=BUCKET, Key="etcd/big.db")["TagSet"]
    assert OWNER in tags
