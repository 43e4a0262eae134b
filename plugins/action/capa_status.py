# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of ``clusterapi.aws.capa_status``: the module itself, in the controller for local targets
(plugins/plugin_utils/in_process.py says when and why), and with ``publish`` the status as the run's custom
statistic ``capa_status.<cluster>`` - the ``ansible_stats`` that ``ansible.builtin.set_stats`` returns, which Ansible's
strategy takes from any action's result. Published here, in the controller, it works for every connection; the module
has checked the status first (a failed task publishes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.status import as_given, published_stats
from ansible_collections.clusterapi.aws.plugins.plugin_utils.in_process import CollectionModuleAction


class ActionModule(CollectionModuleAction):
    def run(self, tmp: Any = None, task_vars: Any = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        status = self._task.args.get("status")
        publish = boolean(self._task.args.get("publish", False), strict=False)
        if publish and not result.get("failed") and isinstance(status, Mapping):
            result["ansible_stats"] = published_stats(as_given(status) or {})
        return result
