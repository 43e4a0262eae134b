#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_cluster_info
short_description: Report everything a cluster owns, CAPA's conditions and orphans
version_added: 0.1.0
description:
  - Finds every resource tagged for the cluster with one request per resource type (each filtered by the cluster's
    tags and paginated), whatever the number of resources - VPCs, internet gateways, subnets (asked for by the
    cluster's VPCs, as C(capa_subnet) asks, so a run that changed nothing answers it once), route tables, NAT
    gateways (deleted ones skipped), Elastic IPs, security groups, instances (terminated ones skipped), classic
    load balancers, and through one Resource Groups Tagging API request the network load balancers, target
    groups, bootstrap secrets and SSM parameters the cluster owns.
  - Three kinds need no request of their own when that answer tells enough. The Elastic IPs, when each the cluster
    owns is a live NAT gateway's (the tagging API has their tags, the gateways their public IPs and associations);
    an address no gateway holds, or a gateway's address the tagging API does not list, makes the
    C(DescribeAddresses). The launch templates and auto scaling groups of a spec without machine pools, when the
    tagging API lists no launch template (they could only be orphans, and a pool's group has its template as long as
    it exists; the tagging API does not list groups); with pools, or a listed template, one
    C(DescribeLaunchTemplates) and one C(DescribeAutoScalingGroups).
  - Reports CAPA's conditions (C(VpcReady), C(SubnetsReady), C(InternetGatewayReady), C(NatGatewaysReady),
    C(RouteTablesReady), C(ClusterSecurityGroupsReady), C(BastionHostReady) when the bastion is enabled,
    C(LoadBalancerReady) for self-managed clusters), and a readiness summary per machine group.
  - For an EKS cluster (C(spec.kind=eks)) it reads the EKS side by name - the cluster, each node group, Fargate
    profile and addon (a List, then a Describe each - EKS has no batch read), the access entries, the control-plane IAM
    role the cluster owns and its IAM OIDC provider - and reports CAPA's C(EKSControlPlaneReady),
    C(IAMControlPlaneRolesReady), C(EKSAddonsConfigured), C(EKSNodegroupReady) and C(EKSFargateProfileReady), plus
    C(OIDCProviderReady) and C(EKSAccessEntriesReady) for what CAPA keeps in status fields.
  - Reads the cluster's Nodes once (one list, through I(kubernetes_api)) and judges each machine group and machine
    pool by its Ready Nodes as well as its instances, as Cluster API's C(NodeHealthy) does - a self-managed cluster
    with a client certificate minted from its PKI secret, an EKS cluster with a token presigned from the run's
    credentials. What could not be read is listed in C(not_read) rather than reported as ready.
  - Lists orphans - resources tagged as owned by the cluster that the spec no longer explains - and the resources
    the in-cluster cloud provider created (tagged C(kubernetes.io/cluster/<cluster_name>=owned) without CAPA's
    ownership tag). Nothing is changed or deleted; the module never reports C(changed).
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  spec:
    description:
      - The normalised cluster spec, as M(clusterapi.aws.capa_cluster_spec) returns it under C(cluster). Empty means
        CAPA's defaults (managed VPC, a public and a private subnet per AZ, a NAT gateway per AZ, classic load
        balancer, no bastion, one control-plane machine, no workers).
      - Keys read - C(name) (must equal I(cluster_name) when set), C(kind), C(network.vpc.id),
        C(network.vpc.availability_zone_usage_limit), C(network.subnets) (C(id), C(availability_zone),
        C(cidr_block), C(is_public)), C(network.nat_gateways), C(network.security_group_overrides),
        C(bastion.enabled), C(control_plane_load_balancer.type) and C(.name), C(control_plane.replicas), and
        C(machine_deployments) (C(name), C(replicas)), C(machine_pools) (C(name), C(kind), C(desired_capacity),
        C(min_size)), C(control_plane_endpoint), and for C(kind=eks) C(eks) (C(name), C(role_arn), C(role_name),
        C(addons), C(node_groups), C(fargate_profiles), C(associate_oidc_provider), C(access_config),
        C(iam_authenticator)). Other keys are ignored.
    type: dict
    default: {}
  vpc_id:
    description:
      - The cluster's VPC (for example C(vpc.id) of M(clusterapi.aws.capa_vpc)). Other VPCs the cluster owns are
        then orphans. Without it the owned VPC named C(<cluster_name>-vpc) is the cluster's. A VPC brought by id
        comes from C(spec.network.vpc.id) instead.
    type: str
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.kubernetes_api
  - clusterapi.aws.attributes.info
notes:
  - Classic load balancers are described by name - the spec's (C(<cluster>-apiserver) unless it names one) and those
    the tagging API lists with CAPA's or the cloud provider's tag - in one request with their tags, not the region's
    every load balancer. When one of several names no longer exists (the tagging API still lists a deleted one), that
    request fails as a whole and the region's classic load balancers are read instead.
  - Instances are grouped by their C(clusterapi.aws/machine-group) tag; bootstrap secrets and parameters are
    matched to machines by their C(Name) tag.
"""

EXAMPLES = r"""
- name: Build the cluster spec
  clusterapi.aws.capa_cluster_spec:
    cluster: "{{ capa_cluster }}"
  register: spec

- name: Report the cluster's status
  clusterapi.aws.capa_cluster_info:
    cluster_name: "{{ spec.cluster.name }}"
    region: "{{ spec.cluster.region }}"
    spec: "{{ spec.cluster }}"
  register: status

- name: Fail when something is tagged for the cluster that the spec does not explain
  ansible.builtin.assert:
    that: status.orphans | length == 0
    fail_msg: "{{ status.orphans }}"
"""

RETURN = r"""
vpc_id:
  description: The cluster's VPC, or C(null) when none was found.
  returned: always
  type: str
  sample: vpc-0a1b2c3d4e5f67890
resources:
  description:
    - Resources carrying the cluster's ownership tag, per kind (C(vpc), C(internet_gateway), C(subnet),
      C(route_table), C(nat_gateway), C(elastic_ip), C(security_group), C(instance), C(load_balancer),
      C(load_balancer_v2), C(target_group), C(auto_scaling_group), C(launch_template), C(secret), C(ssm_parameter)).
    - Each has C(id), C(name), C(role) (CAPA's role tag), C(state) (C(null) where AWS reports none), C(tags) and
      a few fields of its kind (C(vpc_id), C(availability_zone), C(cidr_block), C(public), C(subnet_ids),
      C(default_route), C(allocation_ids), C(group), C(dns_name), C(machine)).
    - An instance also has C(launched_at), C(private_dns_name), C(node) (its Node's name) and C(node_ready) (C(false)
      also when it has no Node yet; C(null) when the Nodes were not read, and for the bastion).
  returned: always
  type: dict
  sample: {"vpc": [{"id": "vpc-0a1b2c3d4e5f67890", "name": "demo-vpc", "role": "common", "state": "available"}]}
counts:
  description: Number of owned resources per kind.
  returned: always
  type: dict
  sample: {"vpc": 1, "subnet": 6, "nat_gateway": 3, "elastic_ip": 3, "route_table": 6, "security_group": 4}
conditions:
  description:
    - CAPA's conditions, each with C(status) (bool), C(reason) and C(message). C(BastionHostReady) only when
      the bastion is enabled; C(LoadBalancerReady) only for C(kind=unmanaged) (reason
      C(WaitForExternalControlPlaneEndpoint) when the load balancer is disabled).
  returned: always
  type: dict
  sample: {"VpcReady": {"status": true, "reason": "Available", "message": "vpc-0a1b2c3d4e5f67890"}}
machines:
  description:
    - Per machine group of the spec (C(control-plane), C(bastion) when enabled, each machine deployment) -
      C(desired), C(running), C(states) (count per instance state), C(instances) (ids), C(nodes_ready) (machines
      whose Node is Ready; C(null) when the Nodes were not read, and for the bastion), C(ready), and an
      InstanceReady-like C(reason) (C(InstanceReady), C(NodeNotReady), C(InstanceProvisionStarted),
      C(InstanceStopped), C(InstanceNotFound), C(InstanceNotReady)) with a C(message).
  returned: always
  type: dict
  sample: {"control-plane": {"desired": 1, "running": 1, "ready": true, "reason": "InstanceReady"}}
machine_pools:
  description:
    - Per machine pool of the spec - C(kind) (C(asg) or C(fleet)), C(desired) (the auto scaling group's value, else
      the spec's), C(in_service) (running instances), C(instances), C(nodes_ready) (C(null) when the Nodes were not
      read), C(ready), C(reason) (C(ReplicasReady), C(ASGNotFound), C(WaitingForReplicas), C(WaitingForNodes)) and
      C(message).
  returned: always
  type: dict
  sample: {"mp-0": {"kind": "asg", "desired": 2, "in_service": 2, "nodes_ready": 2, "ready": true,
                    "reason": "ReplicasReady"}}
eks:
  description:
    - The EKS side of an EKS cluster (C(null) for a self-managed one) - C(cluster) (C(name), C(arn), C(status),
      C(version), C(platform_version), C(endpoint), C(created_at); C(null) when it does not exist), C(role),
      C(node_groups) and C(fargate_profiles) by name (C(status), sizes, C(nodes) and C(nodes_ready) when the Nodes
      were read), C(addons) by name (C(status), C(version)), C(oidc_provider) (ARN) and C(access_entries).
  returned: always
  type: dict
  sample: {"cluster": {"name": "demo-eks", "status": "ACTIVE", "version": "1.31"},
           "node_groups": {"ng-0": {"status": "ACTIVE", "desired": 2, "nodes": 2, "nodes_ready": 2}}}
not_read:
  description:
    - What the status could not read, and why (the Nodes without a reachable API, C(IAMAuthenticatorConfigured) which
      lives in the cluster). A status is complete only when this is empty.
  returned: always
  type: list
  elements: str
  sample: ["Nodes: kubernetes_api.mode is none"]
ready:
  description: Whether every condition is true and every machine group and machine pool is ready.
  returned: always
  type: bool
  sample: false
orphans:
  description: Owned resources the spec does not explain, each with C(kind), C(id), C(name) and C(reason).
  returned: always
  type: list
  elements: dict
  sample: [{"kind": "instance", "id": "i-0123456789abcdef0", "name": "old-0",
            "reason": "machine group 'md-old' is not in the spec"}]
cloud_provider_resources:
  description:
    - Resources tagged C(kubernetes.io/cluster/<cluster_name>=owned) without CAPA's ownership tag - what the
      in-cluster cloud provider created (load balancers, their security groups). Reported, never deleted here.
  returned: always
  type: list
  elements: dict
  sample: [{"kind": "load_balancer", "id": "a1b2c3d4e5", "name": "a1b2c3d4e5"}]
plan:
  description: Always empty - the module makes no mutating call.
  returned: always
  type: list
  elements: dict
  sample: []
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation) - one per resource type.
  returned: always
  type: dict
  sample: {"ec2:DescribeVpcs": 1, "ec2:DescribeSubnets": 1, "tagging:GetResources": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_info import (
    ClusterInfoTier,
    module_argument_spec,
)


def main():
    run_tier(
        module_argument_spec(),
        tier=ClusterInfoTier(),
        result_key=None,
        info=True,
    )


if __name__ == "__main__":
    main()
