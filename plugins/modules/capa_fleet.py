#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_fleet
short_description: Reconcile a machine pool kept by an EC2 Fleet (launch template, several instance types, spot)
version_added: 0.1.0
description:
  - A machine pool of kind C(fleet) - an EC2 Fleet of type C(maintain) that keeps I(total_target_capacity)
    instances over a launch template named I(name), with every one of I(instance_types) allowed in every private
    subnet of the pool, I(on_demand_target_capacity) of them on-demand and the rest spot (by default).
    CAPA has no EC2 Fleet support; everything else follows its AWSMachinePool - CAPA's tags, the AMI lookup, a new
    launch template version when what defines the machines changes (at most three versions kept).
  - Bootstrap data never sits in the launch template - each version's cloud-config is stored in Secrets Manager or
    SSM Parameter Store, and its user data only holds a boot hook that fetches it (the entries stay while the
    version exists, since every instance of the version boots from them). The termination watcher is always
    merged into the cloud-config - a systemd service that cordons and drains the node when IMDS announces a spot
    interruption.
  - With kubeadm bootstrap the fleet's instances join with one bootstrap token of the pool, minted in the cluster
    through I(kubernetes_api), expiring after I(bootstrap.token_ttl), written only into the version's bootstrap
    entries (its public id is the instance tag C(clusterapi.aws/join-token-id)); a run that finds less than half
    of it left makes a new version with a new token and moves the fleet to it with C(ModifyFleet). Without the API
    a pool that needs a new version is refused before any change.
  - The launch template and the instances carry C(clusterapi.aws/machine-pool=<name>); the fleet is found by its
    tags with one C(DescribeFleets) (AWS cannot filter fleets by tag) and its instances with one
    C(DescribeFleetInstances).
  - A change of the target capacity, the launch template version, the instance types or the subnets is applied
    with C(ModifyFleet). The default capacity type, the spot allocation strategy and
    I(replace_unhealthy_instances) cannot be changed on a fleet - such a change fails and names the fields.
  - A fleet created or modified in the run is done when its target capacity of running instances have Ready Nodes
    (kubeadm bootstrap), after the capacity itself - one C(DescribeInstances) and one Node list per poll, within
    I(wait_timeout). Without an answering API the Nodes are not awaited and the run warns.
  - C(state=absent) deletes the fleet with its instances, waits (within I(wait_timeout)) until they are
    terminated, then deletes the launch template and every version's bootstrap entries.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  name:
    description:
      - Name of the pool, its launch template and its fleet's C(Name) tag. Lower-case letters, digits and C(-).
    type: str
    required: true
  failure_domains:
    description:
      - Availability zones of the pool. Default - the zones of the private subnets.
    type: list
    elements: str
  total_target_capacity:
    description: Number of instances the fleet keeps.
    type: int
    default: 1
  on_demand_target_capacity:
    description: How many of them are on-demand instances (at most I(total_target_capacity)).
    type: int
    default: 0
  default_target_capacity_type:
    description: Kind of the capacity above I(on_demand_target_capacity). Cannot be changed later.
    type: str
    choices: [spot, on-demand]
    default: spot
  instance_types:
    description:
      - Instance types the fleet may launch, each allowed in every subnet of the pool (at most 300 type x subnet
        pairs).
    type: list
    elements: str
    default: []
  spot_allocation_strategy:
    description: How the fleet picks spot capacity pools. Cannot be changed later.
    type: str
    choices: [price-capacity-optimized, capacity-optimized, capacity-optimized-prioritized, diversified, lowest-price]
    default: price-capacity-optimized
  replace_unhealthy_instances:
    description: Let the fleet replace instances that fail their status checks. Cannot be changed later.
    type: bool
    default: true
notes:
  - With I(wait), a run that created or changed the fleet waits (within I(wait_timeout)) until the fleet has its
    target capacity; spot capacity that stays short is a warning, not a failure - the fleet keeps trying.
  - C(CreateFleet), C(CreateLaunchTemplate) and C(CreateLaunchTemplateVersion) carry idempotency tokens.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.machine
  - clusterapi.aws.machine.pool_bootstrap
  - clusterapi.aws.machine.fleet
  - clusterapi.aws.kubernetes_api
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: A spot pool of three workers over three instance types, one of them on-demand
  clusterapi.aws.capa_fleet:
    cluster_name: demo
    name: pool-spot
    total_target_capacity: 3
    on_demand_target_capacity: 1
    instance_types: [m5.large, m5a.large, m6i.large]
    kubernetes_version: v1.31.2
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids: ["{{ network_groups.security_groups.node.id }}"]
    iam_instance_profile: nodes.cluster-api-provider-aws.sigs.k8s.io
    bootstrap:
      type: kubeadm
      endpoint_host: "{{ network_elb.load_balancer.dns_name }}"

- name: Remove the pool with its instances
  clusterapi.aws.capa_fleet:
    cluster_name: demo
    name: pool-spot
    state: absent
"""

RETURN = r"""
fleet:
  description: The pool's fleet after the run (in check mode, as it would be); null when there is none.
  returned: always
  type: dict
  contains:
    id:
      description: Fleet id; C(planned:fleet:<name>) in check mode when it would be created.
      type: str
      sample: fleet-0a1b2c3d-4e5f-6789-0abc-def012345678
    state:
      description: Fleet state (C(submitted), C(active), C(modifying)).
      type: str
      sample: active
    type:
      description: Fleet type, always C(maintain).
      type: str
      sample: maintain
    launch_template:
      description: The launch template - C(id), C(name), C(version) the fleet uses and its C(template_hash).
      type: dict
      sample: {"id": "lt-0a1b2c3d4e5f67890", "name": "pool-spot", "version": 2, "template_hash": "3f9a1c0b2d"}
    target_capacity:
      description: C(total), C(on_demand) and C(default_type) of the target capacity.
      type: dict
      sample: {"total": 3, "on_demand": 1, "default_type": "spot"}
    instance_types:
      description: Instance types of the overrides.
      type: list
      elements: str
      sample: [m5.large, m5a.large]
    subnet_ids:
      description: Subnets of the overrides.
      type: list
      elements: str
      sample: [subnet-0a1b2c3d4e5f67890]
    spot_allocation_strategy:
      description: Spot allocation strategy.
      type: str
      sample: price-capacity-optimized
    replace_unhealthy_instances:
      description: Whether the fleet replaces unhealthy instances.
      type: bool
      sample: true
    instances:
      description: The fleet's active instances - C(id), C(instance_type), C(health).
      type: list
      elements: dict
      sample: [{"id": "i-0a1b2c3d4e5f67890", "instance_type": "m5.large", "health": "healthy"}]
    tags:
      description: Tags of the fleet.
      type: dict
      sample: {"Name": "pool-spot", "clusterapi.aws/machine-pool": "pool-spot"}
    ami_id:
      description: The AMI of the launch template version in use (not in the C(before) of a diff).
      type: str
      sample: ami-0a1b2c3d4e5f67890
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "ec2:CreateFleet", "resource": "pool-spot", "reason": "machine pool fleet"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeFleets": 1, "ec2:DescribeFleetInstances": 1}
diff:
  description: The fleet before and after the run.
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.fleet import FleetTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=FleetTier(),
        result_key="fleet",
    )


if __name__ == "__main__":
    main()
