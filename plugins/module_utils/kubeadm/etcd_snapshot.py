# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the ``capa_etcd_snapshot`` tier - etcd snapshots of a self-managed cluster, kept in an S3 bucket it owns.

The bucket (``<cluster>-etcd-snapshots-<account>-<region>`` unless named) is created with the cluster's ownership
tags and kept as a backup store must be: default encryption SSE-KMS (the AWS managed key ``aws/s3`` or
``kms_key_id``; S3 Bucket Keys on), versioning on, every public access blocked, objects owned by the bucket owner
(ACLs off), and one lifecycle rule of its own (current snapshots expire after ``retention_days``, overwritten or
deleted versions a day later, unfinished uploads after a day). A bucket of that name that the cluster does not own
is never changed: the run fails before writing anything into it.

A snapshot is taken the way the lifecycle code reaches etcd - a port-forward through the API server to the static
pod of one member (the leader when it answers), TLS with a client certificate minted from the etcd CA - as etcd's
``Maintenance.Snapshot`` stream, written to a private temporary file while its trailing sha256 (etcd appends one)
is checked, then uploaded SSE-KMS under ``etcd/<UTC time>-r<revision>.db`` (one ``PutObject``; multipart above
64 MiB) and the file removed. No byte of it ever reaches the module's result or log: the result names objects only.

``last_snapshot_min_age`` (minutes, amazon.aws's ``ec2_snapshot`` name) makes the module idempotent: a snapshot is
taken only when the newest is older, so a scheduled run (AWX) and the cluster's reconcile can share it.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import os
import tempfile
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from ..aws.elb import describe_load_balancer
from ..aws.elbv2 import describe_load_balancers_by_name
from ..aws.iam import caller_account
from ..aws.s3 import bucket_properties, bucket_tags, object_versions
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError, SpecError
from ..kernel.options import argument_spec as spec_of
from ..kernel.tags import is_owned, missing_tags, stale_tag_keys
from ..kernel.tier import Outcome
from ..workload.access import KUBERNETES_API, KubernetesAccess, KubernetesApiSettings
from ..workload.etcd import Etcd
from ..workload.kube import UNREACHABLE
from .pki import ClusterPki, load_cluster_pki

ROLE_ETCD_SNAPSHOTS = "etcd-snapshots"  # the bucket's role tag value
PREFIX = "etcd/"
RULE_ID = "clusterapi-aws-etcd-snapshots"
BUCKET_NAME_MAX = 63
RETENTION_DEFAULT = 30
MIN_AGE_DEFAULT = 15
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
# One PutObject up to this size; multipart above it (parts of this size, each held in memory once).
PART_SIZE = 64 * 1024 * 1024
SHA256_SIZE = 32
PUBLIC_ACCESS_BLOCK = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}


def default_bucket(cluster: str, account: str, region: str) -> str:
    return f"{cluster}-etcd-snapshots-{account}-{region}"


def snapshot_key(taken: datetime.datetime, revision: int | str) -> str:
    return f"{PREFIX}{taken.strftime('%Y%m%dT%H%M%SZ')}-r{revision}.db"


@dataclass(frozen=True)
class SnapshotSpec:
    cluster: str
    state: str
    bucket: str | None
    kms_key_id: str | None
    retention_days: int
    last_snapshot_min_age: int  # minutes
    endpoint_host: str | None
    endpoint_port: int
    kubernetes_api: KubernetesApiSettings
    # Instead of endpoint: the control-plane load balancer (type, name), whose DNS name is read (one describe).
    load_balancer: Mapping[str, Any] | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SnapshotSpec:
        """capa_etcd_snapshot's parameters, as its argument spec validated them (every default filled in)."""
        endpoint, balancer = params["endpoint"], params["control_plane_load_balancer"]
        given = endpoint or balancer
        return cls(
            cluster=params["cluster_name"],
            state=params["state"],
            bucket=params["bucket"],
            kms_key_id=params["kms_key_id"],
            retention_days=params["retention_days"],
            last_snapshot_min_age=params["last_snapshot_min_age"],
            endpoint_host=endpoint["host"] if endpoint else None,
            endpoint_port=given["port"] if given else 6443,
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
            load_balancer=balancer,
        )

    @classmethod
    def reading(cls, cluster: str, bucket: str | None) -> SnapshotSpec:
        """The bucket to read only (capa_etcd_snapshot_info): what the bucket is, with the module's defaults."""
        return cls(
            cluster, "present", bucket, None, RETENTION_DEFAULT, MIN_AGE_DEFAULT, None, 6443, KubernetesApiSettings()
        )


def validate(spec: SnapshotSpec, region: str | None) -> None:
    """Every rule before any request."""
    check_settings(spec, region)
    if spec.state != "present":
        return
    if bool(spec.endpoint_host) == bool(spec.load_balancer):
        raise SpecError(
            "endpoint",
            "give the control-plane endpoint or control_plane_load_balancer (one of them) with state present",
        )
    if spec.kubernetes_api.mode == "none":
        raise SpecError("kubernetes_api.mode", "a snapshot is taken through the Kubernetes API: none cannot take one")
    spec.kubernetes_api.validate()


def check_settings(spec: SnapshotSpec, region: str | None, where: str = "") -> None:
    """The bucket and retention rules the module and the cluster spec's ``etcd_backup`` share (``where``: the
    field prefix of the cluster spec)."""
    if spec.bucket is not None:
        check_bucket_name(spec.bucket, f"{where}bucket")
    elif len(default_bucket(spec.cluster, "0" * 12, region or "")) > BUCKET_NAME_MAX:
        raise SpecError(
            f"{where}bucket",
            f"the default name {default_bucket(spec.cluster, '<account>', region or '')} is longer than "
            f"{BUCKET_NAME_MAX} characters: name the bucket",
        )
    if not 1 <= spec.retention_days <= 3650:
        raise SpecError(f"{where}retention_days", "must be between 1 and 3650")
    if spec.last_snapshot_min_age < 0:
        raise SpecError(f"{where}last_snapshot_min_age", "must not be negative")
    if spec.kms_key_id is not None and not spec.kms_key_id.strip():
        raise SpecError(f"{where}kms_key_id", "must not be empty (leave it unset for the AWS managed key aws/s3)")


def check_bucket_name(name: str, where: str) -> None:
    """S3's naming rules for general purpose buckets (the ones a wrong name trips over)."""
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
    if not 3 <= len(name) <= BUCKET_NAME_MAX or set(name) - allowed:
        raise SpecError(where, f"'{name}' is not a bucket name: 3 to 63 lowercase letters, digits, dots and hyphens")
    if not (name[0].isalnum() and name[-1].isalnum()) or ".." in name:
        raise SpecError(where, f"'{name}' must start and end with a letter or digit, without '..'")


# the bucket -------------------------------------------------------------------------------------------------------
def encryption_rules(kms_key_id: str | None) -> list[dict[str, Any]]:
    default: dict[str, Any] = {"SSEAlgorithm": "aws:kms"}
    if kms_key_id:
        default["KMSMasterKeyID"] = kms_key_id
    return [{"ApplyServerSideEncryptionByDefault": default, "BucketKeyEnabled": True}]


def lifecycle_rule(retention_days: int) -> dict[str, Any]:
    return {
        "ID": RULE_ID,
        "Filter": {"Prefix": PREFIX},
        "Status": "Enabled",
        "Expiration": {"Days": retention_days},
        "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
    }


def property_drift(current: Mapping[str, Any], spec: SnapshotSpec) -> list[str]:
    """The bucket properties that differ from what a snapshot bucket must be (pure)."""
    drift = []
    rules = current.get("encryption") or []
    default = (rules[0] if rules else {}).get("ApplyServerSideEncryptionByDefault") or {}
    if default.get("SSEAlgorithm") != "aws:kms" or default.get("KMSMasterKeyID") != spec.kms_key_id:
        drift.append("encryption")
    if current.get("versioning") != "Enabled":
        drift.append("versioning")
    block = current.get("public_access_block") or {}
    if any(block.get(k) is not True for k in PUBLIC_ACCESS_BLOCK):
        drift.append("public_access_block")
    ours = next((r for r in current.get("lifecycle") or [] if r.get("ID") == RULE_ID), None)
    if ours is None or not _same_rule(ours, lifecycle_rule(spec.retention_days)):
        drift.append("lifecycle")
    return drift


def _same_rule(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return all(current.get(k) == v for k, v in desired.items())


class SnapshotBucket:
    """The cluster's snapshot bucket: read once per run, brought to what it must be through ``ctx.ops``."""

    def __init__(self, ctx: Context, spec: SnapshotSpec) -> None:
        self.ctx, self.spec = ctx, spec
        self.name = spec.bucket or default_bucket(ctx.cluster, caller_account(ctx), ctx.region or "")
        self.client = ctx.client("s3")
        self.tags = bucket_tags(ctx, self.name)
        self.properties: dict[str, Any] = {}
        if self.exists:
            self.properties = bucket_properties(ctx, self.name)

    @property
    def exists(self) -> bool:
        return self.tags is not None

    @property
    def owned(self) -> bool:
        return is_owned(self.tags, self.ctx.cluster)

    def ensure(self) -> None:
        if not self.exists:
            self._create()
        elif not self.owned:
            raise ReconcileError(
                f"bucket {self.name} exists without the ownership tag of cluster {self.ctx.cluster}: snapshots go "
                "only to a bucket the cluster owns (name another with bucket)"
            )
        for what in property_drift(self.properties, self.spec):
            self._put(what)
        self._tag()

    def _create(self) -> None:
        params: dict[str, Any] = {"Bucket": self.name, "ObjectOwnership": "BucketOwnerEnforced"}
        if self.ctx.region and self.ctx.region != "us-east-1":
            params["CreateBucketConfiguration"] = {"LocationConstraint": self.ctx.region}
        self.ctx.ops.call(self.client, "create_bucket", resource=self.name, reason="missing", predicted={}, **params)
        self.tags, self.properties = {}, {}

    def _put(self, what: str) -> None:
        """Write one property (``what``, a key of :func:`property_drift`'s answer) as the bucket must have it."""
        value, method, label, request = self._desired(what)
        reason = "missing" if not self.properties.get(what) else "differs"
        self.ctx.ops.call(
            self.client, method, resource=self.name, reason=f"{label} {reason}", Bucket=self.name, **request
        )
        self.properties[what] = value

    def _desired(self, what: str) -> tuple[Any, str, str, dict[str, Any]]:
        """(the property as read back, the write, its label, its request) for ``what``."""
        if what == "encryption":
            rules = encryption_rules(self.spec.kms_key_id)
            return rules, "put_bucket_encryption", "SSE-KMS", {"ServerSideEncryptionConfiguration": {"Rules": rules}}
        if what == "versioning":
            return "Enabled", "put_bucket_versioning", "versioning", {"VersioningConfiguration": {"Status": "Enabled"}}
        if what == "public_access_block":
            block = dict(PUBLIC_ACCESS_BLOCK)
            return block, "put_public_access_block", "public access block", {"PublicAccessBlockConfiguration": block}
        # Other rules someone added to the bucket stay; ours is replaced.
        rules = [r for r in self.properties.get("lifecycle") or [] if r.get("ID") != RULE_ID]
        rules.append(lifecycle_rule(self.spec.retention_days))
        return (
            rules,
            "put_bucket_lifecycle_configuration",
            "retention rule",
            {"LifecycleConfiguration": {"Rules": rules}},
        )

    def _tag(self) -> None:
        """PutBucketTagging replaces the whole set: one call with what stays, what is missing and nothing stale."""
        current = dict(self.tags or {})
        desired = self.ctx.tags(ROLE_ETCD_SNAPSHOTS, self.name)
        stale, todo = stale_tag_keys(current, desired), missing_tags(current, desired)
        if not stale and not todo:
            return
        tags = {**{k: v for k, v in current.items() if k not in stale}, **todo}
        reason = "tags differ: " + ", ".join(sorted([*todo, *stale]))
        self.ctx.ops.call(
            self.client,
            "put_bucket_tagging",
            resource=self.name,
            reason=reason,
            Bucket=self.name,
            Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]},
        )
        self.tags = tags

    def snapshots(self) -> list[dict[str, Any]]:
        """The current snapshots, newest first: one ``ListObjectVersions`` of ``etcd/`` (none without the bucket)."""
        return snapshot_views(object_versions(self.ctx, self.name, PREFIX)[0]) if self.exists else []

    def delete(self) -> None:
        """Every version and delete marker (1,000 per ``DeleteObjects``), then the bucket."""
        versions, markers = object_versions(self.ctx, self.name, "")
        entries = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions + markers]
        for start in range(0, len(entries), 1000):
            batch = entries[start : start + 1000]
            self.ctx.ops.call(
                self.client,
                "delete_objects",
                resource=self.name,
                reason=f"state absent: {len(batch)} object versions",
                Bucket=self.name,
                Delete={"Objects": batch, "Quiet": True},
            )
        self.ctx.ops.call(self.client, "delete_bucket", resource=self.name, reason="state absent", Bucket=self.name)

    def view(self) -> dict[str, Any]:
        rules = self.properties.get("encryption") or []
        default = (rules[0] if rules else {}).get("ApplyServerSideEncryptionByDefault") or {}
        ours: dict[str, Any] = next((r for r in self.properties.get("lifecycle") or [] if r.get("ID") == RULE_ID), {})
        block = self.properties.get("public_access_block") or {}
        return {
            "name": self.name,
            "arn": f"arn:aws:s3:::{self.name}",
            "owned": self.owned if self.exists else True,
            "encryption": default.get("SSEAlgorithm"),
            "kms_key_id": default.get("KMSMasterKeyID"),
            "versioning": self.properties.get("versioning"),
            "public_access_blocked": bool(block) and all(block.get(k) is True for k in PUBLIC_ACCESS_BLOCK),
            "retention_days": (ours.get("Expiration") or {}).get("Days"),
            "tags": dict(self.tags or {}),
        }


# snapshots -------------------------------------------------------------------------------------------------------
def snapshot_views(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The current snapshots, newest first (names and sizes only: never their content)."""
    current = [v for v in versions if v.get("IsLatest") and v["Key"].endswith(".db")]
    current.sort(key=lambda v: v["LastModified"], reverse=True)
    return [
        {
            "key": v["Key"],
            "version_id": v.get("VersionId"),
            "size": v.get("Size"),
            "last_modified": _iso(v["LastModified"]),
        }
        for v in current
    ]


def _iso(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def newest_age_minutes(snapshots: list[dict[str, Any]], now: datetime.datetime) -> float | None:
    if not snapshots:
        return None
    newest = datetime.datetime.strptime(snapshots[0]["last_modified"], "%Y-%m-%dT%H:%M:%SZ")
    return (now - newest.replace(tzinfo=datetime.timezone.utc)).total_seconds() / 60


class SnapshotFile:
    """A private temporary file the snapshot streams into, checking etcd's trailing sha256 on the way (etcd
    appends the digest of the database to every snapshot it sends; ``etcdutl snapshot restore`` checks it too)."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="capa-etcd-", suffix=".db")  # mode 0600
        self.out = os.fdopen(fd, "wb")
        self.database = hashlib.sha256()  # everything but the last 32 bytes
        self.whole = hashlib.sha256()
        self.tail = b""
        self.size = 0

    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.whole.update(data)
        self.size += len(data)
        combined = self.tail + data
        self.database.update(combined[:-SHA256_SIZE])
        self.tail = combined[-SHA256_SIZE:]

    def finish(self) -> None:
        self.out.close()
        if self.size <= SHA256_SIZE or self.database.digest() != self.tail:
            raise ReconcileError(
                f"the etcd snapshot ({self.size} bytes) does not end with the sha256 of its database: it broke off "
                "or was corrupted on the way; nothing was stored"
            )

    def chunks(self) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            while True:
                data = f.read(PART_SIZE)
                if not data:
                    return
                yield data

    def remove(self) -> None:
        if not self.out.closed:
            self.out.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


@dataclass(frozen=True)
class Taken:
    key: str
    version_id: str | None
    size: int
    sha256: str
    revision: str
    member: str
    stored: str  # when it was uploaded (UTC), as the listing says last_modified

    def listing(self) -> dict[str, Any]:
        """The snapshot as the bucket's listing shows it."""
        return {"key": self.key, "version_id": self.version_id, "size": self.size, "last_modified": self.stored}

    def view(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "version_id": self.version_id,
            "size": self.size,
            "sha256": self.sha256,
            "revision": self.revision,
            "member": self.member,
        }


def take_snapshot(ctx: Context, spec: SnapshotSpec, bucket: SnapshotBucket, reason: str) -> Taken | None:
    """Stream a snapshot of one member into the bucket; check mode plans the upload and reads nothing of etcd."""
    if ctx.check_mode:
        ctx.ops.call(bucket.client, "put_object", resource=f"{bucket.name}/{PREFIX}", reason=reason, predicted={})
        return None
    pki = load_cluster_pki(ctx, ctx.cluster)
    access = _open(ctx, spec, pki)
    snapshot = SnapshotFile()
    try:
        etcd, node = _member_to_snapshot(access)
        status = etcd.member_status(node)
        revision = str((status.get("header") or {}).get("revision", "0"))
        etcd.snapshot(node, snapshot.write)
        snapshot.finish()
        taken_at = datetime.datetime.now(datetime.timezone.utc)
        key = snapshot_key(taken_at, revision)
        metadata = {"etcd-revision": revision, "etcd-member": node, "sha256": snapshot.whole.hexdigest()}
        version = _upload(ctx, bucket, key, snapshot, metadata, reason)
    except RemoteError as e:
        if e.code == UNREACHABLE and spec.kubernetes_api.mode != "required":
            # kubernetes_api.mode auto, as every module: without the API the run goes on, and says so.
            ctx.warn(f"no etcd snapshot was taken: the Kubernetes API does not answer ({e})")
            return None
        raise ReconcileError(f"no etcd snapshot was taken: {e}") from None
    finally:
        snapshot.remove()
        access.close()
    return Taken(key, version, snapshot.size, snapshot.whole.hexdigest(), revision, node, _iso(taken_at))


def control_plane_host(ctx: Context, spec: SnapshotSpec) -> str:
    """The endpoint's host: given, or the DNS name of the control-plane load balancer (one describe)."""
    if spec.endpoint_host:
        return spec.endpoint_host
    balancer = spec.load_balancer or {}
    name = balancer["name"]
    if balancer["type"] == "nlb":
        found = describe_load_balancers_by_name(ctx, [name]).get(name)
    else:  # classic, or an external classic load balancer brought by name
        found = describe_load_balancer(ctx, name)
    if not found or not found.get("DNSName"):
        raise ReconcileError(f"control_plane_load_balancer {name} does not exist (or has no DNS name yet)")
    return str(found["DNSName"])


def _open(ctx: Context, spec: SnapshotSpec, pki: ClusterPki) -> KubernetesAccess:
    return KubernetesAccess.open(
        ctx,
        spec.kubernetes_api,
        endpoint_host=control_plane_host(ctx, spec),
        endpoint_port=spec.endpoint_port,
        cluster_ca=pki.cluster_ca,
        etcd_ca_certificate=pki.etcd_ca_cert,
        etcd_ca_key=pki.etcd_ca_key,
    )


def _member_to_snapshot(access: KubernetesAccess) -> tuple[Etcd, str]:
    """The leader's member when it answers (the freshest data, as etcd-manager takes it), else the one that did."""
    if access.api is None or access.etcd is None:
        raise RemoteError(UNREACHABLE, access.reason or "the Kubernetes API is not reachable")
    nodes = [
        n["metadata"]["name"]
        for n in access.api.nodes()
        if CONTROL_PLANE_LABEL in ((n.get("metadata") or {}).get("labels") or {})
    ]
    status = access.etcd.status(sorted(nodes))
    leader = status.leader
    if leader is not None and leader.name in nodes:
        return access.etcd, leader.name
    return access.etcd, status.via


def _upload(
    ctx: Context, bucket: SnapshotBucket, key: str, snapshot: SnapshotFile, metadata: dict[str, str], reason: str
) -> str | None:
    """One ``PutObject`` (parts of :data:`PART_SIZE` above it), SSE-KMS, tagged as the cluster's; the version id."""
    encryption: dict[str, Any] = {"ServerSideEncryption": "aws:kms", "BucketKeyEnabled": True}
    if bucket.spec.kms_key_id:
        encryption["SSEKMSKeyId"] = bucket.spec.kms_key_id
    tagging = urllib.parse.urlencode(ctx.tags(ROLE_ETCD_SNAPSHOTS, None))
    common = {"Bucket": bucket.name, "Key": key, "Metadata": metadata, "Tagging": tagging, **encryption}
    ops, client = ctx.ops, bucket.client
    if snapshot.size <= PART_SIZE:
        body = next(snapshot.chunks())
        checksum = base64.b64encode(hashlib.sha256(body).digest()).decode()
        answer = ops.call(
            client, "put_object", resource=key, reason=reason, Body=body, ChecksumSHA256=checksum, **common
        )
        return answer.get("VersionId")
    started = ops.call(client, "create_multipart_upload", resource=key, reason=reason, **common)
    upload_id = started["UploadId"]
    try:
        parts = []
        for number, body in enumerate(snapshot.chunks(), start=1):
            answer = ops.call(
                client,
                "upload_part",
                resource=key,
                reason=f"part {number}",
                Bucket=bucket.name,
                Key=key,
                UploadId=upload_id,
                PartNumber=number,
                Body=body,
            )
            parts.append({"ETag": answer["ETag"], "PartNumber": number})
        done = ops.call(
            client,
            "complete_multipart_upload",
            resource=key,
            reason=f"{len(parts)} parts",
            Bucket=bucket.name,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": parts},
        )
    except Exception:
        # An unfinished upload would otherwise hold its parts until the lifecycle rule aborts it a day later.
        ops.call(
            client,
            "abort_multipart_upload",
            resource=key,
            reason="upload failed",
            Bucket=bucket.name,
            Key=key,
            UploadId=upload_id,
        )
        raise
    return done.get("VersionId")


# the tier ---------------------------------------------------------------------------------------------------------
class EtcdSnapshotTier:
    def parse(self, params: Mapping[str, Any]) -> SnapshotSpec:
        return SnapshotSpec.from_params(params)

    def validate(self, spec: SnapshotSpec, region: str | None) -> None:
        validate(spec, region)

    def reconcile(self, ctx: Context, spec: SnapshotSpec) -> Outcome:
        bucket = SnapshotBucket(ctx, spec)
        snapshots = bucket.snapshots()
        before = {"bucket": bucket.view() if bucket.exists else None, "snapshots": snapshots}
        if spec.state == "absent":
            if bucket.exists and bucket.owned:
                bucket.delete()
            elif bucket.exists:
                ctx.warn(f"bucket {bucket.name} is not owned by cluster {ctx.cluster}; left alone")
            return Outcome(before, {"bucket": None, "snapshot": None, "snapshots": []})
        bucket.ensure()
        age = newest_age_minutes(snapshots, datetime.datetime.now(datetime.timezone.utc))
        taken = None
        if age is None or age >= spec.last_snapshot_min_age:
            reason = (
                "no snapshot yet"
                if age is None
                else (f"newest snapshot is {age:.0f} min old (last_snapshot_min_age {spec.last_snapshot_min_age})")
            )
            taken = take_snapshot(ctx, spec, bucket, reason)
        if taken is not None:  # what the upload answered: no second listing
            snapshots = [taken.listing(), *(s for s in snapshots if s["key"] != taken.key)]
        return Outcome(
            before,
            {"bucket": bucket.view(), "snapshot": taken.view() if taken else None, "snapshots": snapshots},
        )


def argument_spec() -> dict[str, Any]:
    """``capa_etcd_snapshot``'s options (its DOCUMENTATION says the same; validate-modules compares them)."""
    return dict(
        bucket=dict(type="str"),
        kms_key_id=dict(type="str"),
        retention_days=dict(type="int", default=RETENTION_DEFAULT),
        last_snapshot_min_age=dict(type="int", default=MIN_AGE_DEFAULT),
        endpoint=dict(
            type="dict",
            options=dict(host=dict(type="str", required=True), port=dict(type="int", default=6443)),
        ),
        control_plane_load_balancer=dict(
            type="dict",
            options=dict(
                type=dict(type="str", required=True, choices=["classic", "nlb", "external"]),
                name=dict(type="str", required=True),
                port=dict(type="int", default=6443),
            ),
        ),
        **spec_of([KUBERNETES_API]),
    )
