#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_security_group
short_description: Reconcile a cluster's role security groups and their ingress rules as Cluster API Provider AWS does
version_added: 0.1.0
description:
  - >-
    Creates the cluster's security groups, one per role, named C(<cluster>-<role>) with the description
    C(Kubernetes cluster <cluster>: <role>) and CAPA's ownership, role and Name tags. Self-managed clusters
    (I(kind=unmanaged)) get C(apiserver-lb), C(lb), C(controlplane) and C(node); EKS clusters (I(kind=eks)) get
    C(node-eks-additional). Both get C(bastion) when I(bastion.enabled).
  - Ingress rules follow CAPA - Kubernetes API, etcd, kubelet, node ports, SSH from the bastion, CNI rules
    (Calico by default) and your additional rules. On every group the cluster owns (except C(lb)) the ingress
    rules are fully reconciled - a rule not in the spec is revoked, a missing one authorised, one call per group
    and direction. Changing only a rule's description replaces the rule. Egress rules are never touched.
  - The C(lb) group is handed to the Kubernetes cloud provider for Service load balancers and tagged
    C(kubernetes.io/cluster/<cluster>=owned). Its NLB rules are set only when the group is created; afterwards
    the cloud provider owns its rules.
  - Groups are found by one DescribeSecurityGroups call filtered by I(vpc_id) and the cluster's ownership tag
    and matched to roles by name, so a run that changes nothing makes exactly that one request (plus one to
    check I(security_group_overrides) when given).
  - C(state=absent) revokes every ingress rule of the groups the cluster owns (they reference each other), waits
    for the cluster's own machines that use them and are C(shutting-down) to be terminated (one DescribeInstances
    per poll; the cluster's deletion terminates its machines without waiting for them), then deletes them, waiting
    within I(wait_timeout) while network interfaces still use them. Groups given in I(security_group_overrides)
    and groups without the ownership tag are left alone.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  vpc_id:
    description:
      - The cluster VPC. Required when I(state=present).
      - In check mode this may be the placeholder C(planned:vpc:<name>) that M(clusterapi.aws.capa_vpc) returns
        for a VPC it would create; every group is then planned as a create.
      - With I(state=absent) and no I(vpc_id), the cluster's groups are looked up in every VPC of the region.
    type: str
  vpc_cidr_block:
    description:
      - The VPC's primary CIDR block. Source of the C(apiserver-lb) rule for an internal load balancer and of
        the NLB rules on the C(lb) group; required in those cases.
    type: str
  kind:
    description:
      - C(unmanaged) for a self-managed control plane (AWSCluster), C(eks) for EKS (AWSManagedControlPlane).
    type: str
    choices: [unmanaged, eks]
    default: unmanaged
  bastion:
    description: The bastion host's group.
    type: dict
    suboptions:
      enabled:
        description: Create the C(bastion) group and allow SSH from it to the control plane and nodes.
        type: bool
        default: false
      allowed_cidr_blocks:
        description: CIDR blocks allowed to reach the bastion on TCP 22.
        type: list
        elements: str
        default: ['0.0.0.0/0']
  cni_ingress_rules:
    description:
      - Rules the CNI needs between control plane and nodes, applied to the C(controlplane) and C(node) groups
        with both groups as sources.
      - C(calico) (CAPA's default) is TCP 179 C(bgp (calico)) and IP protocol 4 C(IP-in-IP (calico)); C(none)
        adds nothing; a list of dicts with I(description), I(protocol), I(from_port) and I(to_port) replaces them.
    type: raw
    default: calico
  additional_control_plane_ingress_rules:
    description:
      - Extra rules on the C(controlplane) group (on C(node-eks-additional) for I(kind=eks)).
      - A rule with neither I(cidr_blocks) nor source groups allows the C(controlplane) group, as in CAPA (for
        I(kind=eks) give a source).
    type: list
    elements: dict
    default: []
    suboptions: &rule_options
      description:
        description: Rule description. A change replaces the rule.
        type: str
      protocol:
        description:
          - C(tcp), C(udp), C(icmp), C(-1) (all), C(4) (IP-in-IP), C(50) (ESP) or C(58) (ICMPv6).
          - C(-1), C(4) and C(50) take no ports.
        type: str
        required: true
      from_port:
        description: First port (ICMP type for C(icmp)).
        type: int
      to_port:
        description: Last port (ICMP code for C(icmp)).
        type: int
      cidr_blocks:
        description: IPv4 CIDR sources.
        type: list
        elements: str
        default: []
      source_security_group_ids:
        description: Security group id sources.
        type: list
        elements: str
        default: []
      source_security_group_roles:
        description: Sources given as roles of this cluster's groups (for example C(node)).
        type: list
        elements: str
        default: []
  additional_node_ingress_rules:
    description: Extra rules on the C(node) group; sources as for I(additional_control_plane_ingress_rules).
    type: list
    elements: dict
    default: []
    suboptions: *rule_options
  node_port_ingress_cidr_blocks:
    description: Sources of the node port range (TCP 30000-32767) on the C(node) group.
    type: list
    elements: str
    default: ['0.0.0.0/0']
  control_plane_load_balancer:
    description: The control-plane load balancer, as far as its security groups depend on it.
    type: dict
    suboptions:
      type:
        description: Load balancer type. With C(nlb) the C(lb) group gets the NLB rules when it is created.
        type: str
        choices: [classic, nlb, external, disabled]
        default: classic
      scheme:
        description:
          - C(internet-facing) allows I(api_server_port) on C(apiserver-lb) from the NAT gateways' addresses
            (I(nat_gateway_ips)); C(internal) from I(vpc_cidr_block).
        type: str
        choices: [internet-facing, internal]
        default: internet-facing
      ingress_rules:
        description:
          - Rules on the C(apiserver-lb) group. When none are given, I(api_server_port) is open to C(0.0.0.0/0).
        type: list
        elements: dict
        default: []
        suboptions: *rule_options
      additional_listeners:
        description: Additional NLB listeners; each port gets a rule on the C(lb) group.
        type: list
        elements: dict
        default: []
        suboptions:
          port:
            description: Listener port.
            type: int
            required: true
          protocol:
            description: Listener protocol (NLB additional listeners are TCP only).
            type: str
            default: TCP
      preserve_client_ip:
        description: NLB client IP preservation; the C(lb) rules then allow C(0.0.0.0/0) instead of the VPC.
        type: bool
        default: false
  api_server_port:
    description: Port the control-plane load balancer listens on.
    type: int
    default: 6443
  nat_gateway_ips:
    description:
      - Public IPv4 addresses of the cluster's NAT gateways (from M(clusterapi.aws.capa_subnet)), allowed as
        C(/32) on the C(apiserver-lb) group of an internet-facing load balancer.
      - Empty or holding check-mode placeholders, C(0.0.0.0/0) is allowed instead, as CAPA does until the
        addresses are known.
    type: list
    elements: str
    default: []
  security_group_overrides:
    description:
      - Role to the id of a security group you bring, used in place of the cluster's own group for that role
        (also as a rule source). It must be in I(vpc_id). It is never tagged, changed or deleted.
      - CAPA refuses overrides in a VPC it manages; this module allows them.
    type: dict
    default: {}
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: Security groups of cluster demo with CAPA's defaults
  clusterapi.aws.capa_security_group:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    vpc_cidr_block: "{{ network_vpc.vpc.cidr_block }}"
  register: network_sgs

- name: Internal NLB, a bastion, Cilium instead of Calico, and an extra node rule
  clusterapi.aws.capa_security_group:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    vpc_cidr_block: 10.0.0.0/16
    bastion:
      enabled: true
      allowed_cidr_blocks: [203.0.113.0/24]
    cni_ingress_rules:
      - {description: VXLAN (cilium), protocol: udp, from_port: 8472, to_port: 8472}
      - {description: health (cilium), protocol: tcp, from_port: 4240, to_port: 4240}
    control_plane_load_balancer:
      type: nlb
      scheme: internal
    additional_node_ingress_rules:
      - description: metrics
        protocol: tcp
        from_port: 9100
        to_port: 9100
        source_security_group_roles: [controlplane]

- name: Bring your own node group
  clusterapi.aws.capa_security_group:
    cluster_name: demo
    vpc_id: vpc-0123456789abcdef0
    security_group_overrides:
      node: sg-0123456789abcdef0

- name: Delete the cluster's security groups
  clusterapi.aws.capa_security_group:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    state: absent
"""

RETURN = r"""
security_groups:
  description: Role to group after the run (in check mode, as it would be). Before the run on deletion, C(null) after.
  returned: always
  type: dict
  sample:
    controlplane:
      id: sg-0a1b2c3d4e5f67890
      name: demo-controlplane
      managed: true
      ingress_rules:
        - protocol: tcp
          from_port: 2379
          to_port: 2379
          description: etcd
          source_security_group_id: sg-0a1b2c3d4e5f67890
  contains:
    id:
      description: Group id; C(planned:sg:<name>) in check mode when it would be created.
      type: str
    name:
      description: Group name.
      type: str
    managed:
      description: Whether the cluster owns the group (false for an override).
      type: bool
    ingress_rules:
      description:
        - Ingress rules, one per source, with I(protocol), I(from_port), I(to_port) (C(null) for protocols
          without ports), I(description) and one of I(cidr_block) or I(source_security_group_id)
          (I(cidr_ipv6) or I(prefix_list_id) for such rules on groups you bring).
      type: list
      elements: dict
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "ec2:CreateSecurityGroup", "resource": "demo-node", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeSecurityGroups": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.network.security_group import (
    SecurityGroupTier,
    module_argument_spec,
)


def main():
    run_tier(
        module_argument_spec(),
        tier=SecurityGroupTier(),
        result_key="security_groups",
    )


if __name__ == "__main__":
    main()
