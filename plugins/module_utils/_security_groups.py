# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster's role security groups (being written)."""

from __future__ import annotations


class SecurityGroupTier:
    pass
