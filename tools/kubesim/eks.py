"""EKS clusters (phase 2): not simulated yet."""

from __future__ import annotations

from typing import Any


def attach(sim: Any) -> None:
    del sim
