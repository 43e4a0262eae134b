# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: bootstrap data kept out of EC2 user data (CAPA's secure secret backend).

The machine's cloud-init document (kubeadm certificates and tokens live in it) is gzipped and stored in
Secrets Manager (7000-byte binary chunks) or SSM Parameter Store (base64, 4000-byte SecureString chunks). EC2
user data only carries a MIME document with a boot hook that fetches the chunks with the AWS CLI, deletes them,
reassembles the document and restarts cloud-init, plus an include of the reassembled file. Where the entries
are is recorded on the instance in the tag :data:`BOOTSTRAP_TAG` so they can be deleted with the machine.
"""

from __future__ import annotations

import base64
import gzip
import uuid
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from typing import Any, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.errors import error_code
from ..aws.secretsmanager import delete_secret
from ..kernel.context import Context
from ..kernel.idempotency import new_client_token
from ..kernel.tags import dict_to_tags
from .machine_spec import BACKENDS, BOOTSTRAP_TAG, SECRETS_MANAGER, SSM, BootstrapRef

__all__ = ["BACKENDS", "BOOTSTRAP_TAG", "SECRETS_MANAGER", "SSM", "BootstrapRef"]

# Secrets Manager holds 10 KiB per secret once base64-encoded on the wire; SSM standard parameters 4 KiB.
SECRETS_MANAGER_CHUNK = 7000
SSM_CHUNK = 4000
SSM_DELETE_BATCH = 10  # DeleteParameters takes at most 10 names
MIME_BOUNDARY = "MIMEBOUNDARY"
USERDATA_FILE = "/etc/secret-userdata.txt"


# pure ------------------------------------------------------------------------------------------------------------
def compress(data: bytes) -> bytes:
    """gzip with a fixed timestamp, so the same document always gives the same bytes."""
    return gzip.compress(data, mtime=0)


def split(data: bytes | str, size: int) -> list[Any]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [data[:0]]


def chunks_for(backend: str, document: bytes) -> list[Any]:
    """The entries' contents: gzip chunks (Secrets Manager, binary) or base64 text chunks (SSM)."""
    packed = compress(document)
    if backend == SSM:
        return split(base64.b64encode(packed).decode("ascii"), SSM_CHUNK)
    return split(packed, SECRETS_MANAGER_CHUNK)


def new_prefix(backend: str, unique: uuid.UUID) -> str:
    # CAPA strips the leading "aws." for SSM, whose names are paths.
    return f"/cluster.x-k8s.io/{unique}" if backend == SSM else f"aws.cluster.x-k8s.io/{unique}"


def boot_script(region: str, ref: BootstrapRef, delete_after_fetch: bool = True) -> str:
    """The cloud boot hook: fetch, delete, reassemble, restart cloud-init. It holds no secret itself.

    ``delete_after_fetch=False`` is for entries shared by many machines (every instance of one launch template
    version boots from the same entries): the first node must not delete what the next one still needs; the
    module that owns the entries deletes them instead.
    """
    if ref.backend == SSM:
        fetch = (
            'aws ssm get-parameter --region "$REGION" --with-decryption --name "$PREFIX/$i"'
            ' --query Parameter.Value --output text >> "$FILE.b64"'
        )
        delete = 'aws ssm delete-parameter --region "$REGION" --name "$PREFIX/$i" || true'
        assemble = 'base64 -d "$FILE.b64" > "$FILE.gz"; rm -f "$FILE.b64"'
    else:
        fetch = (
            'aws secretsmanager get-secret-value --region "$REGION" --secret-id "$PREFIX-$i"'
            ' --query SecretBinary --output text | base64 -d >> "$FILE.gz"'
        )
        delete = (
            'aws secretsmanager delete-secret --region "$REGION" --force-delete-without-recovery'
            ' --secret-id "$PREFIX-$i" || true'
        )
        assemble = "true"
    deletes = f"for i in $(seq 0 $((CHUNKS - 1))); do\n  {delete}\ndone\n" if delete_after_fetch else ""
    return f"""#!/bin/bash
# clusterapi.aws boot hook: the bootstrap document waits in {ref.backend}, not in user data.
set -o nounset -o pipefail
umask 077
REGION="{region}"
PREFIX="{ref.prefix}"
CHUNKS={ref.count}
FILE="{USERDATA_FILE}"
# Boot hooks run on every boot; the document is fetched once.
if [ -f "$FILE" ]; then exit 0; fi
rm -f "$FILE.gz" "$FILE.b64"
for i in $(seq 0 $((CHUNKS - 1))); do
  ok=0
  for attempt in $(seq 1 10); do
    if {fetch}; then ok=1; break; fi
    echo "fetching bootstrap chunk $i failed (attempt $attempt), retrying in 10s" >&2
    sleep 10
  done
  if [ "$ok" != 1 ]; then echo "could not fetch bootstrap chunk $i" >&2; exit 1; fi
done
{deletes}{assemble}
gunzip -f "$FILE.gz"
systemctl restart cloud-init
"""


def user_data(script: str) -> str:
    """The MIME multipart/mixed document EC2 gets: the boot hook and an include of the fetched file."""
    document = MIMEMultipart("mixed", boundary=MIME_BOUNDARY)
    document.attach(MIMEText(script, "cloud-boothook", "us-ascii"))
    document.attach(MIMEText(f"file://{USERDATA_FILE}\n", "x-include-url", "us-ascii"))
    return document.as_string()


# AWS -------------------------------------------------------------------------------------------------------------
def store(
    ctx: Context,
    backend: str,
    machine_name: str,
    document: bytes,
    tags: Mapping[str, str],
    unique: uuid.UUID | None = None,
) -> BootstrapRef:
    """Store the document's chunks (check mode: only plans them) and return where they are."""
    parts = chunks_for(backend, document)
    ref = BootstrapRef(backend, new_prefix(backend, unique or uuid.uuid4()), len(parts))
    for index, (name, part) in enumerate(zip(ref.entry_names(), parts, strict=True)):
        if backend == SSM:
            _put_parameter(ctx, name, part, tags, machine_name)
        else:
            _create_secret(ctx, name, part, tags, machine_name, index)
    return ref


def _create_secret(
    ctx: Context, name: str, part: bytes, tags: Mapping[str, str], machine_name: str, index: int
) -> None:
    client = ctx.client("secretsmanager")
    params: dict[str, Any] = dict(
        Name=name,
        SecretBinary=part,
        ClientRequestToken=new_client_token(),
        Tags=dict_to_tags(tags),
        Description=f"bootstrap data of {machine_name}",
    )
    try:
        ctx.ops.call(client, "create_secret", resource=name, reason=f"bootstrap data of {machine_name}", **params)
    except botocore.exceptions.ClientError as e:
        if error_code(e) != "ResourceExistsException":
            raise
        # A leftover with this name (CAPA does the same): remove it for good and store ours.
        ctx.ops.call(
            client, "delete_secret", resource=name, reason="leftover", SecretId=name, ForceDeleteWithoutRecovery=True
        )
        ctx.ops.call(client, "create_secret", resource=name, reason=f"bootstrap data of {machine_name}", **params)


def _put_parameter(ctx: Context, name: str, part: str, tags: Mapping[str, str], machine_name: str) -> None:
    client = ctx.client("ssm")
    try:
        ctx.ops.call(
            client,
            "put_parameter",
            resource=name,
            reason=f"bootstrap data of {machine_name}",
            Name=name,
            Value=part,
            Type="SecureString",
            Tier="Standard",
            Tags=dict_to_tags(tags),
        )
    except botocore.exceptions.ClientError as e:
        if error_code(e) != "ParameterAlreadyExists":
            raise
        # Only after a retried request whose first answer was lost: the name carries a fresh uuid.
        ctx.ops.call(
            client,
            "put_parameter",
            resource=name,
            reason="retried",
            Name=name,
            Value=part,
            Type="SecureString",
            Overwrite=True,
        )


def unreferenced_secrets(
    ctx: Context, owner: Mapping[str, str], kept: set[str], marker: str | None = None, unmarked: str | None = None
) -> list[str]:
    """Secrets Manager entries carrying every tag of ``owner`` (and the tag key ``marker``, and not the tag key
    ``unmarked``, when given) whose name belongs to none of the ``kept`` prefixes: bootstrap data written by a run
    that died before what would read it was created (or after it was removed). One paginated ListSecrets."""
    filters = [{"Key": "tag-key", "Values": [next(iter(owner))]}]
    found = ctx.client("secretsmanager").paginate("list_secrets", Filters=filters).get("SecretList", [])
    stray = []
    for secret in found:
        tags = {t["Key"]: t["Value"] for t in secret.get("Tags", [])}
        if any(tags.get(k) != v for k, v in owner.items()):
            continue
        if (marker and marker not in tags) or (unmarked and unmarked in tags):
            continue
        if not any(secret["Name"].startswith(f"{prefix}-") for prefix in kept):
            stray.append(secret["Name"])
    return sorted(stray)


def delete_named(ctx: Context, names: list[str], reason: str) -> None:
    """Remove Secrets Manager entries by name; one already gone is fine."""
    for name in names:
        delete_secret(ctx, name, reason)


def delete(ctx: Context, ref: BootstrapRef, machine_name: str) -> None:
    """Remove a machine's entries; entries already gone (the node deletes them on boot) are fine."""
    reason = f"machine {machine_name} goes"
    if ref.backend == SSM:
        names = ref.entry_names()
        for start in range(0, len(names), SSM_DELETE_BATCH):
            batch = names[start : start + SSM_DELETE_BATCH]
            ctx.ops.call(ctx.client("ssm"), "delete_parameters", resource=batch[0], reason=reason, Names=batch)
        return
    delete_named(ctx, ref.entry_names(), reason)
