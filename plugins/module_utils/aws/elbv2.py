# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin reads of the ELBv2 API (NLBs, target groups).

Describe-style functions return ``None`` (or an empty list) when AWS says the resource does not exist
(:func:`.errors.is_not_found`), paginate, and decide nothing else.
"""

from __future__ import annotations
