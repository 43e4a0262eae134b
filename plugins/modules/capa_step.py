#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_step
short_description: Run one step capa_cluster_spec compiled - a module of the collection with its parameters
version_added: 0.1.0
description:
  - Runs O(module) with O(params), the parameters M(clusterapi.aws.capa_cluster_spec) compiled for it (after the
    C(clusterapi.aws.capa_resolve) filter filled in what they take from earlier results). The roles run every
    module this way, so each module gets exactly what the spec says, as data, without a templated task.
  - The module's options come, lowest first, from the C(module_defaults) of C(group/clusterapi.aws.capa) (this
    module is in the group; every option the group's defaults give it besides O(module) and O(params) is handed
    on - C(profile), C(endpoint_url), C(aws_config), C(region), C(wait_timeout), ...), then the C(module_defaults)
    for the module itself (for example C(clusterapi.aws.capa_vpc)), then O(params). The cluster's own values
    (C(cluster_name), C(region), C(identity), C(additional_tags)) are in O(params) where the spec sets them, so
    they win.
  - Check mode and diff are those of the task. The result is the module's.
  - Runs only as an action plugin (in the controller, which then runs the module as usual).
author:
  - clusterapi.aws maintainers (@clusterapi)
attributes:
  action:
    description:
      - Indicates this has a corresponding action plugin so some parts of the options can be executed on the
        controller.
    support: full
    details:
      - The action plugin (plugins/action/capa_step.py) resolves the options and runs O(module) - in the worker
        process Ansible forked for the task when the target is local and its Python is the controller's, as a module
        process otherwise (host variable C(capa_in_process=false)).
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - O(module) runs in the task's check mode; every module it runs supports check mode fully.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details:
      - The diff is that of O(module).
  idempotent:
    description:
      - Runs with the same options give the same result and report C(changed=false).
    support: full
    details:
      - As idempotent as O(module); every module it runs is.
options:
  module:
    description: The module to run (its short name).
    type: str
    required: true
    choices:
      - capa_vpc
      - capa_subnet
      - capa_security_group
      - capa_elb
      - capa_kubeadm
      - capa_instance
      - capa_asg
      - capa_fleet
      - capa_eks_cluster
      - capa_eks_nodegroup
      - capa_eks_fargate_profile
      - capa_external_resources
      - capa_cluster_info
      - capa_addons
      - capa_preflight
      - capa_etcd_snapshot
      - capa_etcd_snapshot_info
  params:
    description:
      - The module's parameters. References to earlier outputs left in them fail the task, naming them.
    type: dict
    required: true
notes:
  - Options that reach the module through C(module_defaults) are validated by the module itself.
"""

EXAMPLES = r"""
- name: Compile the cluster spec
  clusterapi.aws.capa_cluster_spec:
    cluster: "{{ capa_cluster }}"
  register: compiled

- name: Reconcile the VPC
  clusterapi.aws.capa_step:
    module: capa_vpc
    params: "{{ compiled.steps.network.vpc }}"
  register: vpc

- name: Reconcile the subnets of that VPC
  clusterapi.aws.capa_step:
    module: capa_subnet
    params: "{{ compiled.steps.network.subnet | clusterapi.aws.capa_resolve({'vpc': vpc}) }}"
"""

RETURN = r"""
changed:
  description: Whether the module changed anything.
  returned: always
  type: bool
  sample: false
"""

from ansible.module_utils.basic import AnsibleModule

STEP_MODULES = [
    "capa_vpc",
    "capa_subnet",
    "capa_security_group",
    "capa_elb",
    "capa_kubeadm",
    "capa_instance",
    "capa_asg",
    "capa_fleet",
    "capa_eks_cluster",
    "capa_eks_nodegroup",
    "capa_eks_fargate_profile",
    "capa_external_resources",
    "capa_cluster_info",
    "capa_addons",
    "capa_preflight",
    "capa_etcd_snapshot",
    "capa_etcd_snapshot_info",
]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            module=dict(type="str", required=True, choices=STEP_MODULES),
            params=dict(type="dict", required=True),
        ),
        supports_check_mode=True,
    )
    module.fail_json(msg="capa_step runs as an action plugin in the controller (plugins/action/capa_step.py)")


if __name__ == "__main__":
    main()
