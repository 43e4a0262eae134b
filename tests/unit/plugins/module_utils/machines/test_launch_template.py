# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A fleet pool's launch template (launch_template.py): which versions are pruned, what a version says about
itself (its hash, its bootstrap entries)."""

from __future__ import annotations

from ansible_collections.clusterapi.aws.plugins.module_utils.machines import launch_template as lt
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import BOOTSTRAP_TAG, BootstrapRef


def test_launch_template_pruning_keeps_default_and_latest():
    versions = [{"VersionNumber": n} for n in (1, 2, 3, 4)]
    template = lt.Template("lt-1", "pool-0", default_version=1, latest_version=4, tags={}, versions=versions)
    assert [v["VersionNumber"] for v in lt.versions_to_prune(template)] == [2, 3]
    template.versions = versions[:2]
    assert lt.versions_to_prune(template) == []


def test_a_version_carries_its_hash_and_its_bootstrap_entries():
    ref = BootstrapRef("ssm-parameter-store", "/cluster.x-k8s.io/u", 1)
    tags = [{"Key": lt.HASH_TAG, "Value": "3f9a1c0b2d"}, {"Key": BOOTSTRAP_TAG, "Value": ref.tag_value()}]
    version = {"LaunchTemplateData": {"TagSpecifications": [{"ResourceType": "instance", "Tags": tags}]}}
    assert lt.version_hash(version) == "3f9a1c0b2d"
    assert lt.version_ref(version) == ref
    assert lt.version_hash(None) == "" and lt.version_ref({"LaunchTemplateData": {}}) is None


def test_as_dict():
    ensured = lt.Ensured("lt-1", "pool-0", 3, "3f9a1c0b2d", created=True)
    assert lt.as_dict(ensured) == {"id": "lt-1", "name": "pool-0", "version": 3, "template_hash": "3f9a1c0b2d"}
    assert lt.as_dict(None) is None
