# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which machines of a group are current with the image they run (instance.is_current, kept_image).

CAPA resolves a machine's image when it creates the machine and replaces a machine only when its template changes:
a newer image of the same lookup replaces nothing. The template hash holds the image a machine runs and, for a
looked-up image, the lookup (another base OS, owner or name format is another template). A machine launched before
the lookup was in the hash (its hash is the definition with its image alone) counts as current too. Pure: no AWS.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.hashing import template_hash
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import validated
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.instance import (
    GroupSpec,
    group_argument_spec,
    is_current,
    kept_image,
    running_image,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.plan import Machine

OLDER, NEWER = "ami-0000000000000old", "ami-0000000000000new"


def spec(**extra: Any) -> GroupSpec:
    params = {
        "state": "present",
        "name": "md-0",
        "role": "node",
        "replicas": 2,
        "subnets": [],
        "instance_type": "t3.large",
        "kubernetes_version": "v1.31.2",
        "bootstrap": {"type": "raw", "data": "#cloud-config\n"},
        **extra,
    }
    module_spec = {"state": {"type": "str", "default": "present"}, **group_argument_spec()}
    return GroupSpec.from_params(validated(module_spec, params))


def launched(
    group: GroupSpec, image: str, name: str = "m", launch_time: str = "1", with_lookup: bool = True
) -> Machine:
    """A machine as the group launched it onto ``image`` (``with_lookup=False``: as a release before 2026-12 did)."""
    machine = Machine(name, name, "us-east-1a", "running", launch_time=launch_time, image_id=image)
    machine.template_hash = template_hash(group.definition(running_image(machine), with_lookup=with_lookup))
    return machine


def test_a_machine_keeps_its_image_while_the_rest_of_its_definition_is_the_specs():
    group = spec()
    machine = launched(group, OLDER)
    assert is_current(group, machine)  # whatever the lookup would find today
    assert not is_current(spec(instance_type="m6i.large"), machine)
    assert not is_current(spec(root_volume={"size": 80}), machine)


def test_another_lookup_is_another_definition():
    machine = launched(spec(), OLDER)
    assert not is_current(spec(ami={"base_os": "ubuntu-22.04"}), machine)
    assert not is_current(spec(ami={"owner": "123456789012"}), machine)
    assert not is_current(spec(ami={"name_format": "my-{{.K8sVersion}}-*"}), machine)


def test_a_machine_launched_before_the_lookup_was_in_its_hash_is_current_with_its_image():
    old = launched(spec(), OLDER, with_lookup=False)
    assert is_current(spec(), old)
    assert not is_current(spec(instance_type="m6i.large"), old)
    # What such a machine cannot show: the lookup it was found by (taken to be the spec's).
    assert is_current(spec(ami={"base_os": "ubuntu-22.04"}), old)


def test_a_given_image_must_be_the_one_the_machine_runs():
    given = spec(ami={"id": OLDER})
    assert is_current(given, launched(given, OLDER))
    assert not is_current(spec(ami={"id": NEWER}), launched(given, OLDER))
    # Given, then looked up (the lookup finds it or a newer one): the machine keeps the image it runs.
    assert is_current(spec(), launched(given, OLDER))
    assert not is_current(given, Machine("x", "x", "us-east-1a", "running", image_id=None))


def test_the_group_keeps_the_image_of_its_newest_current_machine():
    group = spec()
    first = launched(group, OLDER, "a", launch_time="1")
    second = launched(group, NEWER, "b", launch_time="2")
    outdated = launched(spec(instance_type="m6i.large"), "ami-00000000000other", "c", launch_time="3")
    assert kept_image(group, [first, second, outdated]).id == NEWER
    assert kept_image(group, [first, outdated]).id == OLDER
    assert kept_image(group, [outdated]) is None and kept_image(group, []) is None
