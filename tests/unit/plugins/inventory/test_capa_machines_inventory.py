# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_machines inventory plugin's decisions, table-tested: which instances are machines of which cluster,
their hostnames (unique for pools), groups, connection variables, and what lands in Ansible's inventory.

The listing against a server (one DescribeInstances, the cache, ansible-inventory) is
tests/integration/test_inventory_plugin.py's subject.
"""

from __future__ import annotations

import datetime
from typing import Any

import ansible.template
import pytest
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.clusterapi.aws.plugins.inventory import capa_machines
from ansible_collections.clusterapi.aws.plugins.inventory.capa_machines import (
    Connection,
    InventoryModule,
    Machine,
    bastions_by_cluster,
    connection_vars,
    describe_filters,
    groups_of,
    hostnames,
    machine_of,
)

# ansible-core 2.19 templates only trusted strings; older releases (the floor, 2.17) template every string.
trust_as_template = getattr(ansible.template, "trust_as_template", lambda value: value)

OWNER = "sigs.k8s.io/cluster-api-provider-aws/cluster/"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
STATES = ["running"]


def instance(iid: str, cluster: str | None = "demo", state: str = "running", **tags: str) -> dict[str, Any]:
    tag_map = dict(tags)
    if cluster:
        tag_map[OWNER + cluster] = "owned"
    return {
        "InstanceId": iid,
        "State": {"Name": state},
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "PrivateIpAddress": "10.0.64.5",
        "LaunchTime": datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "Tags": [{"Key": k, "Value": v} for k, v in tag_map.items()],
    }


def test_one_filter_set_names_every_wanted_cluster_or_all():
    assert describe_filters(["demo", "demo-lite"], ["running"]) == [
        {"Name": "tag-key", "Values": [OWNER + "demo", OWNER + "demo-lite"]},
        {"Name": "instance-state-name", "Values": ["running"]},
    ]
    assert describe_filters([], ["running", "stopped"])[0] == {"Name": "tag-key", "Values": [OWNER + "*"]}


@pytest.mark.parametrize(
    ("raw", "wanted", "cluster"),
    [
        (instance("i-1"), [], "demo"),
        (instance("i-1"), ["demo"], "demo"),
        (instance("i-1"), ["other"], None),
        (instance("i-1", cluster=None), [], None),
        # the tag-key filter matches a shared tag too: only owned counts
        (instance("i-1", cluster=None, **{OWNER + "demo": "shared"}), [], None),
        (instance("i-1", state="stopped"), [], None),
        # two owners (not made by CAPA): the first wanted one
        (instance("i-1", cluster="b", **{OWNER + "a": "owned"}), [], "a"),
        (instance("i-1", cluster="b", **{OWNER + "a": "owned"}), ["b"], "b"),
    ],
)
def test_which_cluster_owns_an_instance(raw: dict[str, Any], wanted: list[str], cluster: str | None):
    machine = machine_of(raw, "us-east-1", wanted, STATES)
    assert (machine.cluster if machine else None) == cluster


def test_a_machine_carries_its_tags_as_fields():
    raw = instance(
        "i-0123456789abcdef0",
        Name="mp-0",
        **{
            ROLE: "node",
            "clusterapi.aws/machine-group": "mp-0",
            "clusterapi.aws/template-hash": "36efe6f28c",
            "aws:autoscaling:groupName": "mp-0",
        },
    )
    machine = machine_of(raw, "us-east-1", [], STATES)
    assert machine is not None
    assert (machine.name, machine.role, machine.machine_group, machine.pool, machine.launched_by) == (
        "mp-0",
        "node",
        "mp-0",
        "mp-0",
        "asg",
    )
    assert machine.template_hash == "36efe6f28c"
    assert machine.launch_time == "2025-01-02T03:04:05+00:00"
    fleet = machine_of(instance("i-2", Name="fp-0", **{"clusterapi.aws/machine-pool": "fp-0"}), "eu-west-1", [], STATES)
    assert fleet is not None and (fleet.pool, fleet.launched_by, fleet.region) == ("fp-0", "fleet", "eu-west-1")


def machine(iid: str, name: str | None, cluster: str = "demo", **fields: Any) -> Machine:
    return Machine(instance_id=iid, cluster=cluster, region="us-east-1", name=name, **fields)


POOL_A = machine("i-0aaaaaaaa11111111", "mp-0", pool="mp-0")
POOL_B = machine("i-0aaaaaaaa22222222", "mp-0", pool="mp-0")
WORKER = machine("i-0bbbbbbbb33333333", "demo-md-0-x7k2p", machine_group="md-0")
NAMELESS = machine("i-0cccccccc44444444", None)


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        ("name", ["mp-0-11111111", "mp-0-22222222", "demo-md-0-x7k2p", "i-0cccccccc44444444"]),
        ("name_with_id_suffix", ["mp-0-11111111", "mp-0-22222222", "demo-md-0-x7k2p-33333333", "i-0cccccccc44444444"]),
        ("instance_id", ["i-0aaaaaaaa11111111", "i-0aaaaaaaa22222222", "i-0bbbbbbbb33333333", "i-0cccccccc44444444"]),
    ],
)
def test_hostnames_are_unique_for_pools(style: str, expected: list[str]):
    names, warnings = hostnames([POOL_A, POOL_B, WORKER, NAMELESS], style)
    assert [names[m.instance_id] for m in (POOL_A, POOL_B, WORKER, NAMELESS)] == expected
    assert warnings == []


def test_a_name_still_shared_falls_back_to_the_instance_ids():
    twins = [machine("i-01111111122222222", "same"), machine("i-03333333344444444", "same"), WORKER]
    names, warnings = hostnames(twins, "name")
    assert names == {
        "i-01111111122222222": "i-01111111122222222",
        "i-03333333344444444": "i-03333333344444444",
        WORKER.instance_id: "demo-md-0-x7k2p",
    }
    assert warnings == ["capa_machines: several machines are named 'same': listed by instance id"]


def test_groups_by_cluster_role_machine_group_pool_and_zone():
    pool = machine(
        "i-1",
        "mp-0",
        cluster="demo-lite",
        role="node",
        machine_group="mp-0",
        pool="mp-0",
        availability_zone="us-east-1a",
    )
    assert groups_of(pool) == [
        "capa_demo_lite",
        "capa_role_node",
        "capa_group_mp_0",
        "capa_pool_mp_0",
        "capa_zone_us_east_1a",
    ]
    control_plane = machine("i-2", "demo-control-plane-abcde", role="control-plane", machine_group="control-plane")
    assert groups_of(control_plane) == ["capa_demo", "capa_role_control_plane", "capa_group_control_plane"]
    assert groups_of(machine("i-3", None)) == ["capa_demo"]


BASTION = machine("i-b", "demo-bastion-abcde", role="bastion", public_ip="203.0.113.7", private_ip="10.0.0.4")
BASTION.state = "running"


def test_each_cluster_jumps_through_its_own_running_bastion_with_a_public_ip():
    stopped = machine("i-s", "demo-bastion-old", role="bastion", public_ip="203.0.113.9", state="stopped")
    private = machine("i-p", "lite-bastion", cluster="lite", role="bastion", private_ip="10.1.0.4", state="running")
    assert bastions_by_cluster([stopped, BASTION, private, WORKER]) == {"demo": BASTION}


@pytest.mark.parametrize(
    ("subject", "bastion", "connection", "expected"),
    [
        (
            machine("i-w", "w", private_ip="10.0.64.5"),
            BASTION,
            Connection(),
            {"ansible_host": "10.0.64.5", "ansible_ssh_common_args": "-o ProxyJump=ubuntu@203.0.113.7"},
        ),
        (
            machine("i-w", "w", private_ip="10.0.64.5"),
            BASTION,
            Connection(bastion_user="admin", remote_user="core"),
            {
                "ansible_user": "core",
                "ansible_host": "10.0.64.5",
                "ansible_ssh_common_args": "-o ProxyJump=admin@203.0.113.7",
            },
        ),
        # no bastion: the private address as it is; the bastion itself: its public address
        (machine("i-w", "w", private_ip="10.0.64.5"), None, Connection(), {"ansible_host": "10.0.64.5"}),
        (BASTION, BASTION, Connection(), {"ansible_host": "203.0.113.7"}),
        (machine("i-w", "w"), None, Connection(), {}),
        (
            machine("i-w", "w", private_ip="10.0.64.5"),
            BASTION,
            Connection(style="ssm", ssm_bucket_name="bucket"),
            {
                "ansible_host": "i-w",
                "ansible_connection": "amazon.aws.aws_ssm",
                "ansible_aws_ssm_instance_id": "i-w",
                "ansible_aws_ssm_region": "us-east-1",
                "ansible_aws_ssm_bucket_name": "bucket",
            },
        ),
    ],
)
def test_connection_variables(subject: Machine, bastion: Machine | None, connection: Connection, expected: dict):
    assert connection_vars(subject, bastion, connection) == expected


OPTIONS = {
    "hostnames": "name",
    "connection": "ssh_via_bastion",
    "bastion_user": "ubuntu",
    "remote_user": None,
    "ssm_bucket_name": None,
    "strict": False,
    # Expressions from a configuration file are trusted templates (the loader marks them so).
    "compose": {"cluster_and_role": trust_as_template("capa_cluster ~ '/' ~ capa_role")},
    "groups": {},
    "keyed_groups": [{"key": trust_as_template("capa_launched_by"), "prefix": "launched_by"}],
}


def test_populate_adds_each_machine_once_with_groups_and_untrusted_variables(monkeypatch: pytest.MonkeyPatch):
    plugin = InventoryModule()
    plugin.inventory = InventoryData()
    plugin.templar = Templar(loader=DataLoader())  # what parse() sets up, for compose and keyed_groups
    monkeypatch.setattr(plugin, "get_option", lambda name, hostvars=None: OPTIONS[name])
    worker = machine(
        "i-w",
        "demo-md-0-x7k2p",
        role="node",
        machine_group="md-0",
        private_ip="10.0.64.5",
        tags={"Name": "demo-md-0-x7k2p", "note": "{{ lookup('pipe', 'id') }}"},
    )
    plugin.populate([BASTION, worker, POOL_A, POOL_B])

    hosts = plugin.inventory.hosts
    assert sorted(hosts) == ["demo-bastion-abcde", "demo-md-0-x7k2p", "mp-0-11111111", "mp-0-22222222"]
    groups = plugin.inventory.groups
    assert sorted(h.name for h in groups["capa_demo"].get_hosts()) == sorted(hosts)
    assert [h.name for h in groups["capa_pool_mp_0"].get_hosts()] == ["mp-0-11111111", "mp-0-22222222"]
    assert [h.name for h in groups["launched_by_machine"].get_hosts()] == sorted(hosts)  # keyed_groups ran

    variables = hosts["demo-md-0-x7k2p"].vars
    assert variables["ansible_ssh_common_args"] == "-o ProxyJump=ubuntu@203.0.113.7"
    assert variables["cluster_and_role"] == "demo/node"  # compose ran
    # A tag is data: templating the variable gives the tag's text back, nothing is looked up.
    note = variables["capa_tags"]["note"]
    assert plugin.templar.template(note) == note == "{{ lookup('pipe', 'id') }}"
    # a trusted template would be rendered (2.17 renders text: "2")
    assert plugin.templar.template(trust_as_template("{{ 1 + 1 }}")) in (2, "2")


def test_a_cached_listing_is_the_same_machines(monkeypatch: pytest.MonkeyPatch):
    """What the cache keeps (dataclasses.asdict of each machine) builds the same machines again."""
    from dataclasses import asdict

    for original in (BASTION, POOL_A, WORKER):
        assert Machine(**asdict(original)) == original


def test_only_capa_machines_config_files_are_read(tmp_path):
    plugin = InventoryModule()
    for name, accepted in (
        ("clusters.capa_machines.yml", True),
        ("capa_machines.yaml", True),
        ("clusters.aws_ec2.yml", False),
        ("clusters.yml", False),
    ):
        path = tmp_path / name
        path.write_text("plugin: clusterapi.aws.capa_machines\n")
        assert plugin.verify_file(str(path)) is accepted, name


def test_documentation_names_the_plugin():
    assert "name: capa_machines" in capa_machines.DOCUMENTATION
    assert InventoryModule.NAME == "clusterapi.aws.capa_machines"
