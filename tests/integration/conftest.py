"""Integration-test fixtures (on top of tests/conftest.py's moto_server / aws / run_playbook / run_module)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def local_inventory(tmp_path: Path) -> Callable[..., Path]:
    """``local_inventory(host_vars=None, hostname="localhost", group_vars=None)`` -> path of an inventory file.

    The host runs with ``ansible_connection: local`` and this venv's Python, so modules find boto3.
    """

    def make(
        host_vars: dict[str, Any] | None = None,
        hostname: str = "localhost",
        group_vars: dict[str, Any] | None = None,
    ) -> Path:
        host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **(host_vars or {})}
        inventory = {"all": {"hosts": {hostname: host}, "vars": group_vars or {}}}
        path = tmp_path / f"inventory-{hostname}.json"
        # JSON is YAML: the yaml inventory plugin reads it.
        path.write_text(json.dumps(inventory, indent=2))
        return path

    return make
