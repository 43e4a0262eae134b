# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_machines inventory plugin through ``ansible-inventory --list`` against the moto server.

The machines are the demo clusters' (``examples/inventory.yml`` built once for the file by ``playbooks/site.yml``:
``demo`` with a bastion, 3 control-plane machines, ``md-0`` and the pools ``mp-0`` (auto scaling group) and
``fp-0`` (EC2 fleet), whose instances share their pool's Name tag; ``demo-lite``; ``demo-eks`` with the pool
``eks-mp-0``), plus three instances made with boto3 that must not be listed by default: one with no tags, one that
carries a cluster's tag as ``shared`` rather than ``owned``, and a stopped one owned by the cluster ``stray``.
What is expected is worked out from boto3's own DescribeInstances; the requests the listing made are the moto
server's count, independent of the plugin.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from cluster_helpers import IAM_PLAYBOOK, write_inventory

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
EXAMPLE_CONFIG = REPO / "examples/clusters.capa_machines.yml"
EXAMPLE_PLAYBOOK = REPO / "examples/control_plane_command.yml"
OWNER_PREFIX = "sigs.k8s.io/cluster-api-provider-aws/cluster/"
ROLE_TAG = "sigs.k8s.io/cluster-api-provider-aws/role"
POOLS = {"mp-0", "fp-0", "eks-mp-0"}
DESCRIBE_INSTANCES = {"service": "ec2", "operation": "DescribeInstances"}
TAG_KEYS = {"role": ROLE_TAG, "group": "clusterapi.aws/machine-group"}
# A source the plugin cannot parse is only a warning to ansible-inventory: make it fail the listing.
STRICT_INVENTORY = {"ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "1"}


def _tags(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags", [])}


def _owner(instance: dict[str, Any]) -> str | None:
    owners = [k[len(OWNER_PREFIX) :] for k, v in _tags(instance).items() if k.startswith(OWNER_PREFIX) and v == "owned"]
    return owners[0] if owners else None


def _pool(instance: dict[str, Any]) -> str | None:
    tags = _tags(instance)
    return tags.get("aws:autoscaling:groupName") or tags.get("clusterapi.aws/machine-pool")


@pytest.fixture(scope="module")
def demo(moto_server, tmp_path_factory) -> SimpleNamespace:
    """The demo clusters and three instances that are not listed by default, in one moto state for the file."""
    # tests/conftest.py is not importable by name next to tests/integration/conftest.py: its helpers are reached
    # through the module that defines the session's moto server (as test_self_healing.py does).
    harness = SimpleNamespace(**type(moto_server).__init__.__globals__)
    moto_server.reset()
    tmp = tmp_path_factory.mktemp("inventory")
    env = {"AWS_ENDPOINT_URL": moto_server.url, **harness.AWS_TEST_ENV}
    env["AWS_CONFIG_FILE"] = str(tmp / "aws-config-absent")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp / "aws-credentials-absent")
    with pytest.MonkeyPatch.context() as patch:
        for name in harness.AWS_ENV_TO_CLEAR:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        aws = harness.AwsEnv(server=moto_server, env=env)
        specs = yaml.safe_load((REPO / "examples/inventory.yml").read_text())["capa_clusters"]["hosts"]
        inventory = write_inventory(tmp, *(host["capa_cluster"] for host in specs.values()))
        harness.run_playbook_cmd(IAM_PLAYBOOK)
        harness.run_playbook_cmd(SITE, inventory=inventory)
        ec2 = aws.client("ec2")
        image = ec2.describe_images()["Images"][0]["ImageId"]

        def launch(tags: dict[str, str]) -> str:
            spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
            extra = {"TagSpecifications": spec} if tags else {}
            return ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.micro", **extra)[
                "Instances"
            ][0]["InstanceId"]

        launch({})
        launch({"Name": "shared-one", f"{OWNER_PREFIX}demo": "shared"})
        stray = launch({"Name": "stray-0", f"{OWNER_PREFIX}stray": "owned", ROLE_TAG: "node"})
        ec2.stop_instances(InstanceIds=[stray])
        instances = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
        yield SimpleNamespace(aws=aws, harness=harness, tmp=tmp, instances=instances, stray=stray)


def running_machines(demo: SimpleNamespace) -> dict[str, dict[str, Any]]:
    """What the plugin must list by default: the running instances some cluster owns, by instance id."""
    return {i["InstanceId"]: i for i in demo.instances if _owner(i) and i["State"]["Name"] == "running"}


def plain(value: Any) -> Any:
    """ansible-inventory's JSON without its marks of untrusted values (``{"__ansible_unsafe": "..."}``)."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def list_inventory(demo: SimpleNamespace, config: dict[str, Any], name: str, *args: str) -> dict[str, Any]:
    path = demo.tmp / f"{name}.capa_machines.yml"
    path.write_text(yaml.safe_dump(config))
    command = [str(demo.harness.VENV_BIN / "ansible-inventory"), "-i", str(path), "--list", *args]
    proc = subprocess.run(
        command,
        env=demo.harness.ansible_env(STRICT_INVENTORY),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "several machines are named" not in proc.stderr, proc.stderr
    return plain(json.loads(proc.stdout))


def members(listing: dict[str, Any], group: str) -> set[str]:
    return set(listing.get(group, {}).get("hosts", []))


def test_lists_every_machine_once_with_unique_names_groups_and_one_request(demo):
    expected = running_machines(demo)
    demo.aws.reset_requests()
    listing = list_inventory(demo, {"plugin": "clusterapi.aws.capa_machines", "regions": ["us-east-1"]}, "all")
    requests = [{"service": r["service"], "operation": r["operation"]} for r in demo.aws.requests()]
    assert requests == [DESCRIBE_INSTANCES], "one DescribeInstances for the whole listing, nothing else"

    hostvars = listing["_meta"]["hostvars"]
    by_id = {v["capa_instance_id"]: host for host, v in hostvars.items()}
    assert len(by_id) == len(hostvars) == len(expected) == 13
    assert set(by_id) == set(expected)
    print(f"listed {len(hostvars)} machines: {sorted(hostvars)}")

    for iid, instance in expected.items():
        host, name = by_id[iid], _tags(instance)["Name"]
        assert host == (f"{name}-{iid[-8:]}" if _pool(instance) else name)
        variables = hostvars[host]
        assert variables["capa_cluster"] == _owner(instance)
        assert variables["capa_private_ip"] == instance["PrivateIpAddress"]
        assert variables["capa_availability_zone"] == instance["Placement"]["AvailabilityZone"]
        assert variables["capa_state"] == "running"
        assert variables["capa_template_hash"] == _tags(instance).get("clusterapi.aws/template-hash")
        assert variables["capa_role"] == _tags(instance)[ROLE_TAG]
        assert host in members(listing, f"capa_zone_{variables['capa_availability_zone'].replace('-', '_')}")
    # pools: every instance of a pool carries the pool's Name, and still gets a name of its own
    assert {hostvars[h]["capa_name"] for h in members(listing, "capa_pool_mp_0")} == {"mp-0"}
    assert len(members(listing, "capa_pool_mp_0")) == len(members(listing, "capa_pool_fp_0")) == 2

    def hosts_of(cluster: str, **wanted: str) -> set[str]:
        """The hostnames of ``cluster``'s machines whose tags hold ``wanted`` (keys spelled with _ for / . -)."""
        tags = {TAG_KEYS[k]: v for k, v in wanted.items()}
        return {
            by_id[iid]
            for iid, i in expected.items()
            if _owner(i) == cluster and all(_tags(i).get(k) == v for k, v in tags.items())
        }

    assert members(listing, "capa_demo") == hosts_of("demo") and len(hosts_of("demo")) == 10
    assert members(listing, "capa_demo_lite") == hosts_of("demo-lite") and len(hosts_of("demo-lite")) == 2
    assert members(listing, "capa_demo_eks") == hosts_of("demo-eks") and len(hosts_of("demo-eks")) == 1
    control_plane = hosts_of("demo", role="control-plane") | hosts_of("demo-lite", role="control-plane")
    assert members(listing, "capa_role_control_plane") == control_plane and len(control_plane) == 4
    assert members(listing, "capa_role_bastion") == hosts_of("demo", role="bastion")
    assert members(listing, "capa_role_node") == {h for h in hostvars if hostvars[h]["capa_role"] == "node"}
    md_0 = hosts_of("demo", group="md-0") | hosts_of("demo-lite", group="md-0")
    assert members(listing, "capa_group_md_0") == md_0 and len(md_0) == 3
    assert {g for g in listing if g.startswith("capa_pool_")} == {f"capa_pool_{p.replace('-', '_')}" for p in POOLS}

    # ssh_via_bastion: demo's machines jump through its bastion; demo-lite has none
    (bastion,) = members(listing, "capa_role_bastion")
    bastion_ip = hostvars[bastion]["capa_public_ip"]
    assert bastion_ip and hostvars[bastion]["ansible_host"] == bastion_ip
    for host in members(listing, "capa_demo") - {bastion}:
        assert hostvars[host]["ansible_host"] == hostvars[host]["capa_private_ip"]
        assert hostvars[host]["ansible_ssh_common_args"] == f"-o ProxyJump=ubuntu@{bastion_ip}"
    for host in members(listing, "capa_demo_lite"):
        assert "ansible_ssh_common_args" not in hostvars[host]


def test_clusters_states_and_hostname_styles(demo):
    expected = running_machines(demo)
    lite = {iid for iid, i in expected.items() if _owner(i) == "demo-lite"}
    config = {
        "plugin": "clusterapi.aws.capa_machines",
        "regions": ["us-east-1"],
        "clusters": ["demo-lite", "stray"],
        "instance_states": ["running", "stopped"],
        "hostnames": "instance_id",
    }
    demo.aws.reset_requests()
    listing = list_inventory(demo, config, "selected")
    assert [r["operation"] for r in demo.aws.requests()] == ["DescribeInstances"]
    hostvars = listing["_meta"]["hostvars"]
    assert set(hostvars) == lite | {demo.stray}
    assert hostvars[demo.stray]["capa_state"] == "stopped" and hostvars[demo.stray]["capa_cluster"] == "stray"
    assert members(listing, "capa_stray") == {demo.stray}

    config = {**config, "clusters": ["demo"], "instance_states": ["running"], "hostnames": "name_with_id_suffix"}
    hostvars = list_inventory(demo, config, "suffixed")["_meta"]["hostvars"]
    demo_ids = {iid for iid, i in expected.items() if _owner(i) == "demo"}
    assert set(hostvars) == {f"{_tags(expected[iid])['Name']}-{iid[-8:]}" for iid in demo_ids}


def test_ssm_connection(demo):
    config = {
        "plugin": "clusterapi.aws.capa_machines",
        "regions": ["us-east-1"],
        "clusters": ["demo-eks"],
        "connection": "ssm",
        "ssm_bucket_name": "transfer-bucket",
        "remote_user": "ec2-user",
    }
    hostvars = list_inventory(demo, config, "ssm")["_meta"]["hostvars"]
    ((host, variables),) = hostvars.items()
    iid = variables["capa_instance_id"]
    assert {k: v for k, v in variables.items() if k.startswith("ansible_")} == {
        "ansible_host": iid,
        "ansible_connection": "amazon.aws.aws_ssm",
        "ansible_aws_ssm_instance_id": iid,
        "ansible_aws_ssm_region": "us-east-1",
        "ansible_aws_ssm_bucket_name": "transfer-bucket",
        "ansible_user": "ec2-user",
    }
    assert host == f"eks-mp-0-{iid[-8:]}"


def test_listing_is_cached_in_the_inventory_cache(demo):
    config = {
        "plugin": "clusterapi.aws.capa_machines",
        "regions": ["us-east-1"],
        "cache": True,
        "cache_plugin": "ansible.builtin.jsonfile",
        "cache_connection": str(demo.tmp / "cache"),
        "cache_timeout": 3600,
        # Constructable options see the cached machines' variables as they see fresh ones.
        "keyed_groups": [{"key": "capa_launched_by", "prefix": "launched_by"}],
    }
    demo.aws.reset_requests()
    first = list_inventory(demo, config, "cached")
    assert [r["operation"] for r in demo.aws.requests()] == ["DescribeInstances"]
    assert len(members(first, "launched_by_asg")) == 3 and len(members(first, "launched_by_fleet")) == 2

    demo.aws.reset_requests()
    second = list_inventory(demo, config, "cached")
    assert demo.aws.requests() == [], "a cached listing asks AWS nothing"
    assert second == first

    flushed = list_inventory(demo, config, "cached", "--flush-cache")
    assert [r["operation"] for r in demo.aws.requests()] == ["DescribeInstances"]
    assert flushed == first


def test_example_playbook_runs_on_one_clusters_control_plane(demo):
    listing = list_inventory(demo, yaml.safe_load(EXAMPLE_CONFIG.read_text()), "example")
    expected = {
        h
        for h, v in listing["_meta"]["hostvars"].items()
        if v["capa_cluster"] == "demo" and v["capa_role"] == "control-plane"
    }
    assert len(expected) == 3
    command = [
        str(demo.harness.VENV_BIN / "ansible-playbook"),
        "-i",
        str(EXAMPLE_CONFIG),
        str(EXAMPLE_PLAYBOOK),
        "-e",
        "cluster=demo",
        "--list-hosts",
    ]
    env = demo.harness.ansible_env(STRICT_INVENTORY)
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    listed = proc.stdout.split("hosts (", 1)[1].splitlines()[1:]
    assert {line.strip() for line in listed if line.strip()} == expected
