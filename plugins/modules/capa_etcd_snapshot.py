#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_etcd_snapshot
short_description: Snapshot a self-managed cluster's etcd into an encrypted S3 bucket the cluster owns
version_added: 0.2.0
description:
  - Keeps the cluster's snapshot bucket - named C(<cluster_name>-etcd-snapshots-<account>-<region>) unless I(bucket)
    names it - as a backup store must be, creating it with the cluster's ownership tags (role C(etcd-snapshots)) -
    default encryption SSE-KMS with S3 Bucket Keys (the AWS managed key C(aws/s3), or I(kms_key_id)), versioning,
    every public access blocked, ACLs off (C(BucketOwnerEnforced)), and a lifecycle rule of its own - current
    snapshots expire after I(retention_days), replaced or deleted versions a day later, unfinished uploads after a
    day. Other lifecycle rules of the bucket are kept.
  - Takes a snapshot when the newest one is older than I(last_snapshot_min_age) minutes (or there is none) - etcd's
    C(Maintenance.Snapshot), reached the way the machine modules reach etcd, through a port-forward to the etcd
    static pod of the leader (or another member that answers) with a client certificate minted for the run from the
    etcd CA. The stream goes to a private temporary file while etcd's trailing sha256 is checked, then to
    C(etcd/<UTC time>-r<revision>.db) in the bucket, SSE-KMS, with the revision, member and sha256 as object
    metadata; the file is removed. A snapshot that breaks off or fails its check is never stored.
  - Runnable on every reconcile, on a schedule (an AWX schedule; the collection's AWX content has one every 15 minutes)
    or ad hoc - I(last_snapshot_min_age) keeps them from piling up, and C(0) takes one every run.
  - Returns names, sizes and versions only; no byte of a snapshot appears in the result or the log.
  - A bucket of that name the cluster does not own is never changed; the run fails before any write.
  - C(state=absent) deletes every snapshot (all versions) and the bucket, when the cluster owns it. The cluster role
    does this only when the cluster spec's C(etcd_backup.delete_with_cluster) is true.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  bucket:
    description:
      - The bucket, when not the default C(<cluster_name>-etcd-snapshots-<account>-<region>) (its name must then fit
        in 63 characters).
    type: str
  kms_key_id:
    description:
      - The KMS key (id, ARN or alias ARN) the bucket's default encryption and every snapshot use. Unset - the AWS
        managed key C(aws/s3).
    type: str
  retention_days:
    description: Days a snapshot is kept (the bucket's lifecycle rule; between 1 and 3650).
    type: int
    default: 30
  last_snapshot_min_age:
    description:
      - Take a snapshot only when the newest one is at least this many minutes old (as amazon.aws's ec2_snapshot).
        C(0) takes one on every run (such a run always reports C(changed)).
    type: int
    default: 15
  endpoint:
    description:
      - The control-plane endpoint (the load balancer), as M(clusterapi.aws.capa_elb) returns it. One of this and
        I(control_plane_load_balancer) is required with C(state=present).
    type: dict
    suboptions:
      host:
        description: DNS name or address of the endpoint.
        type: str
        required: true
      port:
        description: Port of the endpoint.
        type: int
        default: 6443
  control_plane_load_balancer:
    description:
      - Instead of I(endpoint) - the control-plane load balancer, whose DNS name the run reads (one describe
        request). What a scheduled job that knows the cluster spec but not the endpoint gives
        (C(playbooks/etcd_snapshot.yml)). One of I(endpoint) and this is required with C(state=present).
    type: dict
    suboptions:
      type:
        description: C(classic) or C(external) (a classic load balancer by name), or C(nlb).
        type: str
        required: true
        choices: [classic, nlb, external]
      name:
        description: Its name.
        type: str
        required: true
      port:
        description: The API server port behind it.
        type: int
        default: 6443
notes:
  - The snapshot holds every Secret of the cluster. Who may read the bucket's objects (and decrypt with its key) may
    read them; grant it as you grant the cluster's admin kubeconfig.
  - Snapshots up to 64 MiB are one C(PutObject); larger ones are uploaded in 64 MiB parts (an upload that fails is
    aborted).
  - Restore with the C(playbooks/restore.yml) playbook (or M(clusterapi.aws.capa_instance)'s I(etcd_restore)).
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.kubernetes_api
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: A snapshot of cluster demo's etcd, unless one was taken in the last 15 minutes
  clusterapi.aws.capa_etcd_snapshot:
    cluster_name: demo
    endpoint:
      host: "{{ control_plane_lb.load_balancer.dns_name }}"
  register: backup

- name: Ad hoc, before a risky change, kept for 90 days under a key of our own
  clusterapi.aws.capa_etcd_snapshot:
    cluster_name: demo
    endpoint:
      host: api.demo.example.com
    kms_key_id: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab
    retention_days: 90
    last_snapshot_min_age: 0

- name: Delete the bucket with every snapshot in it
  clusterapi.aws.capa_etcd_snapshot:
    cluster_name: demo
    state: absent
"""

RETURN = r"""
bucket:
  description: The snapshot bucket as it is after the run; C(null) after deletion.
  returned: always
  type: dict
  contains:
    name:
      description: Bucket name.
      type: str
      sample: demo-etcd-snapshots-123456789012-us-east-1
    arn:
      description: Bucket ARN.
      type: str
      sample: arn:aws:s3:::demo-etcd-snapshots-123456789012-us-east-1
    owned:
      description: Whether the cluster owns it (tagged with its ownership tag).
      type: bool
      sample: true
    encryption:
      description: The default encryption algorithm.
      type: str
      sample: aws:kms
    kms_key_id:
      description: The default encryption's KMS key; C(null) for the AWS managed key.
      type: str
      sample: null
    versioning:
      description: Versioning status.
      type: str
      sample: Enabled
    public_access_blocked:
      description: Whether all four public access blocks are on.
      type: bool
      sample: true
    retention_days:
      description: Days the lifecycle rule keeps a snapshot.
      type: int
      sample: 30
    tags:
      description: The bucket's tags.
      type: dict
      sample: {"sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned"}
snapshot:
  description: The snapshot this run took; C(null) when none was due (or in check mode).
  returned: always
  type: dict
  contains:
    key:
      description: Object key.
      type: str
      sample: etcd/20261203T181500Z-r48213.db
    version_id:
      description: Object version.
      type: str
      sample: 3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY
    size:
      description: Bytes.
      type: int
      sample: 4210720
    sha256:
      description: sha256 of the object (hex).
      type: str
      sample: 9f2c0e0d8c9a5c4b1b6e7f8a9d0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c
    revision:
      description: etcd's revision when the snapshot was taken.
      type: str
      sample: "48213"
    member:
      description: The member (node name) the snapshot came from.
      type: str
      sample: ip-10-0-1-23.ec2.internal
snapshots:
  description: Every current snapshot in the bucket, newest first.
  returned: always
  type: list
  elements: dict
  contains:
    key:
      description: Object key.
      type: str
    version_id:
      description: Object version (give it to a restore).
      type: str
    size:
      description: Bytes.
      type: int
    last_modified:
      description: When it was stored (UTC).
      type: str
  sample: [{"key": "etcd/20261203T181500Z-r48213.db", "version_id": "3HL4kqtJ", "size": 4210720,
            "last_modified": "2026-12-03T18:15:02Z"}]
plan:
  description: The mutating calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "s3:PutObject", "resource": "etcd/20261203T181500Z-r48213.db", "reason": "no snapshot yet"}]
api_calls:
  description: Number of requests the run made, per C(service:Operation) (C(etcd:Snapshot) for the stream).
  returned: always
  type: dict
  sample: {"s3:ListObjectVersions": 1, "etcd:Snapshot": 1, "s3:PutObject": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.etcd_snapshot import (
    EtcdSnapshotTier,
    argument_spec,
)


def main():
    run_tier(argument_spec(), tier=EtcdSnapshotTier(), result_key=None)


if __name__ == "__main__":
    main()
