# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of ``clusterapi.aws.capa_cluster_spec``: the same validation and compile as the module, in the
controller.

Validating and compiling the spec makes no AWS request and reads nothing from the target, so there is no reason to
ship the module to a new Python process (AnsiballZ, interpreter start, imports) for it: this plugin runs the same
argument spec and the same code (``cluster/compile.py``) in-process, its errors naming the spec as users write it
(``capa_cluster -> network``, ``capa_cluster.nodes``). The module file stays the documented interface and runs the
same code when invoked on its own.

One thing only the controller knows: the play's ``module_defaults``. A region set there for
``group/clusterapi.aws.capa`` is the region of a spec that names none (before AWS_REGION), as it is for the
modules the steps run.
"""

from __future__ import annotations

import os
from typing import Any

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_spec import (
    invalid_message,
    module_argument_spec,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import compile_cluster
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError

GROUP = "group/clusterapi.aws.capa"
# amazon.aws's names for the region option.
REGION_OPTIONS = ("region", "aws_region", "ec2_region")


# Errors name the spec as users write it (the capa_cluster host variable), not the module option.
USER_NAME = "capa_cluster"


def user_argument_spec() -> dict[str, Any]:
    spec = module_argument_spec()
    spec[USER_NAME] = spec.pop("cluster")
    return spec


def as_user_wrote(args: Any) -> dict[str, Any]:
    args = dict(args)
    if "cluster" in args:
        args[USER_NAME] = args.pop("cluster")
    return args


def environment_region() -> str | None:
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
    _VALID_ARGS = frozenset(("cluster", "state", "output_dir", "kubernetes_api"))
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: Any = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        result["changed"] = False
        validated = ArgumentSpecValidator(user_argument_spec()).validate(as_user_wrote(self._task.args))
        if validated.error_messages:
            result.update(failed=True, msg="capa_cluster is invalid: " + "; ".join(describe(validated.errors)))
            return result
        params = validated.validated_parameters
        try:
            compiled = compile_cluster(
                params[USER_NAME],
                self.play_region() or environment_region(),
                params["state"],
                params["output_dir"],
                params["kubernetes_api"],
            )
        except SpecError as e:
            result.update(failed=True, msg=invalid_message(e), field=e.field)
            return result
        result.update(compiled)
        return result

    def play_region(self) -> str | None:
        """The region module_defaults give the collection's modules (the last layer that sets one wins)."""
        region = None
        for layer in self._task.module_defaults or []:
            defaults = self._templar.template(layer.get(GROUP) or {})
            for name in REGION_OPTIONS:
                if defaults.get(name):
                    region = defaults[name]
        return region
