# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): files the controller writes (kubeconfigs), written so no reader ever sees a partial file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import ReconcileError


def read_text_if_any(path: Path) -> str | None:
    """The file's text, None when there is no file; any other failure to read it is the run's error."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ReconcileError(f"cannot read {path}: {e}") from None


def write_private(path: Path, text: str) -> None:
    """Write atomically, readable by the owner only from the first byte (no window with a wider mode)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=".kubeconfig-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
