# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): stable hashes of declarative definitions (machine templates, node group templates)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping


def template_hash(definition: Mapping[str, Any]) -> str:
    """A short stable hash of everything that defines a machine (order of keys and of set-like lists ignored)."""
    canonical = json.dumps(_canonical(definition), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value
