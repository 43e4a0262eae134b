# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); plugins are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible plugins usually are.

from __future__ import annotations

DOCUMENTATION = r"""
name: capa_plan
type: aggregate
short_description: One table per cluster of the calls a check run of clusterapi.aws would make
version_added: 0.2.0
description:
  - Every module of clusterapi.aws returns C(plan), the ordered mutating calls it made or, in check mode, would
    make, each with its C(call) (for example C(ec2:CreateSubnet)), C(resource) and C(reason). This callback collects
    the plans of every C(clusterapi.aws.*) task per host - one host per cluster, every item of a loop included - and
    at the end of the playbook prints one table per cluster with every call in order, classified as C(create),
    C(update) or C(delete), and a count of each.
  - The classification reads the call's verb. C(Create), C(Run), C(Allocate), C(Put), C(Register), C(Attach),
    C(Associate) and C(Authorize) create; C(Delete), C(Terminate), C(Release), C(Deregister), C(Detach),
    C(Disassociate), C(Revoke) and C(Remove) delete; anything else updates. Tagging calls (C(ec2:CreateTags),
    C(autoscaling:CreateOrUpdateTags)) change an existing resource and count as updates. Calls whose name puts the
    noun first, as etcd's C(etcd:MemberRemove), are classified by their last word. Kubernetes, etcd and local file
    calls (C(k8s:PatchNode), C(etcd:MemberRemove), C(file:WriteFile)) are listed like AWS calls.
  - By default only check-mode runs are collected (C(--check), or tasks that run with C(check_mode=true)), so the
    table is the plan of what a real run would do. With O(always) it also lists what a real run did.
  - The same data is set as the custom stat C(capa_plan) of the run (C(stats.set_custom_stats)) and, with
    O(output_file), written as JSON.
  - In AWX the table is part of the job output, but not a job artifact. AWX takes artifacts from the
    C(playbook_on_stats) event of its own stdout callback, and ansible-core calls the stdout callback before any
    enabled callback, so a custom stat set here comes too late for it. Use O(output_file) to keep the plan as a file.
requirements:
  - Enabled in C(callbacks_enabled), or for one run with C(ANSIBLE_CALLBACKS_ENABLED=clusterapi.aws.capa_plan).
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  always:
    description: Collect and print the plans of runs that are not in check mode too (the calls that were made).
    type: bool
    default: false
    env:
      - name: CAPA_PLAN_ALWAYS
    ini:
      - section: callback_capa_plan
        key: always
  output_file:
    description:
      - Also write the collected plans to this file as JSON, an object with C(check_mode) and C(clusters). C(clusters)
        maps each host to its C(summary) (the counts of C(create), C(update) and C(delete)), its C(calls) in order
        (C(action), C(call), C(resource), C(reason), C(task)) and its C(failed_tasks).
      - Written only when something was collected.
    type: path
    env:
      - name: CAPA_PLAN_FILE
    ini:
      - section: callback_capa_plan
        key: output_file
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = clusterapi.aws.capa_plan
#
# or, for one run:
#   ANSIBLE_CALLBACKS_ENABLED=clusterapi.aws.capa_plan ansible-playbook -i inventory.yml clusterapi.aws.site --check
#
# CAPA PLAN [demo] ***************************************************************
#   #  action  call                 resource                        reason
#   1  create  ec2:CreateVpc        demo-vpc                        missing
#   2  update  ec2:ModifyVpcAttribute  demo-vpc                     EnableDnsSupport differs
#   ...
# demo: 41 to create, 3 to update, 0 to delete (check mode: nothing was changed)
"""

import json  # noqa: E402  (plugins put their documentation first)
import re  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from typing import Any, Iterable, Mapping  # noqa: E402

from ansible import constants as C  # noqa: E402
from ansible import context  # noqa: E402
from ansible.plugins.callback import CallbackBase  # noqa: E402

COLLECTION_PREFIX = "clusterapi.aws."
CREATE = "create"
UPDATE = "update"
DELETE = "delete"
ACTIONS = (CREATE, UPDATE, DELETE)
CREATE_VERBS = frozenset(("Create", "Run", "Allocate", "Put", "Register", "Attach", "Associate", "Authorize"))
DELETE_VERBS = frozenset(("Delete", "Terminate", "Release", "Deregister", "Detach", "Disassociate", "Revoke", "Remove"))
# Created-sounding calls that only (re)write tags of a resource that already exists.
TAGGING_CALLS = frozenset(("CreateTags", "CreateOrUpdateTags"))
COLUMNS = ("#", "action", "call", "resource", "reason")


def words_of(operation: str) -> list[str]:
    """``DeregisterInstancesFromLoadBalancer`` -> ``["Deregister", "Instances", "From", "Load", "Balancer"]``."""
    return re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", operation)


def verb_class(word: str) -> str | None:
    if word in CREATE_VERBS:
        return CREATE
    if word in DELETE_VERBS:
        return DELETE
    return None


def action_of(call: str) -> str:
    """``create``, ``update`` or ``delete`` for a planned call such as ``ec2:CreateSubnet``."""
    operation = call.split(":", 1)[-1]
    if operation in TAGGING_CALLS:
        return UPDATE
    words = words_of(operation)
    if not words:
        return UPDATE
    # AWS names the verb first (CreateSubnet); etcd names the noun first (MemberRemove).
    return verb_class(words[0]) or verb_class(words[-1]) or UPDATE


@dataclass(frozen=True)
class PlanRow:
    """One planned call of one task, as the table shows it."""

    action: str
    call: str
    resource: str
    reason: str
    task: str


@dataclass
class ClusterPlan:
    """Everything collected for one host (= one cluster), in the order the tasks reported it."""

    rows: list[PlanRow] = field(default_factory=list)
    failed_tasks: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys(ACTIONS, 0)
        for row in self.rows:
            counts[row.action] += 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "calls": [asdict(row) for row in self.rows],
            "failed_tasks": list(self.failed_tasks),
        }


def plans_in(result: Mapping[str, Any]) -> Iterable[list[Mapping[str, Any]]]:
    """The ``plan`` lists of a task result: its own, or one per item of a loop (skipped items have none)."""
    items = result.get("results")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping) and isinstance(item.get("plan"), list):
                yield item["plan"]
    elif isinstance(result.get("plan"), list):
        yield result["plan"]


def rows_of(result: Mapping[str, Any], task: str) -> list[PlanRow]:
    return [
        PlanRow(
            action=action_of(str(entry.get("call", ""))),
            call=str(entry.get("call", "")),
            resource=str(entry.get("resource", "")),
            reason=str(entry.get("reason", "")),
            task=task,
        )
        for plan in plans_in(result)
        for entry in plan
        if isinstance(entry, Mapping)
    ]


def render_table(plan: ClusterPlan) -> list[str]:
    """The rows as aligned text columns, a header first; the last column (reason) is never padded."""
    cells = [COLUMNS] + [(str(n), r.action, r.call, r.resource, r.reason) for n, r in enumerate(plan.rows, 1)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS) - 1)]
    lines = []
    for row in cells:
        padded = [row[0].rjust(widths[0])] + [
            cell.ljust(width) for cell, width in zip(row[1:-1], widths[1:], strict=True)
        ]
        lines.append(("  " + "  ".join(padded + [row[-1]])).rstrip())
    return lines


def summary_line(host: str, plan: ClusterPlan, check_mode: bool) -> str:
    counts = plan.summary()
    text = f"{host}: {counts[CREATE]} to create, {counts[UPDATE]} to update, {counts[DELETE]} to delete"
    if check_mode:
        text += " (check mode: nothing was changed)"
    if plan.failed_tasks:
        text += f"; incomplete, failed: {', '.join(plan.failed_tasks)}"
    return text


ACTION_COLORS = {CREATE: "COLOR_OK", UPDATE: "COLOR_CHANGED", DELETE: "COLOR_ERROR"}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "clusterapi.aws.capa_plan"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.plans: dict[str, ClusterPlan] = {}
        self.check_mode = bool(context.CLIARGS.get("check", False))

    # -- collecting ----------------------------------------------------------------------------------------------
    def _collects(self, task: Any) -> bool:
        action = getattr(task, "resolved_action", None) or getattr(task, "action", "") or ""
        if not action.startswith(COLLECTION_PREFIX):
            return False
        return self.check_mode or getattr(task, "check_mode", None) is True or bool(self.get_option("always"))

    def _collect(self, result: Any, failed: bool = False) -> None:
        task = result._task
        if not self._collects(task):
            return
        plan = self.plans.setdefault(result._host.get_name(), ClusterPlan())
        name = task.get_name()
        plan.rows.extend(rows_of(result._result, name))
        if failed:
            plan.failed_tasks.append(name)

    def v2_runner_on_ok(self, result: Any) -> None:
        self._collect(result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._collect(result, failed=not ignore_errors)

    # -- reporting -----------------------------------------------------------------------------------------------
    def structured(self) -> dict[str, Any]:
        return {
            "check_mode": self.check_mode,
            "clusters": {host: plan.as_dict() for host, plan in self.plans.items()},
        }

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if not self.plans:
            return
        for host, plan in self.plans.items():
            self._display.banner(f"CAPA PLAN [{host}]")
            header, *lines = render_table(plan)
            self._display.display(header)
            for row, line in zip(plan.rows, lines, strict=True):
                self._display.display(line, color=getattr(C, ACTION_COLORS[row.action], None))
            self._display.display(summary_line(host, plan, self.check_mode))
        data = self.structured()
        stats.set_custom_stats("capa_plan", data)
        path = self.get_option("output_file")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2)
