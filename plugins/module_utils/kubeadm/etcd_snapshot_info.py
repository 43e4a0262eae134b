# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the ``capa_etcd_snapshot_info`` tier - the cluster's snapshot bucket and its snapshots, read only.

The same bucket ``capa_etcd_snapshot`` keeps (``etcd_snapshot.py``): its tags and properties (four reads) and one
paginated ``ListObjectVersions`` of ``etcd/``. What a restore picks from (``playbooks/restore.yml``).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..kernel.context import Context
from ..kernel.tier import Outcome
from .etcd_snapshot import SnapshotBucket, SnapshotSpec, check_settings


class EtcdSnapshotInfoTier:
    def parse(self, params: Mapping[str, Any]) -> SnapshotSpec:
        return SnapshotSpec.reading(params["cluster_name"], params["bucket"])

    def validate(self, spec: SnapshotSpec, region: str | None) -> None:
        check_settings(spec, region)

    def reconcile(self, ctx: Context, spec: SnapshotSpec) -> Outcome:
        bucket = SnapshotBucket(ctx, spec)
        return Outcome(None, {"bucket": bucket.view() if bucket.exists else None, "snapshots": bucket.snapshots()})


def argument_spec() -> dict[str, Any]:
    """``capa_etcd_snapshot_info``'s options (its DOCUMENTATION says the same)."""
    return dict(bucket=dict(type="str"))
