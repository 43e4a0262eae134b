# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of ``clusterapi.aws.capa_cluster_spec``: the same validation as the module, in the controller.

Validating the spec makes no AWS request and reads nothing from the target, so there is no reason to ship the
module to a new Python process (AnsiballZ, interpreter start, imports) on every run of every role: this plugin
validates ``cluster`` against the same argument spec and rules (``_spec.py``) in-process. The module file stays the
documented interface and runs the same code when invoked on its own.
"""

from __future__ import annotations

import os
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_spec import (
    argument_spec,
    check_cluster,
    roles_for,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError


def default_region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")


def describe(errors: Any) -> list[str]:
    """The messages AnsibleModule would fail with (unsupported keys named as such)."""
    return [
        f"Unsupported parameters for (capa_cluster_spec) module: {error}"
        if isinstance(error, UnsupportedError)
        else str(error)
        for error in errors
    ]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("cluster",))
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: Any = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        result["changed"] = False
        validator = ArgumentSpecValidator(dict(cluster=dict(type="dict", required=True, options=argument_spec())))
        validated = validator.validate(self._task.args)
        if validated.error_messages:
            result.update(failed=True, msg="capa_cluster is invalid: " + "; ".join(describe(validated.errors)))
            return result
        cluster = validated.validated_parameters["cluster"]
        try:
            check_cluster(cluster, default_region())
        except SpecError as e:
            result.update(failed=True, msg=f"capa_cluster is invalid: {e}", field=e.field)
            return result
        cluster["region"] = cluster["region"] or default_region()
        result.update(cluster=cluster, security_group_roles=list(roles_for(cluster["kind"])))
        return result
