#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_status
short_description: Write a cluster's status.json, or remove it, and publish the status
version_added: 0.2.0
description:
  - Writes O(status) as JSON (sorted keys, four-space indents) to O(path), unless the file already holds exactly
    that text; with O(state=absent) removes the file. The C(cluster) and C(network) roles write each cluster's
    C(status.json) with it.
  - With O(publish=true) it also publishes O(status) as the run's custom statistic C(capa_status.<cluster>), as
    C(ansible.builtin.set_stats) with C(per_host=false) and C(aggregate=true) would (so the statistics of the
    clusters of one run merge into one C(capa_status)); AWX keeps it as the job's artifact and hands it to a
    workflow's later nodes. The C(cluster) role publishes every cluster's status so, in every state, with or
    without a file - one task where a C(set_stats) task and this module were two (a task costs Ansible a worker
    process per host).
  - The file is written atomically (a reader never sees half of it) and readable by its owner only, as the
    kubeconfig next to it; a missing directory is created, also owner-only.
  - The write is planned as C(file:WriteFile) (C(file:DeleteFile) for a removal), so it appears in C(plan) and in
    the C(clusterapi.aws.capa_plan) table.
  - It makes no AWS request and takes no connection options; it is not in the C(clusterapi.aws.capa) action group.
author:
  - clusterapi.aws maintainers (@clusterapi)
attributes:
  action:
    description:
      - Indicates this has a corresponding action plugin so some parts of the options can be executed on the
        controller.
    support: full
    details:
      - On a local target whose Python is the controller's it runs in the worker process Ansible forked for the task
        (plugins/action/capa_status.py), as a module process otherwise.
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Reports the write or removal it would make in C(plan) and C(changed), and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details:
      - The file's text before and after.
  idempotent:
    description:
      - Runs with the same options give the same result and report C(changed=false).
    support: full
options:
  path:
    description:
      - The status file, for example C(<capa_output_dir>/<cluster>/status.json) on the target.
      - Without it no file is written or removed (the C(cluster) role's C(capa_output_dir="")); O(publish) still
        publishes.
    type: path
  status:
    description:
      - What the file says and what O(publish) publishes. Required with O(state=present) and with O(publish=true),
        which needs its C(cluster) (a string) to name the statistic.
    type: dict
  state:
    description:
      - C(present) writes the file, C(absent) removes it (and the topology files next to it).
    type: str
    default: present
    choices: [present, absent]
  topology:
    description:
      - Also write the cluster's topology next to the file - C(topology.dot) (Graphviz's DOT text - VPC, subnets per
        availability zone, gateways, load balancer, machine groups in their subnets, EKS node groups and Fargate
        profiles, each coloured by its state) and C(topology.svg) drawn from it by Graphviz's C(dot).
      - Without C(dot) on the controller only C(topology.dot) is written, with a warning. Both depend on O(status)
        only, so a run that changes nothing rewrites neither.
    type: bool
    default: false
  publish:
    description:
      - Also publish O(status) as the custom statistic C(capa_status.<cluster>) (see the description), in check mode
        too, as C(set_stats) does. The action plugin does it in the controller, whatever the connection.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Write the cluster's status
  clusterapi.aws.capa_status:
    path: "{{ capa_output_dir }}/{{ capa_cluster.name }}/status.json"
    status:
      cluster: "{{ capa_cluster.name }}"
      conditions: "{{ cluster_info.conditions }}"

- name: Remove it
  clusterapi.aws.capa_status:
    path: "{{ capa_output_dir }}/{{ capa_cluster.name }}/status.json"
    state: absent

- name: Publish the status for AWX (the job's artifact capa_status.<cluster>) without writing a file
  clusterapi.aws.capa_status:
    status:
      cluster: "{{ capa_cluster.name }}"
      conditions: "{{ cluster_info.conditions }}"
    publish: true
"""

RETURN = r"""
path:
  description: The status file (null without O(path)).
  returned: always
  type: str
  sample: /home/ops/.capa/demo/status.json
plan:
  description: The file written or removed (or, in check mode, that would be), as C(file:WriteFile) or
    C(file:DeleteFile) with the reason; empty when the file already says O(status).
  returned: always
  type: list
  elements: dict
  sample: [{"call": "file:WriteFile", "resource": "/home/ops/.capa/demo/status.json", "reason": "status differs"}]
summary:
  description:
    - What the C(cluster) role prints at the end of a run ("Show the cluster") - the short summary of O(status)
      (machine groups with their Nodes, bastion, machine pools, the EKS side, certificates, etcd snapshots,
      resources, what is not ready or was not read, orphans, where the file is), then, unless the status's C(state)
      is C(absent), an empty line and the C(clusterapi.aws.capa_describe) tree.
    - Built from O(status) alone; no AWS request and nothing read from the cluster.
  returned: when O(status) is given
  type: list
  elements: str
  sample: ["cluster demo (unmanaged, us-east-1): present", "  control-plane: 3 machines, 3 Nodes Ready, 3 etcd voters"]
diff:
  description: The file's text before and after (empty for no file).
  returned: when diff mode is on
  type: dict
"""

from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.status import (
    Operations,
    ReconcileError,
    SpecError,
    StatusFile,
    as_given,
    check_published_status,
    check_status_path,
    cluster_report,
    reconcile_status_file,
    reconcile_topology_files,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path"),
            status=dict(type="dict"),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            topology=dict(type="bool", default=False),
            publish=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ("status",)), ("publish", True, ("status",))],
        supports_check_mode=True,
    )
    path = Path(module.params["path"]) if module.params["path"] else None
    given = as_given(module.params["status"])
    ops = Operations(check_mode=module.check_mode)
    written = StatusFile(None, None)
    try:
        if module.params["publish"]:
            check_published_status(given)  # the action plugin publishes it
        if path is not None:
            check_status_path(path)
            status = given if module.params["state"] == "present" else None
            written = reconcile_status_file(ops, path, status)
            if module.params["topology"] or status is None:
                for warning in reconcile_topology_files(ops, path, status):
                    module.warn(warning)
    except SpecError as e:
        module.fail_json(msg=str(e), field=e.field)
    except (ReconcileError, OSError) as e:
        module.fail_json(msg=f"cannot write {path}: {e}", plan=ops.plan_as_list())
    result: dict[str, Any] = dict(changed=ops.changed, path=str(path) if path else None, plan=ops.plan_as_list())
    if given is not None:
        result["summary"] = cluster_report(given, str(path) if path else None)
    if module._diff:
        header = str(path) if path else ""
        result["diff"] = dict(
            before=written.before or "", after=written.after or "", before_header=header, after_header=header
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
