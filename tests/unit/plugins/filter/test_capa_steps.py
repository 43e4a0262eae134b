"""The capa_resolve and capa_leftovers filters (plugins/filter/capa_steps.py) as Jinja calls them: values through,
and a template mistake reported as Ansible's filter error naming the filter, not a traceback."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.clusterapi.aws.plugins.filter.capa_steps import FilterModule, capa_leftovers, capa_resolve
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import ref


def test_the_filters_are_the_collections_two():
    assert FilterModule().filters() == {"capa_resolve": capa_resolve, "capa_leftovers": capa_leftovers}


def test_resolve_replaces_references_and_drops_missing_optional_ones():
    params = {"vpc_id": ref("vpc.vpc.id"), "extra": ref("elb.secondary", optional=True), "name": "demo"}
    assert capa_resolve(params, {"vpc": {"vpc": {"id": "vpc-1"}}}) == {"vpc_id": "vpc-1", "name": "demo"}


def test_resolve_names_an_output_that_is_not_there():
    with pytest.raises(AnsibleFilterError, match="^capa_resolve: .*subnet"):
        capa_resolve({"subnets": ref("subnet.subnets")}, {"vpc": {}})


def test_resolve_refuses_outputs_that_are_not_a_dict():
    with pytest.raises(AnsibleFilterError, match="outputs must be a dict of earlier results, not list"):
        capa_resolve({}, [])


def test_leftovers_sorts_instances_by_the_role_that_deletes_them():
    resources = {
        "instance": [
            {"launched_by": "machine", "group": "control-plane"},
            {"launched_by": "machine", "group": "md-0"},
            {"launched_by": "machine", "group": "md-0"},
            {"launched_by": "machine", "group": "bastion"},
            {"launched_by": "asg", "pool": "mp-0"},
        ]
    }
    assert capa_leftovers(resources) == {"machine_deployment": ["md-0"], "machine_pool": ["mp-0"]}
    with pytest.raises(AnsibleFilterError, match="expects capa_cluster_info's resources"):
        capa_leftovers(None)  # type: ignore[arg-type]
