# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_plan callback without ansible-playbook: how calls are classified, which results it collects (loops,
skipped items, other collections, failures, check mode or not), the table it prints and the stat and file it
writes. The callback gets fake task results shaped as ansible-core hands them over (``_host``, ``_task``,
``_result``) and a display that records what it was asked to print."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from ansible import context
from ansible.executor.stats import AggregateStats
from ansible.module_utils.common.collections import ImmutableDict

from ansible_collections.clusterapi.aws.plugins.callback import capa_plan
from ansible_collections.clusterapi.aws.plugins.callback.capa_plan import (
    CallbackModule,
    ClusterPlan,
    PlanRow,
    action_of,
    render_table,
)


@pytest.mark.parametrize(
    ("call", "action"),
    [
        ("ec2:CreateVpc", "create"),
        ("ec2:RunInstances", "create"),
        ("ec2:AllocateAddress", "create"),
        ("autoscaling:PutLifecycleHook", "create"),
        ("elb:RegisterInstancesWithLoadBalancer", "create"),
        ("ec2:AttachInternetGateway", "create"),
        ("ec2:AssociateRouteTable", "create"),
        ("ec2:AuthorizeSecurityGroupIngress", "create"),
        ("ec2:DeleteSubnet", "delete"),
        ("ec2:TerminateInstances", "delete"),
        ("ec2:ReleaseAddress", "delete"),
        ("elbv2:DeregisterTargets", "delete"),
        ("ec2:DetachInternetGateway", "delete"),
        ("ec2:DisassociateRouteTable", "delete"),
        ("ec2:RevokeSecurityGroupIngress", "delete"),
        ("iam:RemoveRoleFromInstanceProfile", "delete"),
        ("ec2:ModifyVpcAttribute", "update"),
        ("autoscaling:UpdateAutoScalingGroup", "update"),
        ("autoscaling:StartInstanceRefresh", "update"),
        ("elb:ConfigureHealthCheck", "update"),
        # Tagging an existing resource is an update, whatever the verb says.
        ("ec2:CreateTags", "update"),
        ("autoscaling:CreateOrUpdateTags", "update"),
        ("eks:TagResource", "update"),
        # Kubernetes, etcd (noun first) and local files.
        ("k8s:PatchNode", "update"),
        ("k8s:DeleteNode", "delete"),
        ("etcd:MemberRemove", "delete"),
        ("etcd:MemberPromote", "update"),
        ("etcd:MoveLeader", "update"),
        ("file:WriteFile", "update"),
        ("file:DeleteFile", "delete"),
        ("", "update"),
    ],
)
def test_calls_are_classified_by_their_verb(call: str, action: str):
    assert action_of(call) == action


# --- fakes -----------------------------------------------------------------------------------------------------------
@dataclass
class FakeDisplay:
    lines: list[str] = field(default_factory=list)
    banners: list[str] = field(default_factory=list)
    verbosity: int = 0

    def display(self, msg: str, color: str | None = None, **options: Any) -> None:
        self.lines.append(msg)

    def banner(self, msg: str, color: str | None = None, **options: Any) -> None:
        self.banners.append(msg)
        self.lines.append(f"BANNER {msg}")

    def __getattr__(self, name: str) -> Any:  # warning, vvv, debug ...: not this test's subject
        return lambda *args, **kwargs: None


class FakeHost:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name


class FakeTask:
    def __init__(self, action: str, name: str, check_mode: Any = None) -> None:
        self.resolved_action = action
        self.action = action
        self.name = name
        self.check_mode = check_mode

    def get_name(self) -> str:
        return self.name


def result(host: str, action: str, payload: dict[str, Any], name: str = "task", check_mode: Any = None) -> Any:
    return SimpleNamespace(_host=FakeHost(host), _task=FakeTask(action, name, check_mode), _result=payload)


def entry(call: str, resource: str = "r", reason: str = "missing") -> dict[str, str]:
    return {"call": call, "resource": resource, "reason": reason}


DEFAULTS = {
    name: option.get("default")
    for name, option in yaml.safe_load(capa_plan.DOCUMENTATION)["options"].items()  # the documented defaults
}


def callback(monkeypatch: pytest.MonkeyPatch, check: bool = True, **options: Any) -> tuple[CallbackModule, FakeDisplay]:
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=check))
    display = FakeDisplay()
    plugin = CallbackModule(display=display)
    plugin._plugin_options = {**DEFAULTS, **options}  # what set_options would load from DOCUMENTATION / env / ini
    return plugin, display


# --- collecting ------------------------------------------------------------------------------------------------------
def test_collects_plans_per_host_in_order_with_every_loop_item(monkeypatch: pytest.MonkeyPatch):
    plugin = callback(monkeypatch)[0]
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc", "demo-vpc")]}))
    plugin.v2_runner_on_ok(result("lite", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc", "lite-vpc")]}))
    loop = {
        "results": [
            {"plan": [entry("eks:CreateNodegroup", "ng-0")], "item": {"name": "ng-0"}},
            {"skipped": True, "item": {"name": "ng-1"}},
            {"plan": [entry("eks:CreateNodegroup", "ng-2"), entry("eks:TagResource", "ng-2", "tags differ")]},
        ]
    }
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_eks_nodegroup", loop, name="node groups"))
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_subnet", {"plan": []}))

    assert [(r.call, r.resource, r.action) for r in plugin.plans["demo"].rows] == [
        ("ec2:CreateVpc", "demo-vpc", "create"),
        ("eks:CreateNodegroup", "ng-0", "create"),
        ("eks:CreateNodegroup", "ng-2", "create"),
        ("eks:TagResource", "ng-2", "update"),
    ]
    assert [r.task for r in plugin.plans["demo"].rows] == ["task", "node groups", "node groups", "node groups"]
    assert [r.resource for r in plugin.plans["lite"].rows] == ["lite-vpc"]


def test_ignores_other_collections_and_results_without_a_plan(monkeypatch: pytest.MonkeyPatch):
    plugin, display = callback(monkeypatch)
    plugin.v2_runner_on_ok(result("demo", "ansible.builtin.debug", {"plan": [entry("ec2:CreateVpc")]}))
    plugin.v2_runner_on_ok(result("demo", "amazon.aws.ec2_vpc_net", {"plan": [entry("ec2:CreateVpc")]}))
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_cluster_spec", {"cluster": {}}))
    assert plugin.plans == {"demo": ClusterPlan()}  # a collection task ran: the cluster shows, with no calls

    stats = AggregateStats()
    plugin.v2_playbook_on_stats(stats)
    assert "demo: 0 to create, 0 to update, 0 to delete (check mode: nothing was changed)" in display.lines


def test_a_real_run_is_collected_only_with_always(monkeypatch: pytest.MonkeyPatch):
    plugin, display = callback(monkeypatch, check=False)
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc")]}))
    plugin.v2_playbook_on_stats(AggregateStats())
    assert plugin.plans == {}
    assert display.lines == []

    plugin, display = callback(monkeypatch, check=False, always=True)
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc")]}))
    plugin.v2_playbook_on_stats(AggregateStats())
    assert display.lines[-1] == "demo: 1 to create, 0 to update, 0 to delete"


def test_a_task_in_check_mode_is_collected_in_a_real_run(monkeypatch: pytest.MonkeyPatch):
    plugin = callback(monkeypatch, check=False)[0]
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc")]}))
    plugin.v2_runner_on_ok(
        result("demo", "clusterapi.aws.capa_subnet", {"plan": [entry("ec2:CreateSubnet")]}, check_mode=True)
    )
    assert [r.call for r in plugin.plans["demo"].rows] == ["ec2:CreateSubnet"]


def test_a_failed_task_keeps_its_partial_plan_and_marks_the_cluster_incomplete(monkeypatch: pytest.MonkeyPatch):
    plugin, display = callback(monkeypatch)
    failed = {"failed": True, "msg": "AWS refused", "plan": [entry("ec2:CreateSubnet", "demo-subnet-a")]}
    plugin.v2_runner_on_failed(result("demo", "clusterapi.aws.capa_subnet", failed, name="Subnets"))
    ignored = {"failed": True, "plan": [entry("ec2:DeleteVpc", "demo-vpc")]}
    plugin.v2_runner_on_failed(result("demo", "clusterapi.aws.capa_vpc", ignored, name="VPC"), ignore_errors=True)
    plugin.v2_playbook_on_stats(AggregateStats())

    assert [r.resource for r in plugin.plans["demo"].rows] == ["demo-subnet-a", "demo-vpc"]
    assert plugin.plans["demo"].failed_tasks == ["Subnets"]
    assert display.lines[-1].endswith("; incomplete, failed: Subnets")


# --- reporting -------------------------------------------------------------------------------------------------------
def test_the_table_aligns_columns_and_keeps_every_cell_whole():
    plan = ClusterPlan(
        rows=[
            PlanRow("create", "ec2:CreateVpc", "demo-vpc", "missing", "t"),
            PlanRow("update", "ec2:ModifyVpcAttribute", "demo-vpc", "enableDnsHostnames is off", "t"),
        ]
        + [PlanRow("delete", "ec2:DeleteSubnet", f"subnet-{n}", "not in the spec", "t") for n in range(8)]
    )
    header, *lines = render_table(plan)
    assert header.split() == ["#", "action", "call", "resource", "reason"]
    starts = [header.index(column) for column in ("action", "call", "resource", "reason")]
    for line, row in zip(lines, plan.rows, strict=True):
        cells = [line[start:end].strip() for start, end in zip(starts, [*starts[1:], None], strict=True)]
        assert cells == [row.action, row.call, row.resource, row.reason]
    assert [line[: starts[0]].strip() for line in lines] == [str(n) for n in range(1, 11)]


def test_stats_table_and_file_carry_the_same_plan(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    path = tmp_path / "plan.json"
    plugin, display = callback(monkeypatch, output_file=str(path))
    plugin.v2_runner_on_ok(
        result(
            "demo",
            "clusterapi.aws.capa_instance",
            {"plan": [entry("ec2:RunInstances", "demo-md-0-abcde", "replicas: us-east-1a")]},
            name="Machines",
        )
    )
    plugin.v2_runner_on_ok(
        result("demo", "clusterapi.aws.capa_instance", {"plan": [entry("ec2:TerminateInstances", "demo-md-0-zzzzz")]})
    )
    stats = AggregateStats()
    plugin.v2_playbook_on_stats(stats)

    expected = {
        "check_mode": True,
        "clusters": {
            "demo": {
                "summary": {"create": 1, "update": 0, "delete": 1},
                "calls": [
                    {
                        "action": "create",
                        "call": "ec2:RunInstances",
                        "resource": "demo-md-0-abcde",
                        "reason": "replicas: us-east-1a",
                        "task": "Machines",
                    },
                    {
                        "action": "delete",
                        "call": "ec2:TerminateInstances",
                        "resource": "demo-md-0-zzzzz",
                        "reason": "missing",
                        "task": "task",
                    },
                ],
                "failed_tasks": [],
            }
        },
    }
    assert stats.custom["_run"]["capa_plan"] == expected
    assert json.loads(path.read_text()) == expected
    assert display.banners == ["CAPA PLAN [demo]"]
    assert display.lines[-1] == "demo: 1 to create, 0 to update, 1 to delete (check mode: nothing was changed)"
    assert len(display.lines) == 1 + 1 + 2 + 1  # banner, header, two rows, summary


def test_nothing_collected_prints_and_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    path = tmp_path / "plan.json"
    plugin, display = callback(monkeypatch, output_file=str(path))
    stats = AggregateStats()
    plugin.v2_playbook_on_stats(stats)
    assert display.lines == []
    assert not path.exists()
    assert stats.custom == {}
