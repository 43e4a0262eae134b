# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: subnets, route tables, NAT gateways and Elastic IPs (being written)."""

from __future__ import annotations


class SubnetTier:
    pass
