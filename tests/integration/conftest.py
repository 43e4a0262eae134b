"""Integration-test fixtures (on top of tests/conftest.py's moto_server / aws / run_playbook / run_module)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import module_network


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


@pytest.fixture
def build_network(aws: Any, run_module: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``build_network(cluster, zones=2, kind="unmanaged")``: a CAPA network made by the collection's own modules -
    VPC, ``zones`` public + private subnets (no NAT, to stay fast) and the role security groups of ``kind``.
    Returns ``{"vpc", "vpc_id", "subnets", "groups"}``."""

    def build(cluster: str, zones: int = 2, kind: str = "unmanaged") -> dict[str, Any]:
        return module_network(run_module, cluster, zones, kind)

    return build


# The workload-cluster simulator (tools/kubesim): `kubesim_server` (session) and `kubesim` (per test).
from kubesim_fixtures import kubesim, kubesim_server  # noqa: E402, F401  # pylint: disable=unused-import

# `make check`'s integration subset: one test file per layer that proves the wiring end to end in seconds - a module
# against moto (VPC, subnet, security group), bad input refused before any call, module_defaults, the plan callback,
# preflight, the moto server's own fixes and the workload client against the simulator. `make test` runs everything.
CHECK_FILES = frozenset(
    {
        "test_bad_input.py",
        "test_module_defaults.py",
        "test_vpc.py",
        "test_subnet.py",
        "test_security_group.py",
        "test_plan_callback.py",
        "test_preflight.py",
        "test_moto_server.py",
        "test_workload_client.py",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "check: in make check's fast integration subset (CHECK_FILES)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in CHECK_FILES:
            item.add_marker(pytest.mark.check)
