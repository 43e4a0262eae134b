# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); plugins are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible plugins usually are.

from __future__ import annotations

DOCUMENTATION = r"""
name: capa_machines
short_description: The machines of Cluster API clusters on AWS, found by CAPA's ownership tag
version_added: 0.2.0
description:
  - Lists the EC2 instances of the clusters named in O(clusters), or of every cluster found, by CAPA's ownership tag
    C(sigs.k8s.io/cluster-api-provider-aws/cluster/<name>=owned) - the machines of clusterapi.aws (control plane,
    machine deployments, bastion, machine pools) and of CAPA itself.
  - One paginated C(ec2:DescribeInstances) per region (a C(tag-key) filter on the clusters' ownership keys and an
    C(instance-state-name) filter), never one request per machine or per cluster.
  - The configuration file is YAML and its name ends in C(capa_machines.yml) or C(capa_machines.yaml), for example
    C(clusters.capa_machines.yml).
  - "Groups, for a cluster C(demo-lite): C(capa_demo_lite) (every machine of the cluster), C(capa_role_control_plane),
    C(capa_role_node) and C(capa_role_bastion) (the role tag C(sigs.k8s.io/cluster-api-provider-aws/role)),
    C(capa_group_<machine group>) (the tag C(clusterapi.aws/machine-group): C(control-plane), C(md-0), C(bastion),
    an auto scaling pool's name), C(capa_pool_<pool>) (machines of a machine pool: its auto scaling group, or the
    fleet pool's C(clusterapi.aws/machine-pool) tag) and C(capa_zone_<availability zone>). Characters other than
    letters, digits and C(_) become C(_). Role, machine group, pool and zone groups span clusters: intersect them
    with a cluster's group (C(capa_demo:&capa_role_control_plane))."
  - "Host variables: C(capa_cluster), C(capa_region), C(capa_instance_id), C(capa_name) (the C(Name) tag),
    C(capa_role), C(capa_machine_group), C(capa_pool), C(capa_launched_by) (C(machine), C(asg) or C(fleet)),
    C(capa_availability_zone), C(capa_subnet_id), C(capa_vpc_id), C(capa_private_ip), C(capa_public_ip),
    C(capa_private_dns_name), C(capa_state), C(capa_instance_type), C(capa_image_id), C(capa_template_hash) (the
    tag C(clusterapi.aws/template-hash)), C(capa_kubernetes_version), C(capa_launch_time) and C(capa_tags), plus the
    connection variables of O(connection). O(compose), O(groups) and O(keyed_groups) see all of them."
  - Results can be kept in Ansible's inventory cache (O(cache)); a cached listing makes no C(DescribeInstances).
notes:
  - The credentials need C(ec2:DescribeInstances), and C(ec2:DescribeRegions) when no region is given.
extends_documentation_fragment:
  - inventory_cache
  - constructed
  - amazon.aws.boto3
  - amazon.aws.common.plugins
  - amazon.aws.region.plugins
  - amazon.aws.assume_role.plugins
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  plugin:
    description: The name of this plugin.
    required: true
    type: str
    choices: [clusterapi.aws.capa_machines]
  clusters:
    description: The clusters whose machines are listed; empty lists the machines of every cluster found.
    type: list
    elements: str
    default: []
  regions:
    description:
      - The regions to list, one C(DescribeInstances) each.
      - Empty uses O(region) (or C(AWS_REGION)) and, when that is not set either, every region C(ec2:DescribeRegions)
        returns.
    type: list
    elements: str
    default: []
  instance_states:
    description:
      - The instance states listed. The default lists the machines that can be reached; add C(pending), C(stopping)
        or C(stopped) to see the others (their state is in C(capa_state)).
    type: list
    elements: str
    default: [running]
  hostnames:
    description:
      - How machines are named in the inventory. Names stay unique, also for machine pools, whose instances all carry
        the pool's C(Name) tag.
      - C(name) uses the C(Name) tag for machines of a machine group (clusterapi.aws makes it unique,
        C(<cluster>-<group>-<5 random characters>)) and C(<Name>-<last 8 characters of the instance id>) for machines
        of a pool (an auto scaling group or an EC2 fleet).
      - C(name_with_id_suffix) uses C(<Name>-<last 8 characters of the instance id>) for every machine.
      - C(instance_id) uses the instance id.
      - A machine without a C(Name) tag, or whose name would still be the same as another machine's, is listed by its
        instance id.
    type: str
    choices: [name, name_with_id_suffix, instance_id]
    default: name
  connection:
    description:
      - How Ansible reaches the machines.
      - C(ssh_via_bastion) sets C(ansible_host) to the machine's private IP and, when its cluster has a running bastion
        with a public IP, C(ansible_ssh_common_args) to a C(ProxyJump) through the bastion (O(bastion_user)). The
        bastion itself is reached at its public IP. A cluster without a bastion is reached at the private IPs as they
        are (from inside the VPC, or over a VPN).
      - C(ssm) uses the C(amazon.aws.aws_ssm) connection plugin, with C(ansible_host) and C(ansible_aws_ssm_instance_id)
        set to the instance id and C(ansible_aws_ssm_region) to its region. The machines need the SSM agent and an
        instance profile that allows it; file transfers need O(ssm_bucket_name).
    type: str
    choices: [ssh_via_bastion, ssm]
    default: ssh_via_bastion
  bastion_user:
    description: The user of the C(ProxyJump) to the bastion (CAPA's bastion image is Ubuntu).
    type: str
    default: ubuntu
  remote_user:
    description: When set, C(ansible_user) of every machine.
    type: str
  ssm_bucket_name:
    description: With O(connection=ssm), C(ansible_aws_ssm_bucket_name), the S3 bucket the connection moves files
      through.
    type: str
"""

EXAMPLES = r"""
# clusters.capa_machines.yml: the machines of two clusters, reached through their bastions.
plugin: clusterapi.aws.capa_machines
regions: [us-east-1]
clusters: [demo, demo-lite]

# every cluster's machines over SSM, cached for an hour, with a group per cluster and role
# ---
# plugin: clusterapi.aws.capa_machines
# connection: ssm
# ssm_bucket_name: my-ssm-transfer-bucket
# cache: true
# cache_plugin: ansible.builtin.jsonfile
# cache_connection: ~/.cache/capa-inventory
# cache_timeout: 3600
# keyed_groups:
#   - key: capa_cluster ~ '_' ~ capa_role     # capa_demo_lite_control_plane: keyed groups become safe names
#     prefix: capa
"""

import re  # noqa: E402  (plugins put their documentation first)
from collections import Counter  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from datetime import datetime  # noqa: E402
from typing import Any, Collection, Iterable, Mapping  # noqa: E402

from ansible.utils.unsafe_proxy import wrap_var  # noqa: E402

from ansible_collections.amazon.aws.plugins.module_utils.retries import AWSRetry  # noqa: E402
from ansible_collections.amazon.aws.plugins.plugin_utils.inventory import AWSInventoryBase  # noqa: E402
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.tags import (  # noqa: E402
    OWNED,
    ROLE_BASTION,
    ROLE_TAG,
    cluster_tag_key,
    tags_to_dict,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.fleet import POOL_TAG  # noqa: E402
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.instance import (  # noqa: E402
    GROUP_TAG,
    HASH_TAG,
    VERSION_TAG,
)

try:
    import botocore.exceptions
except ImportError:
    pass  # AWSInventoryBase.parse reports a missing SDK.

# Tags AWS itself puts on the instances an auto scaling group or an EC2 fleet launches.
ASG_TAG = "aws:autoscaling:groupName"
FLEET_TAG = "aws:ec2:fleet-id"
OWNER_PREFIX = cluster_tag_key("")
ID_SUFFIX_LENGTH = 8
SSM_CONNECTION = "amazon.aws.aws_ssm"


@dataclass
class Machine:
    """One listed instance, reduced to what the inventory shows (also what the cache keeps)."""

    instance_id: str
    cluster: str
    region: str
    name: str | None = None
    role: str | None = None
    machine_group: str | None = None
    pool: str | None = None
    launched_by: str = "machine"
    availability_zone: str | None = None
    subnet_id: str | None = None
    vpc_id: str | None = None
    private_ip: str | None = None
    public_ip: str | None = None
    private_dns_name: str | None = None
    state: str | None = None
    instance_type: str | None = None
    image_id: str | None = None
    template_hash: str | None = None
    kubernetes_version: str | None = None
    launch_time: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Connection:
    style: str = "ssh_via_bastion"
    bastion_user: str = "ubuntu"
    remote_user: str | None = None
    ssm_bucket_name: str | None = None


# --- observe ---------------------------------------------------------------------------------------------------------
def describe_filters(clusters: Collection[str], states: Collection[str]) -> list[dict[str, Any]]:
    """One request for every wanted cluster: ``tag-key`` matches any of its values (and ``*`` matches any cluster)."""
    keys = [cluster_tag_key(c) for c in clusters] or [cluster_tag_key("*")]
    return [{"Name": "tag-key", "Values": keys}, {"Name": "instance-state-name", "Values": list(states)}]


@AWSRetry.jittered_backoff(retries=8, delay=1, max_delay=20)
def describe_instances(client: Any, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every page of one DescribeInstances (retried as a whole on throttling)."""
    pages = client.get_paginator("describe_instances").paginate(Filters=filters)
    return [instance for page in pages for r in page.get("Reservations", []) for instance in r.get("Instances", [])]


def owning_cluster(tags: Mapping[str, str], wanted: Collection[str]) -> str | None:
    """The cluster that owns a machine; a ``tag-key`` filter cannot test the value, so ``owned`` is checked here."""
    owners = sorted(k[len(OWNER_PREFIX) :] for k, v in tags.items() if k.startswith(OWNER_PREFIX) and v == OWNED)
    return next((owner for owner in owners if not wanted or owner in wanted), None)


def launcher_of(tags: Mapping[str, str]) -> str:
    if ASG_TAG in tags:
        return "asg"
    if FLEET_TAG in tags or POOL_TAG in tags:
        return "fleet"
    return "machine"


def text_of(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return None if value is None else str(value)


def machine_of(
    instance: Mapping[str, Any], region: str, wanted: Collection[str], states: Collection[str]
) -> Machine | None:
    """The machine an instance is, or None when no wanted cluster owns it or it is in a state not listed."""
    tags = tags_to_dict(instance.get("Tags"))
    cluster = owning_cluster(tags, wanted)
    state = instance.get("State", {}).get("Name")
    if cluster is None or state not in states:
        return None
    return Machine(
        instance_id=instance["InstanceId"],
        cluster=cluster,
        region=region,
        name=tags.get("Name"),
        role=tags.get(ROLE_TAG),
        machine_group=tags.get(GROUP_TAG),
        pool=tags.get(ASG_TAG) or tags.get(POOL_TAG),
        launched_by=launcher_of(tags),
        availability_zone=instance.get("Placement", {}).get("AvailabilityZone"),
        subnet_id=instance.get("SubnetId"),
        vpc_id=instance.get("VpcId"),
        private_ip=instance.get("PrivateIpAddress"),
        public_ip=instance.get("PublicIpAddress"),
        private_dns_name=instance.get("PrivateDnsName") or None,
        state=state,
        instance_type=instance.get("InstanceType"),
        image_id=instance.get("ImageId"),
        template_hash=tags.get(HASH_TAG),
        kubernetes_version=tags.get(VERSION_TAG),
        launch_time=text_of(instance.get("LaunchTime")),
        tags=tags,
    )


# --- decide (pure) ---------------------------------------------------------------------------------------------------
def id_suffix(instance_id: str) -> str:
    return instance_id.removeprefix("i-")[-ID_SUFFIX_LENGTH:]


def preferred_hostname(machine: Machine, style: str) -> str:
    if style == "instance_id" or not machine.name:
        return machine.instance_id
    if style == "name_with_id_suffix" or machine.pool:
        return f"{machine.name}-{id_suffix(machine.instance_id)}"
    return machine.name


def hostnames(machines: Iterable[Machine], style: str) -> tuple[dict[str, str], list[str]]:
    """Instance id -> hostname, unique; and a warning per name that several machines would have had."""
    preferred = {m.instance_id: preferred_hostname(m, style) for m in machines}
    counts = Counter(preferred.values())
    clashes = sorted(name for name, count in counts.items() if count > 1)
    names = {iid: (name if counts[name] == 1 else iid) for iid, name in preferred.items()}
    warnings = [f"capa_machines: several machines are named {name!r}: listed by instance id" for name in clashes]
    return names, warnings


def safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def groups_of(machine: Machine) -> list[str]:
    groups = [f"capa_{safe(machine.cluster)}"]
    for prefix, value in (
        ("role", machine.role),
        ("group", machine.machine_group),
        ("pool", machine.pool),
        ("zone", machine.availability_zone),
    ):
        if value:
            groups.append(f"capa_{prefix}_{safe(value)}")
    return groups


def bastions_by_cluster(machines: Iterable[Machine]) -> dict[str, Machine]:
    """Each cluster's bastion that can be jumped through (running, public IP); the oldest if there are several."""
    found: dict[str, Machine] = {}
    candidates = [m for m in machines if m.role == ROLE_BASTION and m.public_ip and m.state == "running"]
    for machine in sorted(candidates, key=lambda m: (m.launch_time or "", m.instance_id)):
        found.setdefault(machine.cluster, machine)
    return found


def connection_vars(machine: Machine, bastion: Machine | None, connection: Connection) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if connection.remote_user:
        found["ansible_user"] = connection.remote_user
    if connection.style == "ssm":
        found.update(
            ansible_host=machine.instance_id,
            ansible_connection=SSM_CONNECTION,
            ansible_aws_ssm_instance_id=machine.instance_id,
            ansible_aws_ssm_region=machine.region,
        )
        if connection.ssm_bucket_name:
            found["ansible_aws_ssm_bucket_name"] = connection.ssm_bucket_name
        return found
    if machine.role == ROLE_BASTION:
        address = machine.public_ip or machine.private_ip
    else:
        address = machine.private_ip
        if bastion is not None:
            found["ansible_ssh_common_args"] = f"-o ProxyJump={connection.bastion_user}@{bastion.public_ip}"
    if address:
        found["ansible_host"] = address
    return found


def host_vars(machine: Machine) -> dict[str, Any]:
    return {f"capa_{key}": value for key, value in asdict(machine).items()}


def listing_order(machine: Machine) -> tuple[str, str, str, str]:
    return (machine.cluster, machine.role or "", machine.name or "", machine.instance_id)


# --- the plugin ------------------------------------------------------------------------------------------------------
class InventoryModule(AWSInventoryBase):
    NAME = "clusterapi.aws.capa_machines"
    INVENTORY_FILE_SUFFIXES = ("capa_machines.yml", "capa_machines.yaml")

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache=cache)
        hit, cached = self.get_cached_result(path, cache)
        machines = [Machine(**entry) for entry in cached] if hit else self.observe()
        self.update_cached_result(path, cache, [asdict(m) for m in machines])
        self.populate(machines)

    def regions(self) -> list[str]:
        if self.get_option("regions"):
            return list(self.get_option("regions"))
        if self.region:
            return [self.region]
        return list(self._boto3_regions(service="ec2"))

    def observe(self) -> list[Machine]:
        wanted = list(self.get_option("clusters"))
        states = list(self.get_option("instance_states"))
        filters = describe_filters(wanted, states)
        machines: list[Machine] = []
        for region in self.regions():
            try:
                found = describe_instances(self.client("ec2", region=region), filters)
            except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
                self.fail_aws(f"capa_machines: ec2:DescribeInstances in {region} failed", exception=e)
            machines.extend(m for m in (machine_of(i, region, wanted, states) for i in found) if m is not None)
        return sorted(machines, key=listing_order)

    def populate(self, machines: list[Machine]) -> None:
        names, warnings = hostnames(machines, self.get_option("hostnames"))
        for warning in warnings:
            self.warn(warning)
        bastions = bastions_by_cluster(machines)
        connection = Connection(
            style=self.get_option("connection"),
            bastion_user=self.get_option("bastion_user"),
            remote_user=self.get_option("remote_user"),
            ssm_bucket_name=self.get_option("ssm_bucket_name"),
        )
        strict = self.get_option("strict")
        for machine in machines:
            hostname = names[machine.instance_id]
            self.inventory.add_host(hostname)
            for group in groups_of(machine):
                self.inventory.add_group(group)
                self.inventory.add_child(group, hostname)
            variables = {
                **host_vars(machine),
                **connection_vars(machine, bastions.get(machine.cluster), connection),
            }
            for key, value in variables.items():
                # Tags are anyone's text who may tag an instance: data, never a template to render.
                self.inventory.set_variable(hostname, key, wrap_var(value))
            self._set_composite_vars(self.get_option("compose"), variables, hostname, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, hostname, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, hostname, strict=strict)
