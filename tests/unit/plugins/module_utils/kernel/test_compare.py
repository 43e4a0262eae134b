# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kernel/compare.py: fields compared as their Option declares them (table-driven, pure)."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import nodegroup_plan
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.compare import (
    Field,
    differences,
    same,
    set_changes,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import Option
from ansible_collections.clusterapi.aws.plugins.module_utils.network import vpc


@pytest.mark.parametrize(
    ("comparison", "wanted", "current", "equal"),
    [
        ("strict", "a", "a", True),
        ("strict", ["a", "b"], ["b", "a"], False),
        ("set", ["a", "b"], ["b", "a"], True),
        ("set", ["a"], ["a", "b"], False),
        ("set", [], None, True),
        ("set", [{"k": 1}, {"k": 2}], [{"k": 2}, {"k": 1}], True),
        ("allow_more_present", {"a": 1}, {"a": 1, "b": 2}, True),
        ("allow_more_present", {"a": 1}, {"a": 2}, False),
        ("allow_more_present", {"a": 1}, None, False),
        ("ignore", "a", "b", True),
        ("strict", None, "whatever AWS defaults to", True),  # unset: AWS's default is not drift
    ],
)
def test_same_compares_as_declared(comparison, wanted, current, equal):
    assert same(comparison, wanted, current) is equal


def test_differences_split_what_changes_in_place_from_what_needs_a_replacement():
    fields = (Field("size"), Field("groups", comparison="set"), Field("type", immutable=True))
    found = differences(
        fields, {"size": 2, "groups": ["b", "a"], "type": "t3"}, {"size": 1, "groups": ["a", "b"], "type": "m5"}
    )
    assert (found.mutable, found.immutable, found.names, found.any) == (("size",), ("type",), ["size", "type"], True)
    assert not differences(fields, {"size": 1}, {"size": 1, "type": "m5"}).any


def test_a_field_is_what_its_option_declares():
    assert Field.of(vpc.CIDR_BLOCK) == Field("cidr_block", "strict", True)
    assert Field.of(vpc.SECONDARY_CIDR_BLOCKS) == Field("secondary_cidr_blocks", "set", False)
    assert Field.of(nodegroup_plan.INSTANCE_TYPES) == Field("instance_types", "set", True)
    assert Field.of(Option("x", "y"), name="z") == Field("z")
    with pytest.raises(ValueError, match="comparison 'fuzzy'"):
        Field("x", comparison="fuzzy")


def test_set_changes_name_what_to_remove_and_add():
    assert set_changes(["sg-2", "sg-1", "sg-3"], ["sg-3", "sg-4"]) == (["sg-1", "sg-2"], ["sg-4"])
    assert set_changes([], []) == ([], [])


def test_node_group_instance_types_in_another_order_are_no_replacement():
    """The node group's immutable fields compare as declared: instance types are a set (EKS answers them in its own
    order), so a reordered list never reads as a replacement; another type does."""
    definition = {"instance_types": ["t3.large", "m5.large"], "capacity_type": "ON_DEMAND"}
    observed = {"instanceTypes": ["m5.large", "t3.large"], "capacityType": "ON_DEMAND"}
    assert nodegroup_plan.immutable_differences(definition, observed) == []
    observed = {"instanceTypes": ["m5.large"], "capacityType": "SPOT"}
    assert nodegroup_plan.immutable_differences(definition, observed) == ["instance_types", "capacity_type"]
