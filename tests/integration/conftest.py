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


# The slowest tests, seconds under make test's load (.build/test-report.md, 2026-12-03). pytest-xdist's worksteal hands
# each worker a contiguous share of the collection and idle workers steal from the end of the others' queues, so a
# long test that happens to sit late in a share ends the suite with one busy worker on a machine with idle cores.
# Each share therefore starts with its part of these, dealt longest first to the lightest share (the LPT rule);
# the rest keeps its order. A test not listed counts as short; the table needs no update for correctness.
SLOW_TESTS = {
    "test_site_on_simulator.py::test_site_yml_on_the_simulator_joins_every_node_and_a_second_run_writes_nothing": 238,
    "test_cluster.py::test_ha_cluster_life": 201,
    "test_machine_lifecycle.py::test_control_plane_1_3_5_3_and_a_replacement_keep_quorum": 165,
    "test_machine_lifecycle.py::test_an_unhealthy_member_refuses_the_step_and_no_api_refuses_a_removal": 130,
    "test_crash_resume.py::test_kills_in_site_and_delete_then_resume[20261129]": 119,
    "test_faults.py::test_demo_cluster_converges_under_faults": 115,
    "test_user_install.py::test_a_users_install_builds_no_ops_and_deletes_a_self_managed_cluster": 86,
    "test_cluster.py::test_load_balancer_modes_at_cluster_level[disabled]": 85,
    "test_least_privilege.py::test_site_and_delete_need_nothing_beyond_the_controllers_policies": 84,
    "test_faults.py::test_lost_answers_to_a_third_of_the_writes_make_no_duplicate": 80,
    "test_crash_resume.py::test_kills_in_site_and_delete_then_resume[20261130]": 72,
    "test_identity.py::test_two_clusters_in_one_run_each_in_its_own_account": 70,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in CHECK_FILES:
            item.add_marker(pytest.mark.check)
    workers = int(
        getattr(config, "workerinput", {}).get("workercount") or getattr(config.option, "numprocesses", 0) or 0
    )
    if workers > 1:
        items[:] = longest_first_per_worker(items, workers)


def longest_first_per_worker(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """``items`` cut into ``workers`` contiguous shares of worksteal's sizes, each starting with its slow tests."""

    def weight(item: pytest.Item) -> int:
        return SLOW_TESTS.get(item.nodeid.rsplit("/", 1)[-1], 0)

    sizes, left = [], len(items)
    for k in range(workers):  # worksteal's first deal: each worker in turn gets the pending tests // workers left
        sizes.append(left // (workers - k))
        left -= sizes[-1]
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0] * workers
    for item in sorted((i for i in items if weight(i)), key=weight, reverse=True):
        share = min((k for k in range(workers) if len(shares[k]) < sizes[k]), key=lambda k: load[k])
        shares[share].append(item)
        load[share] += weight(item)
    rest = iter(i for i in items if not weight(i))
    for share, size in zip(shares, sizes, strict=True):
        share.extend(next(rest) for _ in range(size - len(share)))
    return [item for share in shares for item in share]
