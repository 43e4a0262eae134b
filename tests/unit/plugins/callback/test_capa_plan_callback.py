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
    TableRow,
    action_of,
    group_rows,
    render_table,
    shorten,
    summary_lines,
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
            {"plan": [entry("eks:CreateNodegroup", "ng-0")], "item": {"name": "ng-0"}, "_ansible_item_label": "ng-0"},
            {"skipped": True, "item": {"name": "ng-1"}, "_ansible_item_label": "ng-1"},
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
    assert [r.item for r in plugin.plans["demo"].rows] == ["", "ng-0", "", ""]  # the loop item's label, if any
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
    plugin, display = callback(monkeypatch, check=False)
    plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc")]}))
    plugin.v2_runner_on_ok(
        result("demo", "clusterapi.aws.capa_subnet", {"plan": [entry("ec2:CreateSubnet")]}, check_mode=True)
    )
    assert [r.call for r in plugin.plans["demo"].rows] == ["ec2:CreateSubnet"]
    stats = AggregateStats()
    plugin.v2_playbook_on_stats(stats)
    # Every collected task ran in check mode (a play's check_mode, as AWX's plan job): nothing was changed.
    assert display.lines[-1] == "demo: 1 to create, 0 to update, 0 to delete (check mode: nothing was changed)"
    assert stats.custom["_run"]["capa_plan"]["check_mode"] is True


def test_with_always_a_real_task_makes_the_cluster_not_a_check_run(monkeypatch: pytest.MonkeyPatch):
    plugin, display = callback(monkeypatch, check=False, always=True)
    plugin.v2_runner_on_ok(
        result("demo", "clusterapi.aws.capa_subnet", {"plan": [entry("ec2:CreateSubnet")]}, check_mode=True)
    )
    plugin.v2_runner_on_ok(result("lite", "clusterapi.aws.capa_vpc", {"plan": [entry("ec2:CreateVpc")]}))
    stats = AggregateStats()
    plugin.v2_playbook_on_stats(stats)
    assert display.lines[-5] == "demo: 1 to create, 0 to update, 0 to delete (check mode: nothing was changed)"
    assert display.lines[-1] == "lite: 1 to create, 0 to update, 0 to delete"
    assert stats.custom["_run"]["capa_plan"]["check_mode"] is False


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
def columns_of(header: str, line: str) -> list[str]:
    starts = [header.index(column) for column in ("action", "calls", "call ", "resource", "reason")]
    ends = [*starts[1:], None]
    # "calls" is right-aligned under its header: its cell starts where the action column's padding ends.
    return [line[: starts[0]].strip()] + [line[a:b].strip() for a, b in zip(starts, ends, strict=True)]


def test_the_table_aligns_columns_and_keeps_every_cell_whole_when_it_fits():
    rows = [
        PlanRow("create", "ec2:CreateVpc", "demo-vpc", "missing", "t"),
        PlanRow("update", "ec2:ModifyVpcAttribute", "demo-vpc", "enableDnsHostnames is off", "t"),
    ] + [PlanRow("delete", "ec2:DeleteSubnet", f"subnet-{n}", "not in the spec", f"t{n}") for n in range(8)]
    table = group_rows(rows, group_min=3)
    assert len(table) == 10  # the deletes are of eight tasks: nothing to group
    header, *lines = render_table(table)
    assert header.split() == ["#", "action", "calls", "call", "resource", "reason"]
    for number, (line, row) in enumerate(zip(lines, rows, strict=True), 1):
        assert columns_of(header, line) == [str(number), row.action, "1", row.call, row.resource, row.reason]


# A machine deployment's rolling replacement as capa_instance plans it (one task item), then the status file.
TOKEN = "Secret kube-system/bootstrap-token-aaaaaa (join token of demo-md-0-new01)"
ROLLOUT = [
    ("k8s:CreateSecret", TOKEN, "a machine joins"),
    ("secretsmanager:CreateSecret", "aws.cluster.x-k8s.io/1111-0", "bootstrap data of demo-md-0-new01"),
    ("ec2:RunInstances", "demo-md-0-new01", "replicas: us-east-1c"),
    ("k8s:PatchNode", "node ip-10-0-128-5.ec2.internal", "drain before machine demo-md-0-old01 goes"),
    ("ec2:TerminateInstances", "demo-md-0-old01", "outdated or beyond replicas"),
    ("k8s:DeleteNode", "node ip-10-0-128-5.ec2.internal", "machine demo-md-0-old01 is gone"),
    ("secretsmanager:DeleteSecret", "aws.cluster.x-k8s.io/2222-0", "machine demo-md-0-old01 goes"),
    ("k8s:PatchNode", "node ip-10-0-64-5.ec2.internal", "drain before machine demo-md-0-old02 goes"),
    ("k8s:PatchNode", "node ip-10-0-64-6.ec2.internal", "drain before machine demo-md-0-old03 goes"),
    ("ec2:TerminateInstances", "demo-md-0-old02, demo-md-0-old03", "beyond replicas"),
    ("k8s:DeleteSecret", TOKEN, "demo-md-0-new01 joined"),
    ("ec2:RunInstances", "demo-md-0-new0", "a name that is a prefix of another's"),
]
ADDONS = [("k8s:Apply", f"CustomResourceDefinition crd-{n}.projectcalico.org", "addon cni-calico") for n in range(19)]
ADDONS += [("k8s:Apply", "ConfigMap kube-system/calico-config", "addon cni-calico")]
ADDONS += [("k8s:Apply", f"ServiceAccount kube-system/ccm-{n}", "addon aws-cloud-controller-manager") for n in range(5)]


def plan_rows(calls: list[tuple[str, str, str]], task: str, item: str = "") -> list[PlanRow]:
    return [PlanRow(action_of(call), call, resource, reason, task, item) for call, resource, reason in calls]


def test_a_machine_step_is_one_row_shown_as_its_machine_call():
    rows = plan_rows(ROLLOUT, "Reconcile the machine deployments", "md-0")
    table = group_rows(rows, group_min=3)
    assert [(t.action, t.call, t.resource, len(t.calls)) for t in table] == [
        ("create", "ec2:RunInstances", "demo-md-0-new01", 3),
        ("delete", "ec2:TerminateInstances", "demo-md-0-old01", 4),
        ("delete", "ec2:TerminateInstances", "demo-md-0-old02, demo-md-0-old03", 3),
        # Its token is deleted once the machine joined, away from its step: a row of its own.
        ("delete", "k8s:DeleteSecret", ROLLOUT[10][1], 1),
        ("create", "ec2:RunInstances", "demo-md-0-new0", 1),
    ]
    assert table[0].reason == "replicas: us-east-1c (+ k8s:CreateSecret, secretsmanager:CreateSecret)"
    assert table[1].reason == (
        "outdated or beyond replicas (+ k8s:PatchNode, k8s:DeleteNode, secretsmanager:DeleteSecret)"
    )
    assert table[2].reason == "beyond replicas (+ k8s:PatchNode)"
    assert [call for t in table for call in t.calls] == rows  # every call once, in order


def test_addon_objects_are_one_row_counted_by_kind_and_addon():
    rows = plan_rows(ADDONS, "Apply the cluster addons")
    rows += plan_rows([("file:WriteFile", "/out/demo/status.json", "status differs")], "Write status.json")
    (addons, status) = group_rows(rows, group_min=3)
    assert (addons.action, addons.call, len(addons.calls)) == ("update", "k8s:Apply", 25)
    assert addons.resource == "19 CustomResourceDefinition, 1 ConfigMap, 5 ServiceAccount"
    assert addons.reason == "addon cni-calico (20), aws-cloud-controller-manager (5)"
    assert status == TableRow.single(rows[-1])
    header, line, _status = render_table([addons, status], width=200)
    assert columns_of(header, line) == ["1", "update", "25", "k8s:Apply", addons.resource, addons.reason]
    header, line, _status = render_table([addons, status], width=120)
    assert len(line) == 120 and columns_of(header, line)[4].startswith("19 CustomResourceDefinition, 1 ConfigMap")


def test_runs_are_grouped_within_one_task_item_and_from_group_min_on():
    subnets = [("ec2:CreateSubnet", f"demo-subnet-{z}", "missing") for z in "abc"]
    rows = plan_rows(subnets, "Subnets", "public") + plan_rows(subnets[:2], "Subnets", "private")
    table = group_rows(rows, group_min=3)
    assert [(t.resource, len(t.calls)) for t in table] == [
        ("demo-subnet-a, demo-subnet-b, demo-subnet-c", 3),
        ("demo-subnet-a", 1),
        ("demo-subnet-b", 1),
    ]
    assert table[0].reason == "missing (3)"
    assert len(group_rows(rows, group_min=6)) == 5


def test_every_line_fits_the_width_and_a_shortened_cell_keeps_its_ends():
    long_path = "/tmp/pytest-of-root/pytest-328/test_plan_of_one_machine_deployment_change0/out/demo/status.json"
    rows = plan_rows(ADDONS + ROLLOUT, "one task") + [
        PlanRow("update", "file:WriteFile", long_path, "status differs " * 8, "Write status.json"),
        PlanRow(
            "delete",
            "elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
            "demo-apiserver",
            "machine goes; deregistered from demo-apiserver first",
            "ELB",
        ),
    ]
    for width in (120, 100, 80):
        lines = render_table(group_rows(rows, group_min=3), width)
        assert max(len(line) for line in lines) <= width, width
    natural = render_table(group_rows(rows, group_min=3), 1000)
    assert max(len(line) for line in natural) > 200  # so the widths above were cut to fit
    shortened = render_table(group_rows(rows, group_min=3), 120)[-2]
    cell = shortened.split("  file:WriteFile", 1)[1].split()[0]
    head, tail = cell.split("\u2026")
    assert long_path.startswith(head) and long_path.endswith(tail) and min(len(head), len(tail)) >= 5, cell
    # The long call gives way only once the resources and reasons are down to 16 columns.
    assert "elasticloadbalancing:Deregist" in render_table(group_rows(rows, group_min=3), 140)[-1]
    assert shorten("abcdefghij", 5, "middle") == "ab\u2026ij"
    assert shorten("abcdefghij", 5, "end") == "abcd\u2026"
    assert shorten("abc", 5, "end") == "abc"


def test_the_summary_counts_calls_and_wraps_the_failed_tasks():
    failed = [f"a task with a long name {n}" for n in range(9)]
    plan = ClusterPlan(rows=plan_rows(ADDONS, "addons"), failed_tasks=failed)
    lines = summary_lines("demo", plan, width=120)
    assert lines[0].startswith("demo: 0 to create, 25 to update, 0 to delete (check mode: nothing was changed)")
    assert len(lines) > 1 and all(len(line) <= 120 for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines).endswith(", ".join(plan.failed_tasks))


def test_group_false_lists_every_call(monkeypatch: pytest.MonkeyPatch):
    for group, rows in ((True, 1), (False, len(ADDONS))):
        plugin, display = callback(monkeypatch, group=group)
        plan = [entry(call, resource, reason) for call, resource, reason in ADDONS]
        plugin.v2_runner_on_ok(result("demo", "clusterapi.aws.capa_addons", {"plan": plan}, name="Addons"))
        plugin.v2_playbook_on_stats(AggregateStats())
        assert len(display.lines) == 1 + 1 + rows + 1, group  # banner, header, rows, summary


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
                        "item": "",
                    },
                    {
                        "action": "delete",
                        "call": "ec2:TerminateInstances",
                        "resource": "demo-md-0-zzzzz",
                        "reason": "missing",
                        "task": "task",
                        "item": "",
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
