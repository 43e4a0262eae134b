#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_instance
short_description: Reconcile a group of identical EC2 machines (control plane, machine deployment, bastion) as CAPA does
version_added: 0.1.0
description:
  - Keeps I(replicas) EC2 instances of one named group - a control plane, a machine deployment or the bastion - the
    way Cluster API and its AWS provider do - machines named C(<cluster_name>-<name>-<5 random characters>), spread
    over the failure domains (a new machine goes to the zone with the fewest, ties alphabetical, into that zone's
    first private subnet, or public subnet with I(public_ip)), tagged with CAPA's tags on the instance, its volume
    and its network interface.
  - "Besides CAPA's tags (C(Name), ownership, role, C(kubernetes.io/cluster/<cluster_name>=owned),
    C(MachineName=<cluster_name>/<machine>)) each instance carries C(clusterapi.aws/machine-group=<name>),
    C(clusterapi.aws/template-hash=<hash>) and, when it has bootstrap data,
    C(clusterapi.aws/bootstrap-data=<backend>:<prefix>:<count>); the module finds its machines and their bootstrap
    entries by these tags. A kubeadm machine also carries C(clusterapi.aws/kubernetes-version=<version>): as kubeadm
    upgrades one minor version at a time, a I(kubernetes_version) that skips a minor from, or goes a minor back from,
    what the group's machines run is refused after the describes, before any change."
  - The AMI is I(ami.id) or CAPA's lookup - the newest available HVM image of the instance type's architecture
    owned by I(ami.owner) whose name matches I(ami.name_format) (the bastion's - Canonical's newest Ubuntu 24.04).
    As CAPA's machines, a machine gets the lookup's image when it is launched and keeps it - a newer image of the
    same lookup replaces no machine, and a run over machines that keep theirs makes no C(DescribeImages); a new
    machine (a scale-up, a replacement) takes the newest. No image found is an error before anything changes.
  - A machine whose template hash (AMI it runs, and for a looked-up one the lookup - I(ami.base_os), I(ami.owner),
    I(ami.name_format) -, instance type, root volume, key, profile, security groups, spot, tenancy, placement group,
    public IP, bootstrap settings) is not the spec's is outdated and replaced by a rolling update - never more than
    I(replicas) + I(rollout.max_surge) machines and never fewer than I(replicas) - I(rollout.max_unavailable)
    running ones; the new machines boot the lookup's image of the day, or I(ami.id). A control plane replaces one
    machine at a time. Drift of the instance metadata options and of tags is repaired in place. A machine launched
    by a release before 2026-12 (its hash without the lookup) counts as current with the image it runs.
  - Bootstrap data never travels in EC2 user data - it is gzipped and stored in Secrets Manager or SSM Parameter
    Store; user data only carries a boot hook that fetches it with the AWS CLI, deletes it and restarts cloud-init
    (the AMI needs the AWS CLI, the instance profile C(GetSecretValue)/C(DeleteSecret) or
    C(GetParameter)/C(DeleteParameter) on the entries). The module deletes a machine's entries when it deletes
    the machine.
  - Control-plane machines are registered with the I(load_balancers) once running and deregistered before they
    are terminated. Worker machines are never registered.
  - A run that changes nothing makes one C(DescribeInstances) and one C(DescribeInstanceStatus) (and a
    load-balancer read for control planes), however many machines the group has. An image lookup takes the instance
    type's architecture from the group's running machines (C(DescribeInstances) reports it);
    C(DescribeInstanceTypes) is asked only when no machine of the spec's instance type runs yet.
  - C(state=absent) deregisters and terminates every machine of the group and deletes their bootstrap entries.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  name:
    description:
      - Name of the group, e.g. C(control-plane), C(md-0), C(bastion). Lower-case letters, digits and C(-).
    type: str
    required: true
  role:
    description:
      - What the machines are - their role tag, whether they are registered with load balancers (C(control-plane)
        only), and the kubeadm role of their bootstrap data.
    type: str
    choices: [control-plane, node, bastion]
    default: node
  replicas:
    description:
      - Number of machines. Odd for a control plane (etcd quorum); at most 1 for the bastion.
    type: int
    default: 1
  failure_domains:
    description:
      - Availability zones to spread the machines over. Default - the zones of the private subnets (public subnets
        with I(public_ip)); for the bastion, the zone of the first public subnet.
      - Every zone needs a subnet of the wanted kind among I(subnets).
    type: list
    elements: str
  public_ip:
    description:
      - Give the machines a public IP and place them in public subnets. Default C(true) for the bastion, else C(false).
    type: bool
  load_balancers:
    description:
      - Load balancers of the API server; control-plane groups only. Machines are registered when running and
        deregistered before termination.
      - Each is a dict with C(type) - C(classic), registered by C(name), or C(nlb), registered with every one of
        its C(target_group_arns) (names and ARNs may be check-mode placeholders). Other keys are ignored, so the
        C(load_balancer) and C(secondary_load_balancer) results of M(clusterapi.aws.capa_elb) can be passed as
        they are.
    type: list
    elements: dict
    default: []
  rollout:
    description:
      - How machines are replaced and removed.
    type: dict
    default: {}
    suboptions:
      max_surge:
        description: Machines allowed above I(replicas) during a rolling replacement.
        type: int
        default: 1
      max_unavailable:
        description:
          - Running machines allowed below I(replicas) during a rolling replacement. Must be 0 for a control plane;
            I(max_surge) and I(max_unavailable) cannot both be 0.
        type: int
        default: 0
      deletion_policy:
        description:
          - Which machines go first on scale-in (machines that are not running always go first). C(Oldest) and
            C(Newest) by launch time. A control plane also takes from the most crowded zone first.
          - Default C(Oldest) for a control plane (as KubeadmControlPlane), C(Random) for other groups.
        type: str
        choices: [Random, Newest, Oldest]
  max_unhealthy:
    description:
      - Self-healing guard, as Cluster API's MachineHealthCheck C(maxUnhealthy). A machine is unhealthy when its
        instance is stopped or stopping behind the module's back, or when EC2 reports its system or instance status
        check C(impaired); unhealthy machines are replaced (terminated, then relaunched within the I(rollout)
        bounds). When more machines than this are unhealthy at once, none is replaced; the run warns and says why
        in RV(health).
      - A count (C(2)) or a percentage of the group's machines (C(40%), rounded down).
      - A control plane is healed one machine at a time, and only while etcd keeps its quorum.
      - A machine terminated behind the module's back is simply gone, and replaced as a missing replica.
      - Machines that are running but have no Node yet, inside I(node_startup_timeout), count too (Cluster API
        counts every machine that is not healthy).
    type: raw
    default: "100%"
  unhealthy_range:
    description:
      - Replace unhealthy machines only while their number (those still starting included) is in this range, like
        C([1-3]) (MachineHealthCheck's C(unhealthyRange)); takes precedence over I(max_unhealthy).
    type: str
    version_added: 0.2.0
  unhealthy_node_conditions:
    description:
      - Node conditions that make a machine unhealthy once they have held for I(timeout) seconds since the
        condition's C(lastTransitionTime); any one is enough (MachineHealthCheck's C(unhealthyConditions)).
        Cluster API's examples use C(Ready) C(Unknown) 300 and C(Ready) C(False) 300. None by default.
      - Judged only when the group's Kubernetes API answers (I(kubernetes_api)). A worker whose Node is
        C(Ready=Unknown) (its kubelet stopped reporting) is removed without a drain, as Cluster API skips the drain
        of an unreachable Node; a control-plane machine is replaced only while etcd keeps its quorum.
    type: list
    elements: dict
    default: []
    version_added: 0.2.0
    suboptions:
      type:
        description: The condition's type, like C(Ready) or C(DiskPressure).
        type: str
        required: true
      status:
        description: The status that is unhealthy.
        type: str
        required: true
        choices: ["True", "False", "Unknown"]
      timeout:
        description: Seconds the condition must have held.
        type: int
        required: true
  node_startup_timeout:
    description:
      - Seconds after its launch by which a running machine must have a Node (found by providerID, or by the name
        kubeadm registers); a machine without one is unhealthy (MachineHealthCheck's C(nodeStartupTimeout)).
        C(0) turns this off. Judged only when the group's Kubernetes API answers.
    type: int
    default: 600
    version_added: 0.2.0
  rollout_before_certificates_expiry_days:
    description:
      - Control plane only (KubeadmControlPlane's C(rolloutBefore.certificatesExpiryDays)) - machines whose
        certificates expire within this many days are replaced, one at a time, through the etcd-safe rollout.
        Each machine's expiry is read once, when it is available, from its kube-apiserver's serving certificate
        (a port-forward through I(kubernetes_api)) and kept as its instance tag C(clusterapi.aws/certificates-expiry).
        At least 7; unset - off.
    type: int
    version_added: 0.2.0
  initialize:
    description:
      - Only initialize the group - when it has no machine, launch one (whatever I(replicas) says) and wait until it
        is available; a group that has machines is left as it is, without a change or a request to the cluster.
      - The C(control_plane) role runs this for a new cluster's control plane before the addons and the full
        reconcile, as KubeadmControlPlane creates the first machine (C(kubeadm init)) and a ClusterResourceSet applies
        once the control plane is initialized, so the CNI is there while the other machines join.
    type: bool
    default: false
  etcd_restore:
    description:
      - Control plane with I(initialize=true) only - rebuild a control plane that lost etcd quorum from a snapshot
        of M(clusterapi.aws.capa_etcd_snapshot) (the C(playbooks/restore.yml) playbook runs this).
      - Before any change the snapshot must exist and etcd must have lost quorum - while a majority of its members
        answer the run is refused (a restore would roll the cluster's state back), unless I(etcd_restore.force).
      - Then every machine of the group is deregistered, terminated and waited for, and a first machine restores
        the snapshot into its local etcd's data directory (as the one member of a new etcd cluster) before
        C(kubeadm init) runs; it gets the snapshot through a presigned URL valid for one hour, carried only in its
        bootstrap data. A later full reconcile of the group joins the other machines etcd-safely.
      - A run with the same snapshot once the restored machine exists changes nothing (its instance tag
        C(clusterapi.aws/etcd-restored-from) names the snapshot).
      - Restored is what etcd held - every Kubernetes object as of the snapshot; not restored are volumes (EBS, EFS)
        and whatever was created after the snapshot.
    type: dict
    version_added: 0.2.0
    suboptions:
      bucket:
        description: The snapshot bucket.
        type: str
        required: true
      key:
        description: The snapshot's object key (C(snapshots[].key) of M(clusterapi.aws.capa_etcd_snapshot)).
        type: str
        required: true
      version_id:
        description: The object version (default the current one).
        type: str
      force:
        description:
          - Restore even though etcd keeps quorum - every control-plane machine is replaced and the cluster's state
            goes back to the snapshot (a rollback after an accidental deletion).
        type: bool
        default: false
  node_drain_timeout:
    description:
      - Seconds a drain may take before the machine goes anyway (Cluster API's C(nodeDrainTimeout)); C(0) - until
        I(wait_timeout) runs out, then the run fails and keeps the machine.
    type: int
    default: 0
  node_volume_detach_timeout:
    description:
      - Seconds to wait for a drained Node's volumes to detach (C(nodeVolumeDetachTimeout)); C(0) - until
        I(wait_timeout) runs out.
    type: int
    default: 0
  min_ready_seconds:
    description:
      - Seconds a worker's Node must have been C(Ready) before its machine counts as available (a
        MachineDeployment's C(minReadySeconds)).
    type: int
    default: 0
  cluster_deletion:
    description:
      - The whole cluster is being deleted - machines go without a drain (Cluster API skips it then too).
    type: bool
    default: false
notes:
  - For kubeadm machines the module asks the workload cluster (through I(kubernetes_api)) - a machine counts as
    available only once its Node has joined (matched by C(spec.providerID) C(aws:///<zone>/<instance id>), else by
    the instance's private DNS name, the node name kubeadm gives the kubelet); a worker's Node must be C(Ready)
    (for I(min_ready_seconds)); a control-plane machine needs its static pods ready and its etcd member a started,
    promoted voter. I(rollout) bounds are judged on available machines, and the run waits for new machines to
    join within I(wait_timeout), reporting progress to the module's log and in RV(progress).
  - A control plane changes one machine per step, as KubeadmControlPlane does. Before every step a preflight
    (every machine has a Node, every control-plane pod and etcd member is healthy, no learner or never-started
    member) and etcd's quorum projection must pass, or the run fails with C(refused:) and changes nothing of that
    step. etcd is reached through the API server (a port-forward to C(etcd-<node>:2379)) with a client certificate
    minted from the etcd CA for the run.
  - A machine goes in Cluster API's order - etcd leadership moved off it (control plane), its Node cordoned and
    drained through the Eviction API (evictions a PodDisruptionBudget refuses are retried until
    I(node_drain_timeout)), its volumes detached, then it leaves the load balancers, its etcd member is removed
    (control plane), it is terminated, and its Node is deleted once the instance is gone. etcd members no machine
    explains (a killed run's leftovers) are removed while quorum allows.
  - Every kubeadm machine joins with a bootstrap token of its own (CABPK's) - minted in the cluster through
    I(kubernetes_api) just before its launch, expiring after I(bootstrap.token_ttl), renewed by a later run while
    the machine has not joined, deleted once it has (or once it went). The first control-plane machine's
    C(kubeadm init) token expires too; the control-plane machines launched in the same run join with it while the
    API cannot be asked. Otherwise a machine that cannot get a token is refused before its launch. A token of a
    release before 0.2.0 (no expiry) is deleted.
  - Without the Kubernetes API (I(kubernetes_api.mode=none), or C(auto) and no answer) workers are judged by the
    AWS-only signal C(InstanceRunning) and removed without a drain, with a warning; removing a control-plane machine
    is refused. A control plane being deleted (I(state=absent)) is the cluster's deletion - no etcd member removal.
  - With I(wait), a rolling replacement runs to its end within I(wait_timeout) (launch, wait until running,
    register, then deregister and terminate outdated machines, step by step); without it the run makes one step
    and reports. Check mode shows the whole rollout as if every new machine came up.
  - A worker group's run with I(wait) also waits for the machines an earlier run launched without waiting that
    have not joined yet, while they are inside I(node_startup_timeout) (600 seconds when that is C(0)); one past
    it, one the health check judged unhealthy, and one whose Node's kubelet stopped reporting (C(Ready) C(Unknown))
    are the health check's to judge. The C(cluster) role launches a new cluster's machine deployments with
    I(wait=false) as soon as its control plane is initialized, and waits for them after the other control-plane
    machines joined. A control plane waits only for the machines its run launched - one of an earlier run that is
    not available makes the preflight refuse the next step instead.
  - C(RunInstances) and every C(CreateSecret) carry an idempotency token of their own (new for each create), so a
    request resent after a lost answer creates nothing twice.
  - Machines stopped or terminated behind the module's back are reported with CAPA's C(InstanceReady) reasons
    (C(InstanceStopped), C(InstanceTerminated)); terminated ones do not count towards I(replicas) and are replaced
    as missing replicas, stopped ones are replaced as unhealthy within I(max_unhealthy).
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.machine
  - clusterapi.aws.machine.instance
  - clusterapi.aws.kubernetes_api
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: Two workers of machine deployment md-0, spread over the private subnets' zones
  clusterapi.aws.capa_instance:
    cluster_name: demo
    name: md-0
    role: node
    replicas: 2
    kubernetes_version: v1.31.2
    instance_type: t3.large
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids: ["{{ network_groups.security_groups.node.id }}"]
    iam_instance_profile: nodes.cluster-api-provider-aws.sigs.k8s.io
    bootstrap:
      type: kubeadm
      endpoint_host: "{{ network_elb.load_balancer.dns_name }}"
    rollout: {max_surge: 1, max_unavailable: 0, deletion_policy: Oldest}

- name: Three control-plane machines behind the classic load balancer
  clusterapi.aws.capa_instance:
    cluster_name: demo
    name: control-plane
    role: control-plane
    replicas: 3
    kubernetes_version: v1.31.2
    instance_type: t3.large
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids: ["{{ network_groups.security_groups.controlplane.id }}"]
    bootstrap: {type: kubeadm, endpoint_host: "{{ network_elb.load_balancer.dns_name }}"}
    load_balancers:
      - {type: classic, name: demo-apiserver}

- name: Own AMIs with a name pattern
  clusterapi.aws.capa_instance:
    cluster_name: demo
    name: md-arm
    instance_type: m7g.large
    kubernetes_version: v1.31.2
    ami: {owner: "111122223333", name_format: "team-k8s-{base_os}-{k8s_version}-*"}
    subnets: "{{ network_subnets.subnets }}"
    bootstrap: {type: raw, data: "{{ lookup('file', 'node.cloud-config') }}"}

- name: Bastion in the first public subnet
  clusterapi.aws.capa_instance:
    cluster_name: demo
    name: bastion
    role: bastion
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids: ["{{ network_groups.security_groups.bastion.id }}"]
    ssh_key_name: default

- name: Remove the machine deployment
  clusterapi.aws.capa_instance:
    cluster_name: demo
    name: md-0
    state: absent
"""

RETURN = r"""
machines:
  description: The group's machines after the run (in check mode, as they would be), sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Instance id; C(planned:instance:<name>) in check mode when it would be launched.
      type: str
      sample: i-0a1b2c3d4e5f67890
    name:
      description: Machine name (the Name tag).
      type: str
      sample: demo-md-0-x7k2p
    availability_zone:
      description: Zone of the machine.
      type: str
      sample: us-east-1a
    subnet_id:
      description: Subnet of the machine.
      type: str
      sample: subnet-0a1b2c3d4e5f67890
    private_ip:
      description: Private IPv4 address.
      type: str
      sample: 10.0.64.12
    public_ip:
      description: Public IPv4 address, if any.
      type: str
      sample: 203.0.113.7
    state:
      description: EC2 state (C(shutting-down) for machines leaving).
      type: str
      sample: running
    launch_time:
      description: Launch time (ISO 8601).
      type: str
      sample: "2024-11-12T08:26:40+00:00"
    template_hash:
      description: Template hash the machine was made from.
      type: str
      sample: 3f9a1c0b2d
    ami_id:
      description: AMI of the machine.
      type: str
      sample: ami-0a1b2c3d4e5f67890
    instance_type:
      description: Instance type of the machine.
      type: str
      sample: t3.large
    registered:
      description: Whether the machine is in every load balancer of I(load_balancers).
      type: bool
      returned: when load_balancers are given
      sample: true
    status:
      description: CAPA's C(InstanceReady) condition - C(status) and C(reason) (C(InstanceProvisionStarted),
        C(InstanceNotReady), C(InstanceStopped), C(InstanceTerminated); empty when ready).
      type: dict
      sample: {"InstanceReady": {"status": true, "reason": ""}}
    kubernetes:
      description:
        - What the workload cluster says of the machine - C(available) (counts for the rollout), C(reason) (why
          not), C(signal) (C(NodeReady), or the AWS-only C(InstanceRunning) without the Kubernetes API), C(node)
          (its Node's name), C(node_ready) (the Node's C(Ready) status) and, for the control plane, C(etcd_member)
          (C(voter), C(learner), C(missing), C(alarm:<names>) or C(unknown)).
        - null for machines that are not asked about (not kubeadm, or planned in check mode).
      type: dict
      sample: {"available": true, "reason": null, "signal": "NodeReady", "node": "ip-10-0-64-12.ec2.internal",
        "node_ready": "True", "etcd_member": "voter"}
    health:
      description:
        - What the health check said of the machine when the run started - C(state) (C(healthy); C(unhealthy),
          with the C(reason) - stopped, an impaired status check, a Node condition held past its timeout, no Node
          after I(node_startup_timeout); C(starting) - running, no Node yet, inside I(node_startup_timeout)) and
          whether it was C(remediated) (replaced) in this run.
        - A machine this run launched was not judged - C(healthy) once available, C(starting) until then; null for
          a machine that is leaving.
      type: dict
      sample: {"state": "unhealthy", "reason": "Node ip-10-0-64-12.ec2.internal Ready=Unknown for 312s (timeout 300s)",
        "remediated": true}
    certificates_expire:
      description:
        - When the machine's kube-apiserver serving certificate expires (control plane, once read; null before and
          for other machines).
      type: str
      sample: "2027-12-03T15:04:05Z"
replicas:
  description:
    - C(desired), C(ready) (available) and C(updated) (the spec's definition with the image each runs) machine
      counts.
  returned: always
  type: dict
  sample: {"desired": 2, "ready": 2, "updated": 2}
template_hash:
  description:
    - The template hash of the image below with the spec's definition (null when the group has no machine and
      wants none).
  returned: always
  type: str
  sample: 3f9a1c0b2d
ami_id:
  description:
    - The image the group's newest current machine runs; when none is current, or this run launched one, the image
      new machines get (looked up or given).
  returned: always
  type: str
  sample: ami-0a1b2c3d4e5f67890
health:
  description:
    - What the health check found when the run started - the unhealthy machines and why, those replaced (or, in
      check mode, to be replaced), and, when I(max_unhealthy) held remediation back, the reason.
  returned: when state is present
  type: dict
  contains:
    max_unhealthy:
      description: The guard in force.
      type: str
      sample: "100%"
    unhealthy_range:
      description: The range in force instead of I(max_unhealthy) (null when none is set).
      type: str
      sample: "[1-3]"
    unhealthy:
      description: Unhealthy machines (C(id), C(name), C(reason)).
      type: list
      elements: dict
      sample: [{"id": "i-0a1b2c3d4e5f67890", "name": "demo-md-0-x7k2p", "reason": "instance stopped"}]
    remediated:
      description: Names of the machines replaced because they were unhealthy.
      type: list
      elements: str
      sample: [demo-md-0-x7k2p]
    allowed:
      description: Whether the guard allowed remediation.
      type: bool
      sample: true
    skipped_reason:
      description: Why remediation was held back (null when it was not).
      type: str
      sample: "2 of 3 machines are unhealthy, more than max_unhealthy 1 (1): remediation is held back"
kubernetes_api:
  description:
    - Whether the run asked the workload cluster (C(asked) - kubeadm machines), whether its API answered
      (C(reachable)), why not (C(reason)), and the signal machines were judged by (C(signal)).
  returned: when state is present
  type: dict
  sample: {"asked": true, "reachable": true, "reason": null, "signal": "NodeReady"}
progress:
  description:
    - The last lines a long wait reported, at least one every 30 seconds of a wait. Every line also went to the
      module's log as it happened and, when the module ran in the controller's worker process (a local target on
      the controller's Python), to the controller's display (a terminal, an AWX job's output), in lines that begin
      with C([capa] <host>).
  returned: when the run waited long enough to report
  type: list
  elements: str
  sample:
    - "35s: waiting for demo-cp-x7k2p to join the cluster (demo-cp-x7k2p: pending): 30s waited, up to 29m25s left"
plan:
  description:
    - The mutating calls the run made, or in check mode would make, in order - to AWS (C(ec2:RunInstances)), to
      the Kubernetes API (C(k8s:PatchNode), C(k8s:CreateEviction), C(k8s:DeleteNode)) and to etcd
      (C(etcd:MoveLeader), C(etcd:MemberRemove)).
  returned: always
  type: list
  elements: dict
  sample: [{"call": "ec2:RunInstances", "resource": "demo-md-0-x7k2p", "reason": "replicas: us-east-1a"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeInstances": 1, "ec2:DescribeInstanceStatus": 1, "ec2:DescribeImages": 1}
diff:
  description: The group before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.instance import InstanceTier, group_argument_spec


def main():
    run_tier(group_argument_spec(), tier=InstanceTier(), result_key=None)


if __name__ == "__main__":
    main()
