# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); plugins are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible plugins usually are.
"""The filters of a cluster's status: ``capa_describe`` (the clusterctl-style tree) and ``capa_topology`` (DOT).

Their documentation is in capa_describe.yml and capa_topology.yml next to this file; the logic is in
module_utils/cluster (describe.py, topology.py), where capa_status draws the same picture.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.describe import describe_tree
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.topology import topology_dot


def _status(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise AnsibleFilterError(
            f"{name} takes a cluster status (a dict, as status.json holds), not {type(value).__name__}"
        )
    return value


def capa_describe(status: Any) -> list[str]:
    return describe_tree(_status(status, "capa_describe"))


def capa_topology(status: Any) -> str:
    return topology_dot(_status(status, "capa_topology"))


class FilterModule:
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"capa_describe": capa_describe, "capa_topology": capa_topology}
