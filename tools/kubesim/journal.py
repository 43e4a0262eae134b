"""One time-ordered record of what the simulated workload clusters saw and did.

Every entry is a dict with at least ``time`` (wall clock, ``time.time()``, so it can be merged with moto's request
records, which carry the same clock), ``source`` and ``event``. Sources:

* ``apiserver`` - one entry per API request: ``cluster``, ``user``, ``groups``, ``method``, ``path``, ``query``,
  ``verb``, ``resource``, ``namespace``, ``name``, ``subresource``, ``status`` and ``fields`` (the interesting
  fields of a PATCH/POST/PUT body, e.g. ``{"spec.unschedulable": true}``; never secret values).
* ``etcd`` - membership journal: ``member-added``, ``member-started``, ``member-promoted``, ``member-removed``,
  ``leader-changed`` with ``cluster``, ``member`` (name), ``id`` and details.
* ``quorum`` - ``write-failed`` when a failure window opens and ``write-recovered`` when it closes (``start``,
  ``end``, ``error``, ``failures``).
* ``node`` - ``booted``, ``boothook``, ``kubeadm``, ``registered``, ``joined``, ``rejected`` (``reason``),
  ``failed`` (``reason``), ``powered-off``, ``powered-on``, ``etcd-killed`` ... with ``cluster``, ``instance``,
  ``node``.
* ``moto`` - merged in when the journal is read: moto's request records (``service``, ``operation``) with their
  ``time``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

MAX_ENTRIES = 200_000  # a long session keeps the newest entries; each is a small dict


class Journal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []
        self._seq = 0

    def record(self, source: str, event: str, **fields: Any) -> dict[str, Any]:
        entry = {"time": time.time(), "source": source, "event": event, **fields}
        with self._lock:
            self._seq += 1
            entry["seq"] = self._seq
            self._entries.append(entry)
            if len(self._entries) > MAX_ENTRIES:
                del self._entries[: len(self._entries) - MAX_ENTRIES]
        return entry

    def entries(
        self, since: float | None = None, cluster: str | None = None, source: str | None = None
    ) -> list[dict[str, Any]]:
        with self._lock:
            found = list(self._entries)
        return [
            e
            for e in found
            if (since is None or e["time"] >= since)
            and (cluster is None or e.get("cluster") in (None, cluster))
            and (source is None or e["source"] == source)
        ]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def merge(*streams: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One list ordered by ``time`` (stable: entries of equal time keep their stream order)."""
    merged = [e for stream in streams for e in stream]
    merged.sort(key=lambda e: e.get("time", 0.0))
    return merged
