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
    at the end of the playbook prints one table per cluster, classified as C(create), C(update) or C(delete), and a
    count of each call.
  - The table groups what a reviewer reads as one change, within one task (and one loop item), and says in its
    C(calls) column how many calls a row stands for. A machine's step is one row - launching it (its join token,
    bootstrap data, C(ec2:RunInstances)) or removing it (drain, C(ec2:TerminateInstances), Node and bootstrap data
    deleted) - shown as its C(ec2:RunInstances) or C(ec2:TerminateInstances) call, the other calls of the step named
    after its reason. A run of O(group_min) or more of the same call in a row, as the C(k8s:Apply) of every object of
    the addons, is one row that counts the objects by kind and the reasons (for example C(addon cni-calico (31))).
    With O(group=false) every call is a row of its own.
  - Every line fits O(width) columns (120 by default; Ansible's banner takes the terminal's width as its other
    banners do). Long cells are shortened with an ellipsis - resources and calls in the middle, reasons at the end;
    the JSON of O(output_file) and the custom stat always hold every call in full.
  - The classification reads the call's verb. C(Create), C(Run), C(Allocate), C(Put), C(Register), C(Attach),
    C(Associate) and C(Authorize) create; C(Delete), C(Terminate), C(Release), C(Deregister), C(Detach),
    C(Disassociate), C(Revoke) and C(Remove) delete; anything else updates. Tagging calls (C(ec2:CreateTags),
    C(autoscaling:CreateOrUpdateTags)) change an existing resource and count as updates. Calls whose name puts the
    noun first, as etcd's C(etcd:MemberRemove), are classified by their last word. Kubernetes, etcd and local file
    calls (C(k8s:PatchNode), C(etcd:MemberRemove), C(file:WriteFile)) are listed like AWS calls. A grouped row takes
    the action of its machine call, or of its one repeated call; the summary line counts every call.
  - By default only check-mode runs are collected (C(--check), or tasks that run with C(check_mode=true)), so the
    table is the plan of what a real run would do. With O(always) it also lists what a real run did. The summary line
    notes that nothing was changed when every task collected for the cluster ran in check mode, by
    C(--check) or by C(check_mode) on the play or task (as the AWX project's C(plan.yml) sets it).
  - The same data is set as the custom stat C(capa_plan) of the run (C(stats.set_custom_stats)) and, with
    O(output_file), written as JSON.
  - In AWX the table is part of the job output when the project's C(ansible.cfg) enables the callback (the AWX
    project of the collection, C(extensions/awx/project), ships one that does). It is not a job artifact. AWX takes
    artifacts from the C(playbook_on_stats) event of its own stdout callback, and ansible-core calls the stdout
    callback before any enabled callback, so a custom stat set here comes too late for it. Use O(output_file) to keep
    the plan as a file.
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
  group:
    description: Group a machine's step, and runs of the same call, into one row each (see the description).
    type: bool
    default: true
    version_added: 0.2.0
    env:
      - name: CAPA_PLAN_GROUP
    ini:
      - section: callback_capa_plan
        key: group
  group_min:
    description: How many of the same call in a row, in one task, make one grouped row.
    type: int
    default: 3
    version_added: 0.2.0
    env:
      - name: CAPA_PLAN_GROUP_MIN
    ini:
      - section: callback_capa_plan
        key: group_min
  width:
    description: The most columns a line of the table and of the summary takes; long cells are shortened to fit.
    type: int
    default: 120
    version_added: 0.2.0
    env:
      - name: CAPA_PLAN_WIDTH
    ini:
      - section: callback_capa_plan
        key: width
  output_file:
    description:
      - Also write the collected plans to this file as JSON, an object with C(check_mode) (every collected task ran in
        check mode) and C(clusters). C(clusters) maps each host to its C(summary) (the counts of C(create), C(update)
        and C(delete)), its C(calls) in order (C(action), C(call), C(resource), C(reason), C(task), C(item) - the label
        of the loop item, empty outside a loop) and its C(failed_tasks).
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
# The HA demo cluster with its machine deployment md-0 scaled from 2 to 3, planned without the Kubernetes API (so the
# addons are planned as well):
#
# CAPA PLAN [demo] ***************************************************************
#   #  action  calls  call              resource                               reason
#   1  update     36  k8s:Apply         19 CustomResourceDefinition, 1 Confi…  addon cni-calico (31), addon aws-cloud-c…
#   2  create      3  ec2:RunInstances  demo-md-0-c2vud                        replicas: us-east-1c (+ k8s:CreateSecret…
#   3  update      1  file:WriteFile    /tmp/…/out/demo/status.json            status differs
# demo: 3 to create, 37 to update, 0 to delete (check mode: nothing was changed)
"""

import itertools  # noqa: E402  (plugins put their documentation first)
import json  # noqa: E402
import re  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from typing import Any, Iterable, Iterator, Mapping, Sequence  # noqa: E402

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
# The calls that launch or remove machines, whose resource names them ("a, b" when several go at once): every other
# call of a task that names one of those machines belongs to its step.
MACHINE_CALLS = frozenset(("ec2:RunInstances", "ec2:TerminateInstances"))
COLUMNS = ("#", "action", "calls", "call", "resource", "reason")
# Columns that give way when a line would be too wide, and how each is shortened: a resource or call keeps its kind
# or service and the end of its name, a reason its beginning. The reason and the resource give way first (the
# wider of the two), the call only once both are down to the least a cell keeps.
SHRINKABLE = {3: "middle", 4: "middle", 5: "end"}
SHRINK_TIERS = ((5, 4), (3,))
SHRINK_FLOOR = 16
INDENT = "  "
GAP = "  "
ELLIPSIS = "\u2026"


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
    """One planned call of one task (of one loop item), as the modules reported it."""

    action: str
    call: str
    resource: str
    reason: str
    task: str
    item: str = ""


@dataclass(frozen=True)
class TableRow:
    """One line of the table: one call, one machine's step, or a run of the same call."""

    action: str
    call: str
    resource: str
    reason: str
    calls: tuple[PlanRow, ...]
    # A tally of kinds or names reads from its start; a single resource keeps its kind and the end of its name.
    resource_shortened: str = "middle"

    @classmethod
    def single(cls, row: PlanRow) -> TableRow:
        return cls(row.action, row.call, row.resource, row.reason, (row,))

    def cells(self, number: int) -> tuple[str, ...]:
        return (str(number), self.action, str(len(self.calls)), self.call, self.resource, self.reason)


@dataclass
class ClusterPlan:
    """Everything collected for one host (= one cluster), in the order the tasks reported it."""

    rows: list[PlanRow] = field(default_factory=list)
    failed_tasks: list[str] = field(default_factory=list)
    # Every collected task ran in check mode (--check, or check_mode on the play or task, as AWX's plan job does).
    check_mode: bool = True

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


# -- collecting ----------------------------------------------------------------------------------------------------
def plans_in(result: Mapping[str, Any]) -> Iterable[tuple[str, list[Mapping[str, Any]]]]:
    """``(item label, plan)`` of a task result: its own, or one per item of a loop (skipped items have none)."""
    items = result.get("results")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping) and isinstance(item.get("plan"), list):
                yield str(item.get("_ansible_item_label", "")), item["plan"]
    elif isinstance(result.get("plan"), list):
        yield "", result["plan"]


def rows_of(result: Mapping[str, Any], task: str) -> list[PlanRow]:
    return [
        PlanRow(
            action=action_of(str(entry.get("call", ""))),
            call=str(entry.get("call", "")),
            resource=str(entry.get("resource", "")),
            reason=str(entry.get("reason", "")),
            task=task,
            item=item,
        )
        for item, plan in plans_in(result)
        for entry in plan
        if isinstance(entry, Mapping)
    ]


# -- grouping ------------------------------------------------------------------------------------------------------
def group_rows(rows: Sequence[PlanRow], group_min: int) -> list[TableRow]:
    """The table's rows: per task (and loop item), machine steps first, then runs of the same call."""
    table: list[TableRow] = []
    for _key, segment in itertools.groupby(rows, key=lambda row: (row.task, row.item)):
        table.extend(group_segment(list(segment), group_min))
    return table


def group_segment(rows: list[PlanRow], group_min: int) -> list[TableRow]:
    table: list[TableRow] = []
    loose: list[PlanRow] = []
    owners = machine_step_owners(rows)
    for owner, run in itertools.groupby(range(len(rows)), key=lambda index: owners[index]):
        indexes = list(run)
        # A step is the machine's own call with the calls next to it that name the machine; a call naming it
        # elsewhere (its join token deleted once every machine joined) stays apart.
        if owner is not None and owner in indexes and len(indexes) > 1:
            table.extend(same_call_runs(loose, group_min))
            loose = []
            table.append(machine_step(rows[owner], [rows[index] for index in indexes]))
        else:
            loose.extend(rows[index] for index in indexes)
    table.extend(same_call_runs(loose, group_min))
    return table


def machines_of(row: PlanRow) -> frozenset[str]:
    return frozenset(name.strip() for name in row.resource.split(",") if name.strip())


def mentions(row: PlanRow, name: str) -> bool:
    """Whether the call names the machine as a whole word (``demo-md-0-abcde``, not ``demo-md-0-abcdef``)."""
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", f"{row.resource} {row.reason}") is not None


def machine_step_owners(rows: Sequence[PlanRow]) -> list[int | None]:
    """For each row, the index of the machine call whose machines it names (the nearest, if several), or None."""
    anchors = [(index, machines_of(row)) for index, row in enumerate(rows) if row.call in MACHINE_CALLS]
    names = frozenset().union(*(machines for _index, machines in anchors))
    owners: list[int | None] = []
    for position, row in enumerate(rows):
        named = {name for name in names if mentions(row, name)}
        candidates = [index for index, machines in anchors if named and named <= machines]
        owners.append(min(candidates, key=lambda index: abs(index - position)) if candidates else None)
    return owners


def machine_step(anchor: PlanRow, calls: list[PlanRow]) -> TableRow:
    others = list(dict.fromkeys(row.call for row in calls if row is not anchor))
    reason = f"{anchor.reason} (+ {', '.join(others)})" if anchor.reason else f"+ {', '.join(others)}"
    return TableRow(anchor.action, anchor.call, anchor.resource, reason, tuple(calls))


def same_call_runs(rows: list[PlanRow], group_min: int) -> Iterator[TableRow]:
    for _call, run in itertools.groupby(rows, key=lambda row: row.call):
        calls = list(run)
        if len(calls) < max(group_min, 2):
            yield from (TableRow.single(row) for row in calls)
            continue
        first = calls[0]
        reasons = tally([row.reason for row in calls])
        yield TableRow(first.action, first.call, tally_resources(calls), reasons, tuple(calls), "end")


def tally(values: Iterable[str], counts_first: bool = False) -> str:
    """Distinct values in order of appearance, each with its count when more than one; words that every value
    starts with are said once (``addon cni-calico (31), aws-cloud-controller-manager (5)``)."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    if counts_first:
        return ", ".join(f"{count} {value}" for value, count in counts.items())
    shared = shared_words(list(counts))
    return ", ".join(
        (value if n == 0 else value[len(shared) :]) + ("" if count == 1 else f" ({count})")
        for n, (value, count) in enumerate(counts.items())
    )


def shared_words(values: list[str]) -> str:
    """The leading words (with their space) that every one of several values starts with and goes on after."""
    if len(values) < 2:
        return ""
    words = values[0].split(" ")[:-1]
    shared = ""
    for word in words:
        candidate = f"{shared}{word} "
        if not all(value.startswith(candidate) for value in values):
            break
        shared = candidate
    return shared


def tally_resources(calls: list[PlanRow]) -> str:
    """Kubernetes objects (``Kind namespace/name``) counted by kind; other resources named one by one."""
    if all(" " in row.resource for row in calls):
        return tally((row.resource.split(" ", 1)[0] for row in calls), counts_first=True)
    return tally(row.resource for row in calls)


# -- rendering -----------------------------------------------------------------------------------------------------
def shorten(text: str, width: int, how: str) -> str:
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    if how == "end":
        return text[: width - 1] + ELLIPSIS
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + ELLIPSIS + (text[-tail:] if tail else "")


def fit_widths(natural: list[int], width: int) -> list[int]:
    """Column widths whose line fits ``width``: in each tier the widest column gives way, down to its floor."""
    widths = list(natural)
    budget = width - len(INDENT) - len(GAP) * (len(widths) - 1)
    for tier in SHRINK_TIERS:
        while sum(widths) > budget:
            column = max(tier, key=lambda index: widths[index])
            if widths[column] <= min(SHRINK_FLOOR, natural[column]):
                break  # this tier is at its floor: the next one gives way
            widths[column] -= 1
    return widths


def render_table(rows: Sequence[TableRow], width: int = 120) -> list[str]:
    """A header and one aligned line per row, each at most ``width`` columns; the reason is never padded."""
    cells = [COLUMNS] + [row.cells(number) for number, row in enumerate(rows, 1)]
    natural = [max(len(line[index]) for line in cells) for index in range(len(COLUMNS))]
    widths = fit_widths(natural, width)
    lines = []
    how = [dict(SHRINKABLE)] + [{**SHRINKABLE, 4: row.resource_shortened} for row in rows]
    for line, shortened in zip(cells, how, strict=True):
        shown = [shorten(cell, widths[index], shortened.get(index, "end")) for index, cell in enumerate(line)]
        padded = [
            shown[0].rjust(widths[0]),
            shown[1].ljust(widths[1]),
            shown[2].rjust(widths[2]),
            shown[3].ljust(widths[3]),
            shown[4].ljust(widths[4]),
            shown[5],
        ]
        lines.append((INDENT + GAP.join(padded)).rstrip())
    return lines


def summary_lines(host: str, plan: ClusterPlan, width: int = 120) -> list[str]:
    """The counts of the calls (not of the rows), and the failed tasks, wrapped to ``width`` columns."""
    counts = plan.summary()
    text = f"{host}: {counts[CREATE]} to create, {counts[UPDATE]} to update, {counts[DELETE]} to delete"
    if plan.check_mode:
        text += " (check mode: nothing was changed)"
    if plan.failed_tasks:
        text += f"; incomplete, failed: {', '.join(plan.failed_tasks)}"
    return wrap(text, width)


def wrap(text: str, width: int) -> list[str]:
    """Words to lines of at most ``width`` columns, continued lines indented; a word too long is shortened."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        prefix = INDENT if lines else ""
        candidate = f"{line} {word}" if line else f"{prefix}{word}"
        if len(candidate) <= width or not line:
            line = shorten(candidate, width, "end")
        else:
            lines.append(line)
            line = shorten(INDENT + word, width, "end")
    lines.append(line)
    return lines


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
    def _in_check_mode(self, task: Any) -> bool:
        return self.check_mode or getattr(task, "check_mode", None) is True

    def _collects(self, task: Any) -> bool:
        action = getattr(task, "resolved_action", None) or getattr(task, "action", "") or ""
        if not action.startswith(COLLECTION_PREFIX):
            return False
        return self._in_check_mode(task) or bool(self.get_option("always"))

    def _collect(self, result: Any, failed: bool = False) -> None:
        task = result._task
        if not self._collects(task):
            return
        plan = self.plans.setdefault(result._host.get_name(), ClusterPlan())
        plan.check_mode = plan.check_mode and self._in_check_mode(task)
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
            "check_mode": all(plan.check_mode for plan in self.plans.values()),
            "clusters": {host: plan.as_dict() for host, plan in self.plans.items()},
        }

    def table_rows(self, plan: ClusterPlan) -> list[TableRow]:
        if not self.get_option("group"):
            return [TableRow.single(row) for row in plan.rows]
        return group_rows(plan.rows, int(self.get_option("group_min")))

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if not self.plans:
            return
        width = int(self.get_option("width"))
        for host, plan in self.plans.items():
            self._display.banner(f"CAPA PLAN [{host}]")
            rows = self.table_rows(plan)
            header, *lines = render_table(rows, width)
            self._display.display(header)
            for row, line in zip(rows, lines, strict=True):
                self._display.display(line, color=getattr(C, ACTION_COLORS[row.action], None))
            for line in summary_lines(host, plan, width):
                self._display.display(line)
        data = self.structured()
        stats.set_custom_stats("capa_plan", data)
        path = self.get_option("output_file")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2)
