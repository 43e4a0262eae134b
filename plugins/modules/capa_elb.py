#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_elb
short_description: Reconcile the control-plane load balancer of a self-managed cluster as Cluster API Provider AWS does
version_added: 0.1.0
description:
  - Creates and reconciles the load balancer in front of the Kubernetes API servers, with CAPA's settings and
    ownership tags, and returns the control-plane endpoint.
  - C(classic) (CAPA's API default) is a classic ELB named C(<cluster>-apiserver) (when that is longer than 32
    characters, a 28-character base36 blake2b hash of the cluster name followed by C(-k8s)) listening on TCP
    I(api_server_port) and forwarding to TCP 6443, health check C(TCP:6443) (or C(HTTPS:6443/readyz)) every 5 s,
    timeout 4 s, 2 healthy and 6 unhealthy checks, idle timeout 600 s. Attributes, health check, tags, subnets,
    listeners and security groups are compared with what AWS describes and only changed on drift.
  - C(nlb) is a network load balancer with the same name. CAPA derives an NLB's name from
    C(<namespace>-<cluster>); this collection has no namespace, so the cluster name is used for both types.
    Listener TCP I(api_server_port) forwards to a target group C(apiserver-target-<5 random characters>) (TCP 6443,
    instance targets, same health check values) and each additional listener to its own target group
    C(additional-listener-<5 random characters>). Target groups are found again by name prefix, port and protocol.
    The load balancer, target groups and listeners all carry the cluster's tags.
  - C(external) uses an existing load balancer named I(name) (classic first, then elbv2) as it is - it is
    validated, never tagged, changed or deleted, and returned with C(managed=false).
  - C(disabled) creates nothing; the endpoint is then C(null) and the C(LoadBalancerReady) condition has the
    reason C(WaitForExternalControlPlaneEndpoint), as in CAPA.
  - A load balancer with the wanted name but without the cluster's ownership tag is used as it is, like
    C(external). One with the name in another VPC or with another scheme is an error (names are unique per
    region).
  - Control-plane instances are not registered here; C(clusterapi.aws.capa_instance) does that with the returned
    C(load_balancer.name) and C(load_balancer.target_group_arns).
  - C(state=absent) deletes the cluster's own load balancers (for an NLB - listeners, the load balancer, then its
    target groups, waiting until it is gone) and every classic ELB tagged
    C(kubernetes.io/cluster/<cluster_name>=owned) by the Kubernetes cloud provider.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  vpc_id:
    description:
      - The cluster VPC (from M(clusterapi.aws.capa_vpc)). Required to create a C(classic) or C(nlb) load balancer.
      - May be a check-mode placeholder C(planned:vpc:<name>).
    type: str
  subnets:
    description:
      - The cluster's subnets, exactly as M(clusterapi.aws.capa_subnet) returns them in C(subnets). Each element
        needs C(id), C(availability_zone) and C(is_public); other keys are ignored.
      - One subnet per availability zone is used - public ones for an C(internet-facing) load balancer (or when
        there are no private ones), private ones for an C(internal) load balancer. Ids may be check-mode
        placeholders.
    type: list
    elements: dict
    default: []
  security_group_ids:
    description:
      - Security groups of the load balancer - the cluster's C(apiserver-lb) group plus any additional ones.
        Ids may be check-mode placeholders.
    type: list
    elements: str
    default: []
  type:
    description: Kind of control-plane load balancer.
    type: str
    choices: [classic, nlb, external, disabled]
    default: classic
  scheme:
    description: Whether the load balancer is reachable from the internet or only inside the VPC.
    type: str
    choices: [internet-facing, internal]
    default: internet-facing
  name:
    description:
      - Name of the load balancer instead of the generated one (at most 32 characters).
      - Required for I(type=external) - the name of the existing load balancer.
    type: str
  health_check_protocol:
    description: C(TCP) checks port 6443; C(HTTPS) requests C(/readyz) on port 6443.
    type: str
    choices: [TCP, HTTPS]
    default: TCP
  api_server_port:
    description: Port the load balancer listens on (the endpoint's port); instances are always reached on 6443.
    type: int
    default: 6443
  additional_listeners:
    description: More TCP listeners, each with its own target group on the same port. NLB only.
    type: list
    elements: dict
    default: []
    suboptions:
      port:
        description: Listener and target port.
        type: int
        required: true
      protocol:
        description: Listener protocol; only C(TCP).
        type: str
        default: TCP
  cross_zone_load_balancing:
    description: Whether the load balancer spreads traffic across all zones.
    type: bool
    default: false
  preserve_client_ip:
    description:
      - NLB target groups keep the client's address. Off by default, as in CAPA - a control-plane node reaching
        the NLB with it on can be routed to itself and time out.
    type: bool
    default: false
  secondary:
    description:
      - A second, NLB-only control-plane load balancer (CAPA's C(secondaryControlPlaneLoadBalancer)), usually
        internal for traffic inside the VPC. It must differ from the primary in name and scheme. It has the
        primary's health check, port, cross-zone and client-IP settings.
    type: dict
    suboptions:
      enabled:
        description: Whether to have the secondary load balancer.
        type: bool
        default: false
      name:
        description: Its name (required when enabled).
        type: str
      scheme:
        description: Its scheme.
        type: str
        choices: [internet-facing, internal]
        default: internal
notes:
  - A run that changes nothing makes only describes - for a classic ELB C(DescribeLoadBalancers),
    C(DescribeTags) and C(DescribeLoadBalancerAttributes) once each; for an NLB C(DescribeLoadBalancers),
    C(DescribeTargetGroups), C(DescribeListeners), C(DescribeTags) (all ARNs at once),
    C(DescribeLoadBalancerAttributes) and C(DescribeTargetGroupAttributes) (once per target group). Given
    I(shared_reads), the tags of a load balancer the preflight's tagging-API request listed are answered from it
    (it lists a resource with all its tags), so no C(DescribeTags) is made then.
  - With I(wait) a new NLB is awaited until C(active) before its target groups and listeners are created, and a
    deleted load balancer until it is gone, within I(wait_timeout).
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
- name: Classic ELB (CAPA's default) in front of the API servers
  clusterapi.aws.capa_elb:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids:
      - "{{ network_sgs.security_groups['apiserver-lb'].id }}"
  register: network_elb

- name: Internet-facing NLB with an HTTPS health check, plus an internal secondary NLB
  clusterapi.aws.capa_elb:
    cluster_name: demo
    type: nlb
    health_check_protocol: HTTPS
    vpc_id: "{{ network_vpc.vpc.id }}"
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids:
      - "{{ network_sgs.security_groups['apiserver-lb'].id }}"
    additional_listeners:
      - port: 22623
    secondary:
      enabled: true
      name: demo-apiserver-internal

- name: Use a load balancer you manage yourself
  clusterapi.aws.capa_elb:
    cluster_name: demo
    type: external
    name: my-apiserver-lb
    vpc_id: "{{ network_vpc.vpc.id }}"

- name: Delete the cluster's load balancers
  clusterapi.aws.capa_elb:
    cluster_name: demo
    type: nlb
    state: absent
"""

RETURN = r"""
load_balancer:
  description:
    - The primary load balancer after the run (in check mode, as it would be). C(null) for I(type=disabled) and
      after deletion.
  returned: always
  type: dict
  contains:
    type:
      description: C(classic) or C(nlb) (for I(type=external), what the existing load balancer is).
      type: str
      sample: nlb
    name:
      description: Load balancer name.
      type: str
      sample: demo-apiserver
    arn:
      description: ARN of an elbv2 load balancer (C(null) for classic); a placeholder in check mode.
      type: str
    dns_name:
      description: DNS name; C(planned:dns:<name>) in check mode when it would be created.
      type: str
      sample: demo-apiserver-1234567890.us-east-1.elb.amazonaws.com
    scheme:
      description: C(internet-facing) or C(internal).
      type: str
    port:
      description: The port clients use (I(api_server_port)).
      type: int
      sample: 6443
    managed:
      description: Whether the cluster owns it (false for I(type=external) and untagged load balancers).
      type: bool
    state:
      description: elbv2 state (C(provisioning), C(active)); C(null) for classic.
      type: str
    subnets:
      description: Subnet ids.
      type: list
      elements: str
    security_groups:
      description: Security group ids.
      type: list
      elements: str
    target_group_arns:
      description: Target groups of an elbv2 load balancer (empty for classic), the API server's first.
      type: list
      elements: str
    health_check:
      description:
        - Classic - C(target), C(interval), C(timeout), C(healthy_threshold), C(unhealthy_threshold).
        - NLB - the API target group's C(protocol), C(port), C(path) and the same counters.
      type: dict
secondary_load_balancer:
  description: The secondary NLB, as I(load_balancer); C(null) when not enabled.
  returned: always
  type: dict
endpoint:
  description: The control-plane endpoint, C({host, port}) from the primary load balancer; C(null) when disabled.
  returned: always
  type: dict
  sample: {"host": "demo-apiserver-1234567890.us-east-1.elb.amazonaws.com", "port": 6443}
conditions:
  description:
    - CAPA's C(LoadBalancerReady) condition - C(status) C(True) or C(False), C(reason) (C(WaitForDNSName),
      C(WaitForExternalControlPlaneEndpoint), C(Deleted)) and C(message).
  returned: always
  type: dict
  sample: {"LoadBalancerReady": {"status": "True", "reason": null, "message": null}}
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "elasticloadbalancing:CreateLoadBalancer", "resource": "demo-apiserver", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"elasticloadbalancing:DescribeLoadBalancers": 1}
diff:
  description: The load balancers before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.network.elb import ElbTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=ElbTier(),
        result_key=None,
    )


if __name__ == "__main__":
    main()
