# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)


class ModuleDocFragment:
    # The action attribute is written in both fragments: ansible-test's yamllint reads a fragment only as one string
    # literal, so the two cannot share a constant.
    # The attributes of the modules that reconcile AWS resources (every AWS module but the _info ones).
    DOCUMENTATION = r"""
options: {}
attributes:
  action:
    description:
      - Indicates this has a corresponding action plugin so some parts of the options can be executed on the
        controller.
    support: full
    details:
      - For a local target (C(ansible_connection=local)) whose Python is the controller's, the module runs in the worker
        process Ansible forked for the task instead of a new Python process, with the same arguments and results. Set
        the host variable C(capa_in_process=false) to run it as a module process.
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - Makes no mutating AWS request; C(plan) lists the calls a run would make, and resources that would be created
        get placeholder ids (C(planned:<kind>:<name>)) that the other modules of this collection accept.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details:
      - C(diff) holds the reconciled resources before and after the run.
  idempotent:
    description:
      - When the resources already match the options, a second run with the same options reports C(changed=false)
        and sends no mutating AWS request.
    support: full
"""

    # Read-only modules (capa_*_info): they never change anything.
    INFO = r"""
options: {}
attributes:
  action:
    description:
      - Indicates this has a corresponding action plugin so some parts of the options can be executed on the
        controller.
    support: full
    details:
      - For a local target (C(ansible_connection=local)) whose Python is the controller's, the module runs in the worker
        process Ansible forked for the task instead of a new Python process, with the same arguments and results. Set
        the host variable C(capa_in_process=false) to run it as a module process.
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details:
      - This module only reads; it runs the same in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
    details:
      - This module only reads; it has nothing to diff.
  idempotent:
    description:
      - Runs with the same options report C(changed=false) and send no mutating AWS request.
    support: full
"""
