# Copyright: Contributors to clusterapi.aws
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of ``clusterapi.aws.capa_etcd_snapshot``: the module itself, in the controller for local targets.

plugins/plugin_utils/in_process.py says when and why.
"""

from __future__ import annotations

from ansible_collections.clusterapi.aws.plugins.plugin_utils.in_process import CollectionModuleAction as ActionModule

__all__ = ["ActionModule"]
