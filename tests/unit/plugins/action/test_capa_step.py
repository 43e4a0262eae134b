"""The capa_step action plugin runs a module with the compiled parameters, and the precedence a task has: the
group's module_defaults (which Ansible hands to capa_step, a member of the group) under the module's own
module_defaults under the parameters. The module run itself is Ansible's (_execute_module: the connection here is
not local, so no in-process run), replaced here by a recorder; tests/integration/test_module_defaults.py runs it for
real."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import MagicMock

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.action.capa_step import STEP_MODULES, ActionModule
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import ref
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.shared_reads import pack, unpack
from ansible_collections.clusterapi.aws.plugins.modules import capa_step

REPO = Path(__file__).resolve().parents[4]


def run(
    args: dict,
    module_defaults: list | None = None,
    task_vars: dict | None = None,
    answer: dict | None = None,
    loop: str | None = None,
) -> tuple[dict, list]:
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.module_defaults = module_defaults or []
    task.loop, task.loop_with, task._uuid = loop, None, "task-1"
    templar = MagicMock()
    templar.template.side_effect = lambda value: dict(value) if isinstance(value, dict) else value
    action = ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    calls: list = []

    def execute(module_name, module_args, task_vars, wrap_async):
        calls.append((module_name, module_args))
        return dict(answer or {"changed": True, "vpc": {"id": "vpc-1"}})

    action._execute_module = execute
    return action.run(task_vars=task_vars or {}), calls


def test_params_win_over_the_modules_defaults_over_the_groups():
    group_defaults = {"profile": "ops", "region": "eu-west-1", "wait_timeout": 60, "cluster_name": "other"}
    result, calls = run(
        {"module": "capa_vpc", "params": {"cluster_name": "demo", "region": "us-east-1"}, **group_defaults},
        [{"clusterapi.aws.capa_vpc": {"wait_timeout": 3}}, {"clusterapi.aws.capa_subnet": {"wait_timeout": 9}}],
    )
    assert calls == [
        (
            "clusterapi.aws.capa_vpc",
            {
                "profile": "ops",
                "region": "us-east-1",
                "wait_timeout": 3,
                "cluster_name": "demo",
                "shared_reads": pack({}),
            },
        )
    ]
    assert result["changed"] is True and result["vpc"] == {"id": "vpc-1"}


STATIC = {"k1": {"call": "ec2:DescribeImages", "taken": 1, "response": {}}}
VPCS = {"k2": {"call": "ec2:DescribeVpcs", "taken": 1, "response": {}}}
STEP = {"module": "capa_vpc", "params": {"cluster_name": "demo"}}


def test_reads_travel_from_step_to_step_in_the_host_fact():
    given = {"capa_shared_reads": pack({**STATIC, **VPCS}), "inventory_hostname": "demo"}
    handed = {**STATIC, **VPCS, "k3": {"call": "ec2:DescribeSubnets", "taken": 2, "response": {}}}
    result, calls = run(STEP, task_vars=given, answer={"changed": False, "shared_reads": handed})
    # The fact goes to the module as it is: one string in the task's invocation, not every answer.
    assert calls[0][1]["shared_reads"] == given["capa_shared_reads"]
    assert result["ansible_facts"] == {"capa_shared_reads": pack(handed)} and "shared_reads" not in result
    assert unpack(result["ansible_facts"]["capa_shared_reads"]) == handed
    # The collection's modules pack them already (shared_reads.pack_withholding): the fact takes the string as it is.
    packed, calls = run(STEP, task_vars=given, answer={"changed": False, "shared_reads": pack(handed)})
    assert packed["ansible_facts"] == {"capa_shared_reads": pack(handed)} and "shared_reads" not in packed
    # a failed step hands nothing on, packed or not: the next one reads for itself
    for answered in (handed, pack(handed)):
        failed, calls = run(STEP, task_vars=given, answer={"failed": True, "msg": "x", "shared_reads": answered})
        assert unpack(failed["ansible_facts"]["capa_shared_reads"]) == {}


def test_after_a_loop_item_changed_something_the_next_items_get_static_reads_only():
    given = {"capa_shared_reads": pack({**STATIC, **VPCS}), "inventory_hostname": "loop-host"}
    first, calls = run(STEP, task_vars=given, answer={"changed": True}, loop="{{ groups }}")
    assert unpack(calls[0][1]["shared_reads"]) == {**STATIC, **VPCS}  # no item changed anything yet
    assert unpack(first["ansible_facts"]["capa_shared_reads"]) == {}
    second, calls = run(STEP, task_vars=given, answer={"changed": False, "shared_reads": STATIC}, loop="{{ groups }}")
    assert unpack(calls[0][1]["shared_reads"]) == STATIC
    assert unpack(second["ansible_facts"]["capa_shared_reads"]) == STATIC


@pytest.mark.parametrize(
    "args, message",
    [
        ({"module": "capa_cluster_spec", "params": {}}, "module: 'capa_cluster_spec' is not one of"),
        ({"module": "ansible.builtin.shell", "params": {}}, "is not one of"),
        ({"module": "capa_vpc", "params": "{{ x }}"}, "params: must be a dict"),
        ({"module": "capa_subnet", "params": {"vpc_id": ref("vpc.vpc.id")}}, "not resolved (vpc.vpc.id)"),
    ],
)
def test_refused_before_any_module_runs(args, message):
    result, calls = run(args)
    assert result["failed"] and message in result["msg"]
    assert calls == []


def test_every_step_module_is_in_the_action_group():
    """capa_step must be in the group for the group's module_defaults to reach it; its modules are members too."""
    runtime = yaml.safe_load((REPO / "meta/runtime.yml").read_text())
    group = [entry for entry in runtime["action_groups"]["capa"] if isinstance(entry, str)]
    assert set(STEP_MODULES) <= set(group) and "capa_step" in group
    assert capa_step.STEP_MODULES == list(STEP_MODULES)
