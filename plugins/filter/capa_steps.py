# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters over the steps capa_cluster_spec compiles (documented in capa_resolve.yml and capa_leftovers.yml)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import (
    UnresolvedReference,
    leftover_groups,
    resolve,
)


def capa_resolve(params: Any, outputs: Mapping[str, Any]) -> Any:
    """``params`` with each ``{"$ref": "<output>.<path>"}`` replaced by that value of ``outputs``."""
    if not isinstance(outputs, Mapping):
        raise AnsibleFilterError(
            f"capa_resolve: outputs must be a dict of earlier results, not {type(outputs).__name__}"
        )
    try:
        return resolve(params, outputs)
    except UnresolvedReference as e:
        raise AnsibleFilterError(f"capa_resolve: {e}") from e


def capa_leftovers(resources: Mapping[str, Any]) -> dict[str, list[str]]:
    """The worker groups and auto scaling group pools capa_cluster_info's ``resources`` show, by deleting role."""
    if not isinstance(resources, Mapping):
        raise AnsibleFilterError("capa_leftovers: expects capa_cluster_info's resources (a dict)")
    return leftover_groups(resources)


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"capa_resolve": capa_resolve, "capa_leftovers": capa_leftovers}
