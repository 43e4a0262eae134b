# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_plan callback against the moto server: its tables equal the modules' own ``plan`` results.

The modules' plans are read from ansible.posix.jsonl's events - one JSON line per task result, in the order the
callbacks receive them - independently of the callback; the callback's tables are parsed back from the text it
printed after them, and its JSON file is read as well.

The check run of the demo inventory is not asserted to succeed: whether every module manages a check run is their
own tests' subject. What this test holds the callback to is reporting exactly what happened - every call the
modules planned, host by host and in order, and any task that failed marked as leaving that cluster's plan
incomplete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DEMO_INVENTORY = REPO / "examples/inventory.yml"
DEMO_CLUSTERS = {"demo", "demo-lite", "demo-eks"}
CALLBACK_ENV = {
    "ANSIBLE_CALLBACKS_ENABLED": "clusterapi.aws.capa_plan",
    "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.jsonl",
}
RESULT_EVENTS = ("v2_runner_on_ok", "v2_runner_on_failed")
Row = tuple[str, str, str, str]  # action, call, resource, reason


def split_output(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The jsonl callback's events, and every other line (the plan callback's text) in order."""
    events, text = [], []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            text.append(line)
            continue
        if isinstance(event, dict) and "_event" in event:
            events.append(event)
        else:
            text.append(line)
    return events, text


def module_results(events: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(event, host, result)`` of every clusterapi.aws task result, in the order they came."""
    found = []
    for event in events:
        if event["_event"] not in RESULT_EVENTS:
            continue
        for host, result in event["hosts"].items():
            if str(result.get("action", "")).startswith("clusterapi.aws."):
                found.append((event["_event"], host, result))
    return found


def module_plans(events: list[dict[str, Any]]) -> dict[str, list[tuple[str, str, str]]]:
    """Per host, the concatenation of the modules' ``plan`` results (each loop item's in turn)."""
    plans: dict[str, list[tuple[str, str, str]]] = {}
    for _event, host, result in module_results(events):
        calls = plans.setdefault(host, [])
        items = result["results"] if isinstance(result.get("results"), list) else [result]
        for item in items:
            calls.extend((p["call"], p["resource"], p["reason"]) for p in item.get("plan") or [])
    return plans


def failed_tasks(events: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event, host, result in module_results(events):
        if event == "v2_runner_on_failed" and not result.get("ignore_errors"):
            counts[host] = counts.get(host, 0) + 1
    return counts


def parse_tables(lines: list[str]) -> tuple[dict[str, list[Row]], dict[str, str]]:
    """The callback's tables (``CAPA PLAN [<host>]`` banner, header, rows, summary line) and summary lines."""
    tables: dict[str, list[Row]] = {}
    summaries: dict[str, str] = {}
    host = None
    starts: list[int] = []
    for line in lines:
        if line.startswith("CAPA PLAN ["):
            host = line[len("CAPA PLAN [") : line.index("]")]
            tables[host], starts = [], []
        elif host is None or not line.strip():
            continue
        elif not starts:
            assert line.split() == ["#", "action", "call", "resource", "reason"], line
            starts = [line.index(column) for column in ("action", "call", "resource", "reason")]
        elif line.startswith(f"{host}: "):
            summaries[host], host = line, None
        else:
            cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
            assert line[: starts[0]].strip() == str(len(tables[host]) + 1), line
            tables[host].append((cells[0], cells[1], cells[2], cells[3]))
    return tables, summaries


def expected_summary(host: str, rows: list[Row], check_mode: bool) -> str:
    counts = {action: sum(1 for r in rows if r[0] == action) for action in ("create", "update", "delete")}
    text = f"{host}: {counts['create']} to create, {counts['update']} to update, {counts['delete']} to delete"
    return text + (" (check mode: nothing was changed)" if check_mode else "")


def test_check_run_of_the_demo_table_matches_the_modules_plans(aws, run_playbook, tmp_path):
    plan_file = tmp_path / "plan.json"
    result = run_playbook(
        SITE,
        inventory=DEMO_INVENTORY,
        check=True,
        extra_vars={"capa_output_dir": str(tmp_path / "out")},
        env={**CALLBACK_ENV, "CAPA_PLAN_FILE": str(plan_file)},
        expect_rc=None,
    )
    events, text = split_output(result.stdout)
    plans = module_plans(events)
    tables, summaries = parse_tables(text)

    assert set(plans) == DEMO_CLUSTERS, result.describe()
    assert set(tables) == DEMO_CLUSTERS, result.describe()
    for host in DEMO_CLUSTERS:
        assert plans[host], f"{host}: the modules planned nothing"
        assert [row[1:] for row in tables[host]] == plans[host], host

    rows = {row[1]: row[0] for host in DEMO_CLUSTERS for row in tables[host]}
    assert {c: rows[c] for c in ("ec2:CreateVpc", "ec2:RunInstances", "ec2:ModifyVpcAttribute", "file:WriteFile")} == {
        "ec2:CreateVpc": "create",
        "ec2:RunInstances": "create",
        "ec2:ModifyVpcAttribute": "update",
        "file:WriteFile": "update",
    }

    failures = failed_tasks(events)
    written = json.loads(plan_file.read_text())
    assert written["check_mode"] is True
    assert set(written["clusters"]) == DEMO_CLUSTERS
    for host in DEMO_CLUSTERS:
        cluster = written["clusters"][host]
        assert [(c["action"], c["call"], c["resource"], c["reason"]) for c in cluster["calls"]] == tables[host]
        assert len(cluster["failed_tasks"]) == failures.get(host, 0), host
        summary = expected_summary(host, tables[host], check_mode=True)
        if failures.get(host):
            summary += "; incomplete, failed: " + ", ".join(cluster["failed_tasks"])
        assert summaries[host] == summary

    assert aws.mutating_requests() == [], "a check run sent a mutating request"


def test_real_run_is_listed_with_always_and_only_then(aws, run_playbook, tmp_path):
    """Outside check mode the callback stays silent unless ``always`` is on; then it lists the calls made."""
    playbook = tmp_path / "vpc.yml"
    playbook.write_text(
        json.dumps(
            [
                {
                    "name": "one VPC",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [{"name": "VPC", "clusterapi.aws.capa_vpc": {"cluster_name": "plan-cb"}}],
                }
            ]
        )
    )
    quiet = run_playbook(playbook, env=CALLBACK_ENV, cwd=tmp_path)
    events, text = split_output(quiet.stdout)
    assert module_plans(events)["localhost"], "the first run creates the VPC"
    assert parse_tables(text) == ({}, {})

    loud = run_playbook(playbook, env={**CALLBACK_ENV, "CAPA_PLAN_ALWAYS": "true"}, cwd=tmp_path)
    events, text = split_output(loud.stdout)
    tables, summaries = parse_tables(text)
    assert [row[1:] for row in tables["localhost"]] == module_plans(events)["localhost"] == []
    assert summaries == {"localhost": "localhost: 0 to create, 0 to update, 0 to delete"}

    aws.reset()
    loud = run_playbook(playbook, env={**CALLBACK_ENV, "CAPA_PLAN_ALWAYS": "true"}, cwd=tmp_path)
    events, text = split_output(loud.stdout)
    tables, summaries = parse_tables(text)
    made = module_plans(events)["localhost"]
    assert made and [row[1:] for row in tables["localhost"]] == made
    assert tables["localhost"][0][:3] == ("create", "ec2:CreateVpc", "plan-cb-vpc")
    assert summaries["localhost"] == expected_summary("localhost", tables["localhost"], check_mode=False)
