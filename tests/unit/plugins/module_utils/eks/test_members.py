# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/members.py: what node groups and Fargate profiles share - the cluster waited for until ACTIVE (Stubber: moto
makes clusters ACTIVE at once), their subnets, tags, and how a group's members are found and picked."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import members
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError

from .member_stubs import ACTIVE_CLUSTER, CLUSTER, context


def test_a_cluster_still_creating_is_waited_for(eks):
    raw, stub = eks
    stub.add_response(
        "describe_cluster", {"cluster": {**ACTIVE_CLUSTER["cluster"], "status": "CREATING"}}, {"name": "c"}
    )
    stub.add_response("describe_cluster", ACTIVE_CLUSTER, {"name": "c"})
    assert members.ready_cluster(context(raw), "c")["status"] == "ACTIVE"
    stub.add_response("describe_cluster", {"cluster": {**ACTIVE_CLUSTER["cluster"], "status": "FAILED"}}, {"name": "c"})
    with pytest.raises(ReconcileError, match="FAILED"):
        members.ready_cluster(context(raw), "c")


def test_a_missing_cluster_is_planned_in_check_mode_and_an_error_otherwise(eks):
    raw, stub = eks
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    assert members.ready_cluster(context(raw, check_mode=True), "c") is None
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    with pytest.raises(ReconcileError, match="WaitingForEKSControlPlane"):
        members.ready_cluster(context(raw), "c")


def test_member_tags_are_capas_plus_the_group_and_the_template_hash(eks):
    raw, _stub = eks
    tags = members.member_tags(context(raw), "demo-eks", "clusterapi.aws/node-group", "md-0", "abcd", {"team": "a"})
    assert tags == {
        "team": "a",
        "kubernetes.io/cluster/demo-eks": "owned",
        "clusterapi.aws/node-group": "md-0",
        f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}": "owned",
        "sigs.k8s.io/cluster-api-provider-aws/role": "node",
        "clusterapi.aws/template-hash": "abcd",
    }


GROUP = "clusterapi.aws/node-group"
OURS = {GROUP: "md-0", f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}": "owned"}


def test_only_names_that_can_be_members_are_described():
    described: list[str] = []

    def describe(name):
        described.append(name)
        return {"md-0": {"name": "md-0", "tags": OURS}, "md-0-ab12": None}.get(name)

    found = members.owned_members(["md-0", "md-0-ab12", "md-1", "other"], "md-0", GROUP, CLUSTER, describe)
    assert described == ["md-0", "md-0-ab12"]  # md-1 and other are never described
    assert found.members == [{"name": "md-0", "tags": OURS}]
    assert found.taken == ["md-0", "md-0-ab12", "md-1", "other"]


def test_a_foreign_group_with_the_pools_name_is_refused():
    with pytest.raises(ReconcileError, match="not owned by cluster demo"):
        members.owned_members(["md-0"], "md-0", GROUP, CLUSTER, lambda name: {"tags": {}})


def test_the_current_member_carries_the_hash_newest_first_and_not_deleting():
    old = {"name": "a", "tags": {"clusterapi.aws/template-hash": "h0"}, "createdAt": "1"}
    older = {"name": "b", "tags": {"clusterapi.aws/template-hash": "h1"}, "createdAt": "2"}
    newer = {"name": "c", "tags": {"clusterapi.aws/template-hash": "h1"}, "createdAt": "3"}
    going = {"name": "d", "tags": {"clusterapi.aws/template-hash": "h1"}, "createdAt": "4", "status": "DELETING"}
    current, others = members.pick_current([old, older, newer, going], "h1")
    assert current is newer and others == [old, older, going]
    assert members.pick_current([old], "h1") == (None, [old])


def test_given_subnets_must_hold_a_private_one(eks):
    raw, _stub = eks
    given = [{"id": "subnet-0000000000000000b", "is_public": True}, {"id": "subnet-0000000000000000a"}]
    assert members.member_subnets(context(raw), given, None) == ["subnet-0000000000000000a"]
    with pytest.raises(ReconcileError, match="none of the given subnets is private"):
        members.member_subnets(context(raw), given[:1], None)
    assert members.member_subnets(context(raw, check_mode=True), [], None) == ["planned:subnet:private"]
