# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_plan callback against the moto server: its tables and file hold the modules' own ``plan`` results.

The modules' plans are read from ansible.posix.jsonl's events - one JSON line per task result, in the order the
callbacks receive them - independently of the callback; the callback's tables are parsed back from the text it
printed after them, and its JSON file is read as well. The file lists every call; each row of a table stands for
the next ``calls`` of them, in order, and shows the call it is about.

The plan a reviewer reads: a ``--check --diff`` of site.yml that scales the machine deployment of the HA demo
cluster (examples/inventory.yml, host demo) by one, without the Kubernetes API (as `make floors` runs the demo, so
the addons are planned too), fits 120 columns with the 36 addon objects on one row and the new machine's step on
another.

The check run of the demo inventory is not asserted to succeed: whether every module manages a check run is their
own tests' subject. What this test holds the callback to is reporting exactly what happened - every call the
modules planned, host by host and in order, and any task that failed marked as leaving that cluster's plan
incomplete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from cluster_helpers import IAM_PLAYBOOK, write_inventory

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DEMO_INVENTORY = REPO / "examples/inventory.yml"
DEMO_CLUSTERS = {"demo", "demo-lite", "demo-eks"}
CALLBACK_ENV = {
    "ANSIBLE_CALLBACKS_ENABLED": "clusterapi.aws.capa_plan",
    "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.jsonl",
}
RESULT_EVENTS = ("v2_runner_on_ok", "v2_runner_on_failed")
Row = tuple[str, int, str, str, str]  # action, calls, call, resource, reason
Call = tuple[str, str, str]  # call, resource, reason
ELLIPSIS = "\u2026"
WIDTH = 120


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


def parse_tables(lines: list[str]) -> tuple[dict[str, list[Row]], dict[str, str], list[str]]:
    """The callback's tables (``CAPA PLAN [<host>]`` banner, header, rows, summary), its summaries (joined when
    wrapped) and every line it printed from its first banner on."""
    tables: dict[str, list[Row]] = {}
    summaries: dict[str, str] = {}
    printed: list[str] = []
    host = None
    starts: list[int] = []
    for line in lines:
        if line.startswith("CAPA PLAN ["):
            host = line[len("CAPA PLAN [") : line.index("]")]
            tables[host], starts = [], []
        if printed or host is not None:
            printed.append(line)
        if line.startswith("CAPA PLAN [") or not line.strip():
            continue
        if host is None:
            if line.startswith("  ") and summaries:  # a wrapped summary goes on
                last = list(summaries)[-1]
                summaries[last] += " " + line.strip()
            continue
        if not starts:
            assert line.split() == ["#", "action", "calls", "call", "resource", "reason"], line
            starts = [line.index(column) for column in ("action", "calls", "call ", "resource", "reason")]
        elif line.startswith(f"{host}: "):
            summaries[host], host = line, None
        else:
            cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
            assert line[: starts[0]].strip() == str(len(tables[host]) + 1), line
            tables[host].append((cells[0], int(cells[1]), cells[2], cells[3], cells[4]))
    return tables, summaries, printed


def shown_as(cell: str, text: str) -> bool:
    """Whether a table cell is the text, or the text shortened with an ellipsis (its start, and maybe its end)."""
    if ELLIPSIS not in cell:
        return cell == text
    head, tail = cell.split(ELLIPSIS, 1)
    return text.startswith(head) and text.endswith(tail) and len(cell) < len(text)


def assert_rows_cover_the_calls(rows: list[Row], calls: list[Call]) -> list[list[Call]]:
    """Each row stands for the next ``calls`` of the plan, in order, and names one of them; a row of one call shows
    it whole (or shortened). Returns the calls of each row."""
    spans, position = [], 0
    for action, count, call, resource, reason in rows:
        span = calls[position : position + count]
        assert len(span) == count and count > 0, (call, count)
        assert any(shown_as(call, c[0]) for c in span), (call, span)
        if count == 1:
            assert [shown_as(cell, text) for cell, text in zip((call, resource, reason), span[0], strict=True)] == [
                True
            ] * 3, (call, resource, reason, span)
        assert action in ("create", "update", "delete")
        spans.append(span)
        position += count
    assert position == len(calls), "the rows do not cover every call"
    return spans


def expected_summary(host: str, actions: list[str], check_mode: bool) -> str:
    counts = {action: actions.count(action) for action in ("create", "update", "delete")}
    text = f"{host}: {counts['create']} to create, {counts['update']} to update, {counts['delete']} to delete"
    return text + (" (check mode: nothing was changed)" if check_mode else "")


def test_check_run_of_the_demo_table_matches_the_modules_plans(aws, run_playbook, tmp_path):
    plan_file = tmp_path / "plan.json"
    run_playbook(IAM_PLAYBOOK)  # the account's IAM first, as a user does (the EKS pool's instance profile)
    aws.reset_requests()
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
    tables, summaries, printed = parse_tables(text)

    assert set(plans) == DEMO_CLUSTERS, result.describe()
    assert set(tables) == DEMO_CLUSTERS, result.describe()
    for host in DEMO_CLUSTERS:
        assert plans[host], f"{host}: the modules planned nothing"
        assert_rows_cover_the_calls(tables[host], plans[host])
    assert max(len(line) for line in printed) <= WIDTH

    rows = {row[2]: row[0] for host in DEMO_CLUSTERS for row in tables[host]}
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
        assert [(c["call"], c["resource"], c["reason"]) for c in cluster["calls"]] == plans[host]
        assert len(cluster["failed_tasks"]) == failures.get(host, 0), host
        summary = expected_summary(host, [c["action"] for c in cluster["calls"]], check_mode=True)
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
    assert parse_tables(text) == ({}, {}, [])

    loud = run_playbook(playbook, env={**CALLBACK_ENV, "CAPA_PLAN_ALWAYS": "true"}, cwd=tmp_path)
    events, text = split_output(loud.stdout)
    tables, summaries, _printed = parse_tables(text)
    assert tables["localhost"] == module_plans(events)["localhost"] == []
    assert summaries == {"localhost": "localhost: 0 to create, 0 to update, 0 to delete"}

    aws.reset()
    plan_file = tmp_path / "plan.json"
    env = {**CALLBACK_ENV, "CAPA_PLAN_ALWAYS": "true", "CAPA_PLAN_FILE": str(plan_file)}
    loud = run_playbook(playbook, env=env, cwd=tmp_path)
    events, text = split_output(loud.stdout)
    tables, summaries, _printed = parse_tables(text)
    made = module_plans(events)["localhost"]
    assert made
    assert_rows_cover_the_calls(tables["localhost"], made)
    assert tables["localhost"][0] == ("create", 1, "ec2:CreateVpc", "plan-cb-vpc", made[0][2])
    written = json.loads(plan_file.read_text())["clusters"]["localhost"]["calls"]
    assert [(c["call"], c["resource"], c["reason"]) for c in written] == made
    actions = [c["action"] for c in written]
    assert summaries["localhost"] == expected_summary("localhost", actions, check_mode=False)


def test_plan_of_one_machine_deployment_change_on_the_ha_demo_cluster_fits_120_columns(aws, run_playbook, tmp_path):
    spec = yaml.safe_load(DEMO_INVENTORY.read_text())["capa_clusters"]["hosts"]["demo"]["capa_cluster"]
    first = run_playbook(SITE, write_inventory(tmp_path, spec))
    assert first.rc == 0, first.describe()

    (deployment,) = spec["machine_deployments"]
    deployment["replicas"] += 1
    plan_file = tmp_path / "plan.json"
    aws.reset_requests()
    result = run_playbook(
        SITE,
        write_inventory(tmp_path, spec, name="scaled.yml"),
        check=True,
        diff=True,
        env={**CALLBACK_ENV, "CAPA_PLAN_FILE": str(plan_file)},
    )
    assert aws.mutating_requests() == [], "a check run sent a mutating request"
    events, text = split_output(result.stdout)
    calls = module_plans(events)["demo"]
    tables, _summaries, printed = parse_tables(text)
    assert list(tables) == ["demo"]
    rows = tables["demo"]
    spans = assert_rows_cover_the_calls(rows, calls)
    width = max(len(line) for line in printed)
    assert width <= WIDTH, "\n".join(printed)

    # Without the API the addons are planned again: every object's k8s:Apply is one row, counted.
    applies = [c for c in calls if c[0] == "k8s:Apply"]
    assert len(applies) > 30
    (addons,) = [row for row in rows if row[2] == "k8s:Apply"]
    assert addons[:3] == ("update", len(applies), "k8s:Apply"), addons
    kinds = [resource.split(" ", 1)[0] for _call, resource, _reason in applies]
    assert addons[3].startswith(f"{kinds.count(kinds[0])} {kinds[0]}, "), addons
    assert addons[4].startswith("addon cni-calico ("), addons
    # The new machine is one step: its join token, its bootstrap data and RunInstances.
    (launch,) = [(row, span) for row, span in zip(rows, spans, strict=True) if row[2] == "ec2:RunInstances"]
    assert [c[0] for c in launch[1]] == ["k8s:CreateSecret", "secretsmanager:CreateSecret", "ec2:RunInstances"]
    assert launch[0][:4] == ("create", 3, "ec2:RunInstances", launch[1][-1][1])
    assert launch[0][3].startswith(f"{spec['name']}-{deployment['name']}-")
    assert [row[2] for row in rows] == ["k8s:Apply", "ec2:RunInstances", "file:WriteFile"]

    written = json.loads(plan_file.read_text())["clusters"]["demo"]
    assert [(c["call"], c["resource"], c["reason"]) for c in written["calls"]] == calls
    print(f"plan of md-0 scaled by one: {len(calls)} calls in {len(rows)} rows, {width} columns at most")
