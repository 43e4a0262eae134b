# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: bringing back a control plane that lost etcd quorum, from a snapshot (``capa_etcd_snapshot``).

Cluster API's "bricked control plane" story, done the way kubeadm documents a restore: every control-plane machine
goes (a member that lost quorum cannot be repaired one machine at a time: KCP's remediation refuses exactly that),
then a new first machine restores the snapshot into the data directory of its local etcd - as the one member of a
new etcd cluster - before ``kubeadm init`` runs, so init starts etcd on the restored data; the rest of the control
plane joins it afterwards through the normal etcd-safe scale-up (the full reconcile of the group).

The order is what keeps it safe:

1. before anything changes: the snapshot object must exist (``HeadObject``), and etcd must have lost quorum - a
   control plane whose members still answer in a majority is refused (a restore would roll the cluster's state
   back to the snapshot) unless ``etcd_restore.force``;
2. the group's machines are deregistered from the load balancer, terminated, and waited for until they are gone
   (a member left running could answer the new cluster's peers with the old cluster's data);
3. the first machine launches with a presigned URL of the snapshot (valid :data:`URL_TTL`), which travels only in
   its bootstrap data (Secrets Manager), and carries the tag :data:`RESTORED_TAG` naming the snapshot - how a later
   run with the same ``etcd_restore`` knows the restore is done (it then changes nothing).

What comes back is what etcd held: every Kubernetes object as of the snapshot. What does not: data on volumes (EBS,
EFS), objects created after the snapshot, and machines the snapshot's Node objects name but that are gone (their
Nodes are removed by the cloud controller manager).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..aws.s3 import head_object, presigned_get
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.options import Option
from ..workload.observe import Workload
from .plan import Machine

RESTORED_TAG = "clusterapi.aws/etcd-restored-from"
URL_TTL = 3600  # seconds the snapshot URL in the first machine's bootstrap data can be used
TAG_VALUE_MAX = 256

ETCD_RESTORE = Option(
    "etcd_restore",
    [
        "Control plane with I(initialize=true) only: rebuild a control plane that lost etcd quorum from this snapshot "
        "(see M(clusterapi.aws.capa_etcd_snapshot)). Refused, before any change, while a majority of etcd members "
        "answer (unless I(etcd_restore.force)). Otherwise every machine of the group is terminated and a first "
        "machine restores the snapshot before C(kubeadm init); a later full reconcile of the group joins the rest.",
        "A run with the same snapshot once the restored machine exists changes nothing (its instance tag "
        "C(clusterapi.aws/etcd-restored-from) names the snapshot).",
    ],
    type="dict",
    options=(
        Option("bucket", "The snapshot bucket.", required=True),
        Option(
            "key",
            "The snapshot's object key (C(snapshots[].key) of the snapshot module).",
            required=True,
            no_log=False,
        ),
        Option("version_id", "The object version (default: the current one)."),
        Option(
            "force",
            "Restore even though etcd keeps quorum: every control-plane machine is replaced and the cluster's state "
            "goes back to the snapshot (a rollback after an accidental deletion).",
            type="bool",
            default=False,
        ),
    ),
)


@dataclass(frozen=True)
class EtcdRestore:
    bucket: str
    key: str
    version_id: str | None = None
    force: bool = False

    @classmethod
    def from_params(cls, value: Mapping[str, Any] | None) -> EtcdRestore | None:
        if not value:
            return None
        return cls(value["bucket"], value["key"], value.get("version_id") or None, bool(value.get("force")))

    @property
    def source(self) -> str:
        """The snapshot as the restored machine's tag names it."""
        version = f"?versionId={self.version_id}" if self.version_id else ""
        return f"s3://{self.bucket}/{self.key}{version}"

    def validate(self, *, control_plane: bool, kubeadm: bool, initialize: bool) -> None:
        if not (control_plane and kubeadm):
            raise SpecError("etcd_restore", "is for a kubeadm control plane (role control-plane, bootstrap kubeadm)")
        if not initialize:
            raise SpecError(
                "etcd_restore", "needs initialize: true (the restore brings back the first machine; the rest join)"
            )
        if not self.bucket or not self.key:
            raise SpecError("etcd_restore", "names a bucket and a key")
        if len(self.source) > TAG_VALUE_MAX:
            raise SpecError("etcd_restore", f"{self.source} is longer than a tag value ({TAG_VALUE_MAX})")

    # AWS ------------------------------------------------------------------------------------------------------------
    def done(self, machines: list[Machine]) -> bool:
        """A machine restored from this snapshot is there: the restore happened in an earlier run."""
        return any(m.tags.get(RESTORED_TAG) == self.source and not m.leaving for m in machines)

    def check_snapshot(self, ctx: Context) -> None:
        """The snapshot must exist before anything is terminated for it (one ``HeadObject``)."""
        if head_object(ctx, self.bucket, self.key, self.version_id) is None:
            raise ReconcileError(f"etcd_restore: snapshot {self.source} does not exist; nothing was changed")

    def url(self, ctx: Context) -> str:
        return presigned_get(ctx, self.bucket, self.key, self.version_id, URL_TTL)


def quorum_kept(workload: Workload | None) -> str | None:
    """Why etcd still has quorum (a majority of its voting members answer), or ``None`` when it has lost it or
    cannot be reached at all."""
    if workload is None or not workload.reachable or workload.etcd is None:
        return None
    status = workload.etcd
    voters = [m for m in status.members if m.started and not m.is_learner]
    healthy = [m for m in voters if m.name not in status.unanswered and not status.alarms.get(m.id)]
    if voters and len(healthy) >= len(voters) // 2 + 1:
        return f"{len(healthy)} of {len(voters)} etcd members answer"
    return None
