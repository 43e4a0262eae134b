# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of S3 (the bucket etcd snapshots are kept in) and the one presigned URL.

S3 has no single "describe bucket": each property is its own read, and "not configured" is an error code of its
own per property (``ServerSideEncryptionConfigurationNotFoundError``, ``NoSuchPublicAccessBlockConfiguration``,
``NoSuchLifecycleConfiguration``, ``NoSuchTagSet``). :func:`bucket_properties` turns each into ``None`` and
:func:`bucket_tags` a missing bucket into ``None``, so no tier decides that again.
"""

from __future__ import annotations

from typing import Any

from ..kernel.context import Context
from .errors import error_code

MISSING_BUCKET = ("NoSuchBucket",)
NOT_CONFIGURED = (
    "ServerSideEncryptionConfigurationNotFoundError",
    "NoSuchPublicAccessBlockConfiguration",
    "NoSuchLifecycleConfiguration",
    "NoSuchTagSet",
    "OwnershipControlsNotFoundError",
)


def _or_none(codes: tuple[str, ...], call: Any, **params: Any) -> Any:
    import botocore.exceptions  # the SDK is checked by AnsibleAWSModule before any tier runs

    try:
        return call(**params)
    except botocore.exceptions.ClientError as e:
        if error_code(e) in codes:
            return None
        raise


def bucket_tags(ctx: Context, bucket: str) -> dict[str, str] | None:
    """The bucket's tags (``{}`` without any), ``None`` when there is no such bucket. A bucket of another account
    answers AccessDenied, which is raised: its name is taken."""
    answer = _or_none(MISSING_BUCKET, _tags_or_empty, client=ctx.client("s3"), bucket=bucket)
    return None if answer is None else {t["Key"]: t["Value"] for t in answer}


def _tags_or_empty(client: Any, bucket: str) -> list[dict[str, str]]:
    answer = _or_none(("NoSuchTagSet",), client.get_bucket_tagging, Bucket=bucket)
    return [] if answer is None else answer.get("TagSet", [])


def bucket_properties(ctx: Context, bucket: str) -> dict[str, Any]:
    """What the etcd snapshot bucket must be, as the bucket is: four reads, each ``None`` when not configured."""
    client = ctx.client("s3")
    encryption = _or_none(NOT_CONFIGURED, client.get_bucket_encryption, Bucket=bucket)
    public = _or_none(NOT_CONFIGURED, client.get_public_access_block, Bucket=bucket)
    lifecycle = _or_none(NOT_CONFIGURED, client.get_bucket_lifecycle_configuration, Bucket=bucket)
    versioning = client.get_bucket_versioning(Bucket=bucket)
    return {
        "encryption": (encryption or {}).get("ServerSideEncryptionConfiguration", {}).get("Rules") or None,
        "public_access_block": (public or {}).get("PublicAccessBlockConfiguration"),
        "lifecycle": (lifecycle or {}).get("Rules") or None,
        "versioning": versioning.get("Status"),
    }


def object_versions(ctx: Context, bucket: str, prefix: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every version and delete marker under ``prefix``: one paginated ``ListObjectVersions``."""
    answer = ctx.client("s3").paginate("list_object_versions", Bucket=bucket, Prefix=prefix)
    return answer.get("Versions", []), answer.get("DeleteMarkers", [])


def head_object(ctx: Context, bucket: str, key: str, version_id: str | None) -> dict[str, Any] | None:
    """HeadObject's answer, ``None`` when the object (or that version) does not exist. A HEAD has no body: S3
    answers a missing object with a bare 404 (a malformed version id with 400), which carries no error code."""
    import botocore.exceptions

    params = {"Bucket": bucket, "Key": key, **({"VersionId": version_id} if version_id else {})}
    try:
        return dict(ctx.client("s3").head_object(**params))
    except botocore.exceptions.ClientError as e:
        if e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (400, 404):
            return None
        raise


def presigned_get(ctx: Context, bucket: str, key: str, version_id: str | None, expires_in: int) -> str:
    """A URL that reads one object version for ``expires_in`` seconds, signed locally (no request): a bearer
    credential, so it travels only inside bootstrap data."""
    params = {"Bucket": bucket, "Key": key}
    if version_id:
        params["VersionId"] = version_id
    return str(ctx.client("s3").raw.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in))
