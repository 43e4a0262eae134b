# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of ``clusterapi.aws.capa_step``: run one module of the collection with compiled parameters.

The roles hand every module the parameters ``capa_cluster_spec`` compiled, as data. Ansible can take a task's
arguments from a template (``module: "{{ params }}"``), but warns on every such task, and a role that needs the
group's ``module_defaults`` to reach its modules must not set that group's defaults itself (Ansible replaces a
group's defaults rather than merging them). So the step runs here, with the precedence a task has:

1. ``module_defaults`` of ``group/clusterapi.aws.capa`` - capa_step is in the group, so Ansible has already put
   them among this task's arguments (everything besides ``module`` and ``params``);
2. ``module_defaults`` for the module itself (``clusterapi.aws.capa_vpc: {wait_timeout: 3}``);
3. ``params``, what the spec says (cluster name, region, identity, tags and the module's own options).

The module then runs as every module of the collection does: in the controller for a local target, as a module
process otherwise (``plugin_utils/in_process.py``).

Between steps the reads travel (``module_utils/kernel/shared_reads.py``): each step is given the host fact
``capa_shared_reads`` (one packed string: ``shared_reads.pack``) as its ``shared_reads`` option and leaves what it
hands forward (packed by the module already) in that fact - everything, when it changed nothing; the static reads
(images, instance types) only, when it changed (or would change) anything; nothing, when it failed. A loop's items
all see the fact as it was before the loop; once an item changed something, the items after it are given its static
reads only (Ansible runs a host's items one after another in one worker process, where :data:`LOOPS_CHANGED`
remembers it). The last item's reads are what the loop hands on.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import unresolved
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.shared_reads import (
    is_packed,
    pack,
    static_only,
    unpack,
)

# The modules a step may run: declared once, in the module whose documentation lists them.
from ansible_collections.clusterapi.aws.plugins.modules.capa_step import STEP_MODULES
from ansible_collections.clusterapi.aws.plugins.plugin_utils.in_process import CollectionModuleAction, Refused

COLLECTION = "clusterapi.aws"
SHARED_READS_FACT = "capa_shared_reads"
# The loops (task uuid, host) in this worker process one of whose items changed (or would change) something.
LOOPS_CHANGED: set[tuple[str, str]] = set()


class ActionModule(CollectionModuleAction):
    def run(self, tmp: Any = None, task_vars: Any = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        handed = result.pop("shared_reads", None)
        if result.get("failed") or not (is_packed(handed) or isinstance(handed, dict)):
            handed = {}  # the next step reads for itself
        if self._in_loop() and (result.get("changed") or result.get("failed")):
            LOOPS_CHANGED.add(self._loop_id(task_vars))
        # The module packed them (kernel/shared_reads.pack_withholding): the fact takes the string as it is.
        result.setdefault("ansible_facts", {})[SHARED_READS_FACT] = handed if is_packed(handed) else pack(handed)
        return result

    def module_call(self, task_vars: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        group_defaults = dict(self._task.args)
        module = group_defaults.pop("module", None)
        params = group_defaults.pop("params", None)
        problem = self._refuse(module, params)
        if problem:
            raise Refused(problem)
        fqcn = f"{COLLECTION}.{module}"
        call = {**group_defaults, **self._module_defaults(fqcn), **params}
        call.setdefault("shared_reads", self._reads_to_hand(task_vars))
        return fqcn, call

    def _reads_to_hand(self, task_vars: dict[str, Any]) -> str:
        """The fact as it is - packed: the module's ``invocation`` echoes its arguments into the task's result,
        which Ansible walks and copies several times in the controller, and as one string it is one value - or its
        static reads only, after an item of this loop changed something."""
        fact = task_vars.get(SHARED_READS_FACT)
        if self._in_loop() and self._loop_id(task_vars) in LOOPS_CHANGED:
            return pack(static_only(unpack(fact)))
        return fact if is_packed(fact) else pack(unpack(fact))

    def _in_loop(self) -> bool:
        return self._task.loop is not None or bool(self._task.loop_with)

    def _loop_id(self, task_vars: Any) -> tuple[str, str]:
        return self._task._uuid, str((task_vars or {}).get("inventory_hostname", ""))

    @staticmethod
    def _refuse(module: Any, params: Any) -> str | None:
        if module not in STEP_MODULES:
            return f"module: '{module}' is not one of {', '.join(STEP_MODULES)}"
        if not isinstance(params, dict):
            return f"params: must be a dict of {module}'s options, not {type(params).__name__}"
        left = unresolved(params)
        if left:
            return (
                f"params: references to earlier outputs are not resolved ({', '.join(left)}); "
                "pass the params through the clusterapi.aws.capa_resolve filter"
            )
        return None

    def _module_defaults(self, fqcn: str) -> dict[str, Any]:
        """module_defaults given for the module itself, the last layer (task over block over play) winning."""
        found: dict[str, Any] = {}
        for layer in self._task.module_defaults or []:
            if layer.get(fqcn):
                found.update(self._templar.template(layer[fqcn]))
        return found
