#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_etcd_snapshot_info
short_description: List a self-managed cluster's etcd snapshots and describe their bucket
version_added: 0.2.0
description:
  - Reads the bucket M(clusterapi.aws.capa_etcd_snapshot) keeps - C(<cluster_name>-etcd-snapshots-<account>-<region>)
    unless I(bucket) names it - its tags and properties (encryption, versioning, public access block, retention)
    and every current snapshot, newest first, with one C(ListObjectVersions).
  - Read-only; never reports C(changed). Without the bucket, I(bucket) is C(null) and I(snapshots) empty.
  - Names, sizes and versions only; no byte of a snapshot is read.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  bucket:
    description: The bucket, when not the default.
    type: str
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.attributes.info
"""

EXAMPLES = r"""
- name: The snapshots of cluster demo
  clusterapi.aws.capa_etcd_snapshot_info:
    cluster_name: demo
  register: found

- name: Restore the newest
  ansible.builtin.debug:
    msg: "{{ found.snapshots[0].key }} ({{ found.snapshots[0].version_id }})"
  when: found.snapshots | length > 0
"""

RETURN = r"""
bucket:
  description: The snapshot bucket (as M(clusterapi.aws.capa_etcd_snapshot) returns it); C(null) when there is none.
  returned: always
  type: dict
  sample: {"name": "demo-etcd-snapshots-123456789012-us-east-1", "encryption": "aws:kms", "versioning": "Enabled",
           "public_access_blocked": true, "retention_days": 30, "owned": true}
snapshots:
  description: Every current snapshot, newest first.
  returned: always
  type: list
  elements: dict
  contains:
    key:
      description: Object key.
      type: str
    version_id:
      description: Object version.
      type: str
    size:
      description: Bytes.
      type: int
    last_modified:
      description: When it was stored (UTC).
      type: str
  sample: [{"key": "etcd/20261203T181500Z-r48213.db", "version_id": "3HL4kqtJ", "size": 4210720,
            "last_modified": "2026-12-03T18:15:02Z"}]
api_calls:
  description: Number of requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"s3:GetBucketTagging": 1, "s3:ListObjectVersions": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.etcd_snapshot_info import (
    EtcdSnapshotInfoTier,
    argument_spec,
)


def main():
    run_tier(argument_spec(), tier=EtcdSnapshotInfoTier(), result_key=None, info=True)


if __name__ == "__main__":
    main()
