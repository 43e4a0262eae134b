#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_asg
short_description: Reconcile a machine pool (launch template + auto scaling group) as CAPA's AWSMachinePool
version_added: 0.1.0
description:
  - A machine pool is one EC2 launch template and one auto scaling group, both named I(name) (not prefixed with
    the cluster, as in CAPA - the name must be unique in the account and region). The group always launches the
    template's C($Latest) version, across the private subnets of the I(failure_domains).
  - A new launch template version is made only when its content changes - instance type, the AMI (given or looked
    up as M(clusterapi.aws.capa_instance) does), root volume, SSH key, instance profile, security groups, instance
    metadata options (IMDSv2 required by default, safer than CAPA), spot options, tags or bootstrap data. Versions
    other than the default one, the latest and the one before it are deleted.
  - A new version that changes anything but bootstrap data starts a C(Rolling) instance refresh (after cancelling
    one in progress) unless I(refresh_preferences.disable). Bootstrap-data-only changes reach new instances only.
  - Bootstrap data never sits in the launch template. Each version gets its own Secrets Manager or SSM Parameter
    Store entries (gzipped; 7000-byte secrets or 4000-byte SecureString parameters); the template's user data only
    carries a boot hook that fetches them with the AWS CLI. All instances of a version share the entries, so the
    hook does not delete them; the module deletes them with their version. The instance profile needs
    C(secretsmanager:GetSecretValue) on C(aws.cluster.x-k8s.io/*) (or C(ssm:GetParameter) on
    C(/cluster.x-k8s.io/*)).
  - "The group carries CAPA's tags (C(PropagateAtLaunch=false)) and C(kubernetes.io/cluster/<cluster_name>=owned);
    instances and volumes get theirs from the template - CAPA's tags, C(clusterapi.aws/machine-group=<name>),
    C(sigs.k8s.io/cluster-api-provider-aws/bootstrap-data-hash) (sha256 of the bootstrap data with a fixed stand-in
    for the join token, which alone decides whether bootstrap data changed),
    C(clusterapi.aws/bootstrap-data=<backend>:<prefix>:<count>) and, with kubeadm bootstrap, the public id of the
    version's join token as C(clusterapi.aws/join-token-id)."
  - "With kubeadm bootstrap the pool's instances join with one bootstrap token of the pool, minted in the cluster
    through I(kubernetes_api) (a C(bootstrap.kubernetes.io/token) Secret expiring after I(bootstrap.token_ttl)) and
    written only into the version's bootstrap entries. A run that finds it missing or with less than half its life
    left rotates it: a new token in a new version (no instance refresh). Superseded tokens are deleted once they
    lapse or no kept version refers to them, and the pool's tokens with the pool. Without the API a pool that needs
    a new version is refused before any change."
  - A group created or resized in the run is done when its desired capacity of running instances have Ready Nodes
    (kubeadm bootstrap; Cluster API's MachinePool C(ReadyReplicas)), not when AWS launched them - the pool's
    instances (one C(DescribeInstances)) and the cluster's Nodes (one list) are polled within I(wait_timeout), with
    progress every 30 seconds. Without an answering API the Nodes are not awaited and the run warns; without
    kubeadm bootstrap (EKS's nodeadm) they are not awaited.
  - With I(externally_managed_replicas) (a cluster autoscaler owns the size) the desired capacity is only set when
    the group is created; later runs leave AWS's value alone and report it.
  - A run that changes nothing makes one C(DescribeLaunchTemplates), one C(DescribeLaunchTemplateVersions), one
    C(DescribeAutoScalingGroups), one C(DescribeLifecycleHooks), the AMI lookup (C(DescribeImages), and
    C(DescribeInstanceTypes) unless an earlier step of the chain described the cluster's instances, the pool's
    among them - then their architecture is the type's) and, with kubeadm bootstrap, one list of the cluster's
    bootstrap tokens. The bootstrap document (hence its hash) of a worker is rendered from the PKI's public facts,
    which the PKI secret's tags say (one C(ListSecrets), handed on by M(clusterapi.aws.capa_kubeadm) in a chain);
    the PKI's value (C(GetSecretValue)) is read only when those tags do not describe its current version, and for
    the CA that mints the client certificate of a request to the cluster.
  - The group and the template are looked for among the cluster's own (filtered by its owned tag, the questions
    M(clusterapi.aws.capa_cluster_info) asks, so a playbook's status step has them answered), and by name only when
    not found there (a group or template of that name the cluster does not own is refused).
  - C(state=absent) force-deletes the group (AWS terminates its instances), waits until it is gone, then deletes
    every version's bootstrap entries and the launch template. A group or template the cluster does not own is
    never changed or deleted.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  name:
    description:
      - Pool name - the name of the launch template and of the auto scaling group. 3 to 128 lower-case letters,
        digits, C(.) and C(-).
    type: str
    required: true
  failure_domains:
    description:
      - Availability zones of the pool; the group spans every private subnet of these zones. Default - the zones
        of the private subnets.
    type: list
    elements: str
  min_size:
    description: Minimum size of the group.
    type: int
    default: 1
  max_size:
    description: Maximum size of the group.
    type: int
    default: 1
  desired_capacity:
    description:
      - Desired capacity, between I(min_size) and I(max_size) (with I(externally_managed_replicas) too - it is then
        the group's first size). Default - AWS starts at I(min_size) and the module leaves it alone.
    type: int
  externally_managed_replicas:
    description:
      - A cluster autoscaler owns the desired capacity (CAPA's C(cluster.x-k8s.io/replicas-managed-by)
        annotation). The desired capacity is sent only when the group is created; the result reports AWS's value.
    type: bool
    default: false
  mixed_instances_policy:
    description:
      - Instance type overrides and an on-demand/spot distribution; the group then launches the template through a
        mixed instances policy.
    type: dict
    suboptions:
      instances_distribution:
        description: How capacity is split between on-demand and spot instances.
        type: dict
        default: {}
        suboptions:
          on_demand_base_capacity:
            description: On-demand instances before any spot.
            type: int
            default: 0
          on_demand_percentage_above_base_capacity:
            description: Percentage of on-demand instances above the base (0 to 100).
            type: int
            default: 100
          spot_allocation_strategy:
            description: How spot capacity is chosen.
            type: str
            choices: [lowest-price, capacity-optimized, capacity-optimized-prioritized, price-capacity-optimized]
            default: lowest-price
          on_demand_allocation_strategy:
            description: How on-demand capacity is chosen.
            type: str
            choices: [prioritized, lowest-price]
            default: prioritized
      overrides:
        description: Instance types the group may launch, in priority order.
        type: list
        elements: dict
        default: []
        suboptions:
          instance_type:
            description: An instance type.
            type: str
            required: true
  suspended_processes:
    description:
      - Auto scaling processes kept suspended; processes not listed are resumed.
    type: list
    elements: str
    choices: [Launch, Terminate, AddToLoadBalancer, AlarmNotification, AZRebalance, HealthCheck, InstanceRefresh,
              ReplaceUnhealthy, ScheduledActions]
    default: []
  capacity_rebalance:
    description: Replace spot instances at elevated interruption risk before they are interrupted.
    type: bool
    default: false
  default_cooldown:
    description: Seconds between scaling activities.
    type: int
    default: 300
  default_instance_warmup:
    description: Seconds a new instance needs before it counts towards the group's metrics.
    type: int
    default: 300
  refresh_preferences:
    description: The instance refresh started when a new version changes more than bootstrap data.
    type: dict
    default: {}
    suboptions:
      disable:
        description: Never start (or cancel) an instance refresh; new versions reach new instances only.
        type: bool
        default: false
      min_healthy_percentage:
        description: Share of the group kept in service during the refresh (0 to 100).
        type: int
        default: 90
      instance_warmup:
        description: Seconds before a replaced instance counts as healthy; default the group's warm-up.
        type: int
  lifecycle_hooks:
    description:
      - Lifecycle hooks of the group; hooks not listed (and not the drain hook) are deleted, as CAPA does.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Hook name.
        type: str
        required: true
      lifecycle_transition:
        description: When the hook holds the instance.
        type: str
        choices: ["autoscaling:EC2_INSTANCE_LAUNCHING", "autoscaling:EC2_INSTANCE_TERMINATING"]
        default: "autoscaling:EC2_INSTANCE_TERMINATING"
      default_result:
        description: What happens when the heartbeat times out (CAPA's default C(ABANDON)).
        type: str
        choices: [CONTINUE, ABANDON]
        default: ABANDON
      heartbeat_timeout:
        description: Seconds the hook holds the instance (30 to 7200; CAPA's default 3600).
        type: int
        default: 3600
      notification_target_arn:
        description: SNS topic or SQS queue notified.
        type: str
      role_arn:
        description: Role allowing Auto Scaling to publish to the target.
        type: str
      notification_metadata:
        description: Extra text sent with the notification.
        type: str
  drain_on_scale_in:
    description:
      - Add a C(autoscaling:EC2_INSTANCE_TERMINATING) lifecycle hook (default result C(CONTINUE), heartbeat 300 s)
        that gives the node's termination watcher time to drain it. Default - on when the pool uses spot
        (I(spot_market_options), or a distribution below 100% on-demand).
    type: bool
notes:
  - C(CreateLaunchTemplate) and C(CreateLaunchTemplateVersion) carry idempotency tokens, so a retried request
    never makes a second version.
  - Bootstrap entries of a version whose template write failed are deleted at once; the instances' hook never
    deletes them.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.machine
  - clusterapi.aws.machine.pool_bootstrap
  - clusterapi.aws.machine.asg
  - clusterapi.aws.kubernetes_api
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: A pool of 1 to 5 workers whose size a cluster autoscaler owns
  clusterapi.aws.capa_asg:
    cluster_name: demo
    name: demo-pool-0
    min_size: 1
    max_size: 5
    desired_capacity: 2
    externally_managed_replicas: true
    kubernetes_version: v1.31.2
    instance_type: t3.large
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids:
      - "{{ network_groups.security_groups.node.id }}"
      - "{{ network_groups.security_groups.lb.id }}"
    iam_instance_profile: nodes.cluster-api-provider-aws.sigs.k8s.io
    bootstrap:
      type: kubeadm
      endpoint_host: "{{ network_elb.load_balancer.dns_name }}"

- name: Mostly spot, several instance types, drained on scale-in
  clusterapi.aws.capa_asg:
    cluster_name: demo
    name: demo-spot
    min_size: 0
    max_size: 10
    instance_type: m6i.large
    kubernetes_version: v1.31.2
    subnets: "{{ network_subnets.subnets }}"
    capacity_rebalance: true
    mixed_instances_policy:
      instances_distribution:
        on_demand_base_capacity: 1
        on_demand_percentage_above_base_capacity: 0
        spot_allocation_strategy: price-capacity-optimized
      overrides:
        - instance_type: m6i.large
        - instance_type: m5.large
    bootstrap: {type: kubeadm, endpoint_host: "{{ endpoint }}"}

- name: Self-managed nodes of an EKS cluster, on the EKS-optimised AL2023 image of Kubernetes 1.31
  clusterapi.aws.capa_asg:
    cluster_name: demo-eks
    name: demo-eks-mp-0
    min_size: 1
    max_size: 3
    instance_type: t3.large
    kubernetes_version: "1.31"
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids:
      - "{{ network_groups.security_groups['node-eks-additional'].id }}"
      - "{{ eks.cluster.security_group_id }}"
    iam_instance_profile: nodes.cluster-api-provider-aws.sigs.k8s.io
    bootstrap: {type: eks}

- name: Remove the pool, its instances, template and bootstrap entries
  clusterapi.aws.capa_asg:
    cluster_name: demo
    name: demo-pool-0
    state: absent
"""

RETURN = r"""
launch_template:
  description: The launch template after the run (null when there is none).
  returned: always
  type: dict
  contains:
    id:
      description: Template id; C(planned:launch-template:<name>) in check mode when it would be created.
      type: str
      sample: lt-0a1b2c3d4e5f67890
    name:
      description: Template name (the pool name).
      type: str
      sample: demo-pool-0
    latest_version:
      description: Latest version number (the group runs C($Latest)).
      type: int
      sample: 3
    default_version:
      description: Default version number.
      type: int
      sample: 1
    versions:
      description: Version numbers kept.
      type: list
      elements: int
      sample: [1, 2, 3]
auto_scaling_group:
  description: The auto scaling group after the run (null when there is none); sizes are AWS's current values.
  returned: always
  type: dict
  contains:
    name:
      description: Group name (the pool name).
      type: str
      sample: demo-pool-0
    arn:
      description: Group ARN (CAPA's providerID of the pool); a placeholder in check mode when it would be created.
      type: str
      sample: "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:0a1b:autoScalingGroupName/demo-pool-0"
    min_size:
      description: Minimum size.
      type: int
      sample: 1
    max_size:
      description: Maximum size.
      type: int
      sample: 5
    desired_capacity:
      description: Desired capacity as AWS holds it (the autoscaler's value with externally managed replicas).
      type: int
      sample: 2
    subnet_ids:
      description: Subnets the group spans.
      type: list
      elements: str
      sample: [subnet-0a1b2c3d4e5f67890]
    capacity_rebalance:
      description: Whether capacity rebalancing is on.
      type: bool
      sample: false
    instances:
      description: The group's instances - C(id), C(availability_zone), C(lifecycle_state), C(health_status),
        C(instance_type) and C(launch_template_version).
      type: list
      elements: dict
      sample: [{"id": "i-0a1b2c3d4e5f67890", "availability_zone": "us-east-1a", "lifecycle_state": "InService",
                "health_status": "Healthy", "instance_type": "t3.large", "launch_template_version": "2"}]
    suspended_processes:
      description: Suspended processes.
      type: list
      elements: str
      sample: [AZRebalance]
    mixed_instances_policy:
      description: The mixed instances policy in the option's shape, or null.
      type: dict
      sample: {"instances_distribution": {"on_demand_base_capacity": 0}, "overrides": [{"instance_type": "m5.large"}]}
    lifecycle_hooks:
      description: Names of the group's lifecycle hooks.
      type: list
      elements: str
      sample: [clusterapi-aws-drain]
    launch_template_version:
      description: The template version the group launches (always C($Latest)).
      type: str
      sample: $Latest
instance_refresh:
  description: The instance refresh this run started (C(id), C(status)), or null.
  returned: always
  type: dict
  sample: {"id": "08b91cf7-8fa6-48af-b6a6-d227f40f1b9b", "status": "Pending"}
conditions:
  description:
    - CAPA's AWSMachinePool conditions C(ASGReady), C(LaunchTemplateReady) and C(InstanceRefreshStarted), each with
      C(status) and C(reason) (C(ASGNotFound), C(ASGDeletionInProgress), C(LaunchTemplateNotFound),
      C(InstanceRefreshNotNeeded), C(InstanceRefreshDisabled); empty when true).
  returned: always
  type: dict
  sample: {"ASGReady": {"status": true, "reason": ""}}
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "ec2:CreateLaunchTemplateVersion", "resource": "demo-pool-0 version 2",
            "reason": "launch template differs: instance_type"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeLaunchTemplates": 1, "autoscaling:DescribeAutoScalingGroups": 1}
diff:
  description: The pool before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.asg import AsgTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=AsgTier(),
        result_key=None,
    )


if __name__ == "__main__":
    main()
