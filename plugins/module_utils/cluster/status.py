# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A cluster's ``status.json``, written and removed through the kernel's operations (capa_status).

The file is a report, not state AWS holds, but it is the run's output a person and AWX read: it is planned
(``file:WriteFile`` / ``file:DeleteFile``) like the kubeconfig next to it, written atomically and owner-only, and a
run that would write the same text changes nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..kernel.errors import ReconcileError, SpecError
from ..kernel.local_files import read_text_if_any
from ..kernel.operations import Operations
from .describe import cluster_report
from .topology import topology_dot

# What capa_status imports from here (a module imports its own tier file only: docs/architecture.md).
__all__ = [
    "Operations",
    "ReconcileError",
    "SpecError",
    "StatusFile",
    "as_given",
    "check_published_status",
    "cluster_report",
    "check_status_path",
    "reconcile_status_file",
    "render_status",
    "reconcile_topology_files",
]

STATUS_FILE = "status.json"
TOPOLOGY_DOT = "topology.dot"
TOPOLOGY_SVG = "topology.svg"
DOT_TIMEOUT = 60  # seconds; dot lays out a cluster's few dozen boxes in well under one


@dataclass(frozen=True)
class StatusFile:
    """What the file held before the run and holds (or, in check mode, would hold) after it; None: no file."""

    before: str | None
    after: str | None


# The status keys that are None where they do not apply (a self-managed cluster has no EKS side, an EKS cluster no
# kubeadm certificates, a cluster without backups no etcd_backup, a deleted one no kubeconfig).
OPTIONAL_KEYS = ("kubeconfig", "eks", "certificates", "etcd_backup")


def as_given(status: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The status the cluster role built, with its optional keys None where they do not apply.

    ansible-core before 2.19 renders a templated task variable whose value is None as an empty string (its
    templar's finalize): the role's ``eks: "{{ cluster_info.eks }}"`` reaches the module as ``""`` on 2.17 and 2.18,
    and as None on 2.19 and later. Each such key is taken back to None, so status.json, the published statistic
    and the summary are the same whatever the ansible-core.
    """
    if status is None:
        return None
    return {key: (None if key in OPTIONAL_KEYS and value == "" else value) for key, value in status.items()}


def render_status(status: Mapping[str, Any]) -> str:
    """The file's text: sorted keys, four-space indents and a final newline (what ``to_nice_json`` wrote)."""
    return json.dumps(status, indent=4, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"


def check_status_path(path: Path) -> None:
    """Refused before anything is read or written: a directory, or a path that does not end in a file name."""
    if path.name in ("", ".", ".."):
        raise SpecError("path", f"'{path}' does not name a file")
    if path.is_dir():
        raise SpecError("path", f"'{path}' is a directory; name the file (for example {path / STATUS_FILE})")


def check_published_status(status: Mapping[str, Any] | None) -> None:
    """What ``publish`` needs: a status that names its cluster (the statistic is ``capa_status.<cluster>``)."""
    cluster = (status or {}).get("cluster")
    if not isinstance(cluster, str) or not cluster:
        raise SpecError("status.cluster", "publish needs the status to name its cluster (a string)")


def published_stats(status: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ansible_stats`` of a result that publishes ``status``: what ``ansible.builtin.set_stats`` returns for
    ``data: {capa_status: {<cluster>: status}}, per_host: false, aggregate: true`` (Ansible's strategy takes it from any
    action's result), so the statuses of the clusters of one run merge into one ``capa_status``."""
    return {"data": {"capa_status": {status["cluster"]: dict(status)}}, "per_host": False, "aggregate": True}


def reconcile_status_file(ops: Operations, path: Path, status: Mapping[str, Any] | None) -> StatusFile:
    """Write ``status`` to ``path`` (None: remove the file) unless it already says so."""
    before = read_text_if_any(path)
    if status is None:
        ops.delete_file(path, "state=absent")
        return StatusFile(before, None)
    after = render_status(status)
    ops.write_file(path, after, "status", current=before)
    return StatusFile(before, after)


def render_svg(dot: str) -> str | None:
    """Graphviz's SVG of the DOT text; None when Graphviz's ``dot`` is not installed on the controller."""
    binary = shutil.which("dot")
    if binary is None:
        return None
    done = subprocess.run(
        [binary, "-Tsvg"], input=dot, capture_output=True, text=True, timeout=DOT_TIMEOUT, check=False
    )
    if done.returncode != 0:
        raise ReconcileError(f"Graphviz's dot could not draw the topology: {done.stderr.strip()}")
    return done.stdout


def reconcile_topology_files(ops: Operations, status_path: Path, status: Mapping[str, Any] | None) -> list[str]:
    """``topology.dot`` and ``topology.svg`` next to the status file (removed with it); returns warnings.

    Both depend on the status only (no clock), so a run that changes nothing rewrites neither.
    """
    dot_path, svg_path = status_path.with_name(TOPOLOGY_DOT), status_path.with_name(TOPOLOGY_SVG)
    if status is None:
        ops.delete_file(dot_path, "state=absent")
        ops.delete_file(svg_path, "state=absent")
        return []
    dot = topology_dot(status)
    ops.write_file(dot_path, dot, "topology")
    svg = render_svg(dot)
    if svg is None:
        return [f"Graphviz's dot is not installed on the controller: {dot_path} was written, {svg_path} was not"]
    ops.write_file(svg_path, svg, "topology picture")
    return []
