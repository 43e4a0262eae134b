"""Unit tests of the benchmark's report (bench/report.py) and run.py's pure helpers: ratios against the critical
path at the run's latency scale, the per-role waterfall, and the PNG charts, on a small synthetic results dict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import critical_path as cp  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402
from aws_latencies import LATENCIES  # noqa: E402  (bench/critical_path.py put tools/ on the path)

PNG = b"\x89PNG\r\n\x1a\n"
SCALE = 1 / 30


def sec(resource: str, transition: str) -> float:
    return LATENCIES[(resource, transition)].seconds


def side(wall: float, tasks: list[list] | None = None) -> dict:
    one = {"rc": 0, "wall": wall, "cpu": wall / 2, "maxrss_mb": 90.0, "requests": 100, "mutating": 10}
    one.update(operations={"ec2:DescribeVpcs": 2}, changed=3, log="x.log")
    if tasks is not None:
        one["tasks"] = tasks
    return one


# host, role, task, start s, seconds, status (bench/run.py's read_timings)
TASKS = [
    ["demo", "clusterapi.aws.network", "clusterapi.aws.network : Reconcile the network", 1.0, 4.0, "changed"],
    ["demo", "clusterapi.aws.control_plane", "clusterapi.aws.control_plane : Reconcile machines", 5.5, 3.0, "ok"],
    ["demo", "clusterapi.aws.control_plane", "clusterapi.aws.control_plane : Wait", 8.5, 1.0, "ok"],
    ["demo-eks", "clusterapi.aws.eks_control_plane", "clusterapi.aws.eks_control_plane : Reconcile", 1.2, 30, "ok"],
    ["demo-eks", "", "Reconcile the cluster", 0.5, 0.1, "ok"],
]


def results(scale: float = SCALE, walls: tuple[tuple[float, float], ...] = ((40, 200), (60, 180), (50, 100))) -> dict:
    runs = []
    for ours, peer in walls:
        runs.append(
            {
                phase: {"ours": side(ours, TASKS), "peer": side(peer, [])}
                for phase in ("create", "noop", "noop-sm", "check", "delete")
            }
        )
    series = [{"ours": side(10), "peer": side(20)}] * 3
    return {
        "machine": {"nproc": "2", "python": "3.11"},
        "command": "python bench/run.py --runs 3",
        "latency": {"scale": scale, "phases": ["create", "delete"]},
        "phases": runs,
        "workers": [{"workers": n, "runs": series} for n in (2, 20)],
        "clusters": [{"clusters": k, "runs": [{"ours": side(10 * k)}] * 3} for k in (1, 5)],
    }


def is_png(path: Path) -> bool:
    data = path.read_bytes()
    return len(data) > len(PNG) and data.startswith(PNG)


# --- critical path at a scale -------------------------------------------------------------------------------------
def test_limits_scale_every_phase_by_the_factor():
    at_one, scaled = cp.limits(1.0), cp.limits(SCALE)
    assert scaled.keys() == at_one.keys()
    for key, value in at_one.items():
        assert scaled[key] == pytest.approx(value * SCALE)


def test_zeroed_steps_shorten_the_path_and_do_not_leak_into_the_next_call():
    endpoint = cp.limits(1.0, zero=report.NOT_MODELLED)
    # No node boot and no load balancer time: the NAT gateway, then three control-plane launches one after another.
    assert endpoint[("self-managed", "create")] == sec("nat_gateway", "create") + 3 * sec("instance", "launch")
    assert cp.limits(1.0)[("self-managed", "create")] == 546


def test_phase_limits_take_the_longer_cluster_for_a_run_of_both():
    limits = report.phase_limits(SCALE)
    for phase in ("create", "upgrade", "delete"):
        both = limits[phase]["aws"]
        assert both == max(limits[f"{phase} demo"]["aws"], limits[f"{phase} demo-eks"]["aws"])
        assert limits[phase]["endpoint"] <= both
    assert limits["create demo-eks"]["aws"] == pytest.approx(720 * SCALE)


# --- ratios -------------------------------------------------------------------------------------------------------
def test_ratio_rounds_and_refuses_a_zero_denominator():
    assert report._ratio(50, 200) == 0.25
    assert report._ratio(1, 3) == 0.33
    assert report._ratio(5, 0) is None


def test_latency_table_medians_and_ratios():
    rows = {(row["phase"], row["what"]): row for row in report.latency_table(results())}
    both = rows[("create", "both clusters")]
    limit = 720 * SCALE
    assert both["ours"] == 50 and both["peer"] == 180
    assert both["critical"] == round(limit, 2)
    assert both["ours/critical"] == round(50 / limit, 2)
    # ours/peer is the median of the within-run ratios (0.2, 0.33, 0.5), not the ratio of the medians (0.28)
    assert both["ours/peer"] == 0.33
    demo = rows[("create", "demo")]
    assert demo["ours"] == 9.5  # the host's last task ends at 8.5 + 1.0
    assert demo["peer"] is None and demo["ours/peer"] is None
    assert demo["ours/critical"] == round(9.5 / (546 * SCALE), 2)
    assert demo["ours/endpoint"] == round(9.5 / ((105 + 36) * SCALE), 2)
    assert rows[("create", "demo-eks")]["ours"] == 31.2
    assert {phase for phase, _what in rows} == {"create", "delete"}


def test_no_latency_section_figures_when_the_model_was_off(tmp_path):
    assert report.latency_section(results(scale=0.0), tmp_path)[2].startswith("Not measured")
    assert not list(tmp_path.iterdir())


def test_latency_targets_judge_against_the_critical_path_and_the_peer():
    rows = report.latency_targets(results())
    both = next(row for row in rows if row.startswith("| create ≤ 1.2 × critical path (both clusters"))
    assert both.endswith("| 50 s / 24 s = 2.08 | **no** |")
    assert any(
        row.startswith("| create ≤ 0.5 × the peer's wall (both clusters") and row.endswith("| yes |") for row in rows
    )
    demo = next(row for row in rows if row.startswith("| create ≤ 1.2 × critical path (demo,"))
    # 9.5 s is under the 18.2 s path only because no node boots here: the verdict says so
    assert "= 0.52 | yes (but ours / endpoint-modelled path = 2.02: the endpoint boots no node) |" in demo
    assert not any("delete ≤ 0.5" in row for row in rows)
    assert report.latency_targets(results(scale=0.0)) == []


# --- waterfall ----------------------------------------------------------------------------------------------------
def test_waterfall_groups_tasks_per_host_and_role_in_order_of_start():
    rows = report.waterfall(TASKS)
    assert [(row["host"], row["role"]) for row in rows] == [
        ("demo-eks", "(play)"),
        ("demo", "network"),
        ("demo-eks", "eks_control_plane"),
        ("demo", "control_plane"),
    ]
    control_plane = rows[3]
    assert (control_plane["start"], control_plane["end"], control_plane["busy"], control_plane["tasks"]) == (
        5.5,
        9.5,
        4.0,
        2,
    )
    assert (control_plane["longest"], control_plane["longest_s"]) == ("Reconcile machines", 3.0)


def test_median_run_is_the_one_with_the_median_wall():
    runs = results()["phases"]
    assert report.median_run(runs, "create") is runs[2]


# --- charts -------------------------------------------------------------------------------------------------------
def test_charts_are_png_files(tmp_path):
    data = results()
    report.plot_phases(report.latency_table(data), tmp_path / "phases.png")
    report.plot_waterfall(TASKS, {"demo": 18.2, "demo-eks": 24.6}, tmp_path / "waterfall.png", "create")
    report.plot_workers(data["workers"], tmp_path / "workers.png")
    report.plot_clusters(data["clusters"], tmp_path / "clusters.png")
    for name in ("phases", "waterfall", "workers", "clusters"):
        assert is_png(tmp_path / f"{name}.png"), name


def test_write_makes_the_report_and_its_charts_from_results_alone(tmp_path):
    report.write(results(), tmp_path)
    text = (tmp_path / "BENCHMARKS.md").read_text()
    charts = tmp_path / report.CHARTS
    for name in ("phases", "waterfall-create", "waterfall-delete", "scale-workers", "scale-clusters"):
        assert is_png(charts / f"{name}.png"), name
        assert f"]({report.CHARTS}/{name}.png)" in text
    assert "| create | both clusters | 50 | 180 | 24 | 24 | 2.08 | 2.08 | 0.33 | 7.5 |" in text
    assert "| latency model | 0.0333333 (1/30 of AWS's time), in the create and delete phases |" in text


def test_failed_series_points_are_flagged_and_left_out_of_charts_and_targets():
    data = results()
    failed = {"workers": 200, "runs": [{"ours": dict(side(10), rc=2), "peer": side(20)}] * 3}
    data["workers"].append(failed)
    assert report.series_ok(data["workers"]) == data["workers"][:2]
    assert report._point(failed, "workers") == "200 (failed: not charted or judged)"
    assert report._point(data["workers"][0], "workers") == "2"
    assert "not measured at 200" in "".join(report.targets(data))


def test_write_takes_a_run_of_fewer_phases(tmp_path):
    data = results()
    for one in data["phases"]:
        for phase in ("noop", "noop-sm", "check"):
            del one[phase]
    del data["workers"], data["clusters"]
    report.write(data, tmp_path)
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "3 runs of the phases create, delete." in text
    assert "| noop" not in text
    assert "The worker and cluster series were not measured in this run" in text
    assert not (tmp_path / report.CHARTS / "scale-workers.png").exists()


# --- the upgrade runs ---------------------------------------------------------------------------------------------
def upgrade_run(wall: float, cp_end: float, critical: float, critical_cp: float, rc: int = 0) -> dict:
    tasks = [
        ["demo", "clusterapi.aws.network", "clusterapi.aws.network : Reconcile the network", 0.5, 1.0, "ok"],
        [
            "demo",
            "clusterapi.aws.control_plane",
            f"clusterapi.aws.control_plane : {report.CONTROL_PLANE_TASK}",
            2.0,
            cp_end - 2.0,
            "changed",
        ],
    ]
    return {
        "create": side(30),
        "upgrade": dict(side(wall, tasks), rc=rc),
        "joins": {"control-plane": [6.0, 6.2, 6.1], "node": [5.0, 5.1]},
        "critical": critical,
        "critical_control_plane": critical_cp,
        "chain": [],
    }


def test_upgrade_section_sets_ours_against_the_measured_critical_path_and_judges_the_control_plane(tmp_path):
    data = results()
    runs = [upgrade_run(52, 30, 35, 23), upgrade_run(50, 29, 34, 23), upgrade_run(90, 80, 34, 23, rc=2)]
    data["upgrade"] = {"scale": SCALE, "from": "v1.31.2", "to": "v1.32.0", "runs": runs, "date": "d", "command": "c"}
    rows = report.upgrade_rows(data["upgrade"])
    assert [r["ours/critical cp"] for r in rows] == [1.3, 1.26, 3.48]
    median = report.upgrade_median(rows)  # the failed run is left out
    assert median["ours"] == 51 and median["ours cp"] == 29.5 and median["ours/critical cp"] == 1.28
    targets = report.upgrade_targets(data)
    assert targets[0].startswith("| control-plane version upgrade ≤ 1.3 × critical path") and targets[0].endswith(
        "| yes |"
    )
    assert targets[1].endswith("| **no** |")  # the whole upgrade: 51 / 34.5 = 1.48
    report.write(data, tmp_path)
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## Upgrade v1.31.2 -> v1.32.0: ours against the critical path (simulator)" in text
    assert "| 3 (rc 2) | 90 |" in text and "| 6, 6.2, 6.1; 5, 5.1 |" in text


def test_without_upgrade_runs_the_section_says_so(tmp_path):
    report.write(results(), tmp_path)
    assert "Not measured in this run (`--upgrade-runs 0`)" in (tmp_path / "BENCHMARKS.md").read_text()


def eks_upgrade_run(wall: float, cp_end: float, critical: float, critical_cp: float, rc: int = 0) -> dict:
    task = f"clusterapi.aws.eks_control_plane : {report.EKS_CONTROL_PLANE_TASK}demo-eks"
    tasks = [["demo-eks", "clusterapi.aws.eks_control_plane", task, 3.0, cp_end - 3.0, "changed"]]
    return {
        "create": side(40),
        "upgrade": dict(side(wall, tasks), rc=rc),
        "critical": critical,
        "critical_control_plane": critical_cp,
        "chain": [],
    }


def test_eks_upgrade_section_sets_ours_against_the_critical_path_and_judges_both(tmp_path):
    data = results()
    runs = [
        eks_upgrade_run(230, 160, 210, 150),
        eks_upgrade_run(240, 170, 210, 150),
        eks_upgrade_run(9, 5, 210, 150, 2),
    ]
    data["eks_upgrade"] = {"scale": 0.1, "from": "1.31", "to": "1.32", "runs": runs, "date": "d", "command": "c"}
    rows = report.eks_upgrade_rows(data["eks_upgrade"])
    assert [r["ours cp"] for r in rows] == [160, 170, 5]
    assert [r["ours/critical"] for r in rows] == [1.1, 1.14, 0.04]
    median = report.upgrade_median(rows)  # the failed run is left out
    assert median["ours"] == 235 and median["ours cp"] == 165 and median["ours/critical cp"] == 1.1
    targets = report.eks_upgrade_targets(data)
    assert targets[0].startswith("| EKS control-plane version upgrade ≤ 1.3 × critical path (moto, scale 0.1")
    assert targets[0].endswith("| yes |") and targets[1].endswith("| yes |")
    report.write(data, tmp_path)
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## EKS upgrade 1.31 -> 1.32: ours against the critical path (moto, latency model)" in text
    assert "| 3 (rc 2) | 9 |" in text and targets[0] in text


def test_without_eks_upgrade_runs_the_section_says_so(tmp_path):
    report.write(results(), tmp_path)
    assert "Not measured in this run (`--eks-upgrade-runs 0`)" in (tmp_path / "BENCHMARKS.md").read_text()


def test_limit_section_sets_ours_alone_against_the_critical_path_at_its_scale(tmp_path):
    data = results()
    runs = [{"create": side(wall, TASKS), "delete": side(wall * 0.75, TASKS)} for wall in (80, 78, 90)]
    data["limits"] = {"scale": 0.1, "runs": runs, "date": "d", "command": "c"}
    rows = {(row["phase"], row["what"]): row for row in report.limit_rows(data)}
    both = rows[("create", "both clusters")]
    assert both["runs"] == [80, 78, 90] and both["ours"] == 80
    assert both["critical"] == 72.0 and both["ours/critical"] == round(80 / 72, 2)
    assert rows[("delete", "both clusters")]["ours"] == 60 and rows[("delete", "both clusters")]["critical"] == 48.0
    assert rows[("create", "demo")]["ours"] == 9.5  # its last task's end
    targets = report.limit_targets(data)
    assert targets[0] == (
        "| create ≤ 1.2 × critical path (both clusters, ours alone at scale 0.1, median of 3 runs) | "
        "80 s / 72 s = 1.11 | yes |"
    )
    assert any(t.startswith("| delete ≤ 1.2 × critical path (both clusters") and "| **no** |" in t for t in targets)
    report.write(data, tmp_path)
    text = (tmp_path / "BENCHMARKS.md").read_text()
    assert "## Create and delete at scale 0.1: ours against the critical path" in text
    assert "| create | both clusters | 80, 78, 90 | 80 | 72 |" in text and targets[0] in text


def test_without_limit_runs_the_section_says_so(tmp_path):
    assert report.limit_targets(results()) == []
    report.write(results(), tmp_path)
    assert "Not measured in this run (`--limit-runs 0`)" in (tmp_path / "BENCHMARKS.md").read_text()


def test_launch_to_ready_pairs_each_launched_node_with_its_first_ready_per_role():
    journal = [
        {"event": "instance-running", "node": "a", "role_tag": "control-plane", "time": 10.0},
        {"event": "instance-running", "node": "w", "role_tag": "node", "time": 11.0},
        {"event": "node-ready", "node": "a", "time": 15.5},
        {"event": "node-ready", "node": "a", "time": 19.0},  # Ready again later: the first one counts
        {"event": "instance-running", "node": "b", "role_tag": "control-plane", "time": 20.0},
        {"event": "node-ready", "node": "w", "time": 14.0},
        {"event": "node-ready", "node": "b", "time": 26.0},
        {"event": "instance-running", "node": "never", "role_tag": "node", "time": 21.0},
    ]
    assert run.launch_to_ready(journal, launch=0.4) == {"control-plane": [5.9, 6.4], "node": [3.4]}


# --- run.py's pure helpers ----------------------------------------------------------------------------------------
def test_chosen_phases_keep_the_run_order_and_refuse_unknown_names():
    assert run.chosen_phases("delete, create") == ["create", "delete"]
    assert run.chosen_phases("") == []  # no phase run: the other sections alone
    with pytest.raises(Exception, match="phases must be among"):
        run.chosen_phases("create,upgrade")


def test_read_timings_counts_from_the_playbook_start(tmp_path):
    clock = tmp_path / "c.tasks.jsonl"
    lines = [
        {"host": "demo", "role": "r", "task": "b", "start": 1005.0, "end": 1007.5, "status": "ok"},
        {"host": "demo", "role": "r", "task": "a", "start": 1001.0, "end": 1002.0, "status": "changed"},
    ]
    clock.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run.read_timings(clock, 1000.0) == [
        ["demo", "r", "a", 1.0, 1.0, "changed"],
        ["demo", "r", "b", 5.0, 2.5, "ok"],
    ]
    assert run.read_timings(tmp_path / "missing", 0) == []


# --- the task clock callback --------------------------------------------------------------------------------------
class Named:
    def __init__(self, name: str, **attrs: object) -> None:
        self.name = name
        self.__dict__.update(attrs)

    def get_name(self) -> str:
        return self.name


class Result:
    def __init__(self, host: Named, task: Named, changed: bool) -> None:
        self._host, self._task, self._result = host, task, {"changed": changed}


def test_task_clock_writes_one_line_per_task_and_host(tmp_path, monkeypatch):
    sys.path.insert(0, str(Path(report.__file__).parent / "callback_plugins"))
    import bench_timings

    clock = tmp_path / "clock.jsonl"
    monkeypatch.setenv("BENCH_TIMINGS_FILE", str(clock))
    callback = bench_timings.CallbackModule()
    host, other = Named("demo"), Named("demo-eks")
    task = Named("network : Reconcile", _uuid="t1", _role=Named("clusterapi.aws.network"))
    play_task = Named("Reconcile the cluster", _uuid="t2", _role=None)
    callback.v2_runner_on_start(host, task)
    callback.v2_runner_on_start(other, task)
    callback.v2_runner_on_start(host, play_task)
    callback.v2_runner_on_ok(Result(other, task, changed=True))
    callback.v2_runner_on_skipped(Result(host, play_task, changed=False))
    callback.v2_runner_on_failed(Result(host, task, changed=False))
    callback.v2_runner_on_ok(Result(host, task, changed=False))  # no start left for it: not written twice
    lines = [json.loads(line) for line in clock.read_text().splitlines()]
    assert [(t["host"], t["role"], t["task"], t["status"]) for t in lines] == [
        ("demo-eks", "clusterapi.aws.network", "network : Reconcile", "changed"),
        ("demo", "", "Reconcile the cluster", "skipped"),
        ("demo", "clusterapi.aws.network", "network : Reconcile", "failed"),
    ]
    assert all(t["end"] >= t["start"] for t in lines)


def test_the_bench_cluster_is_a_valid_spec_whose_init_token_outlives_the_series():
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import cluster_spec

    checked = ArgumentSpecValidator({"cluster": {"type": "dict", "options": cluster_spec.argument_spec()}}).validate(
        {"cluster": run.cluster_spec("bench-00", 200)}
    )
    assert checked.error_messages == []
    spec = cluster_spec.load(checked.validated_parameters["cluster"], None)
    assert spec.bootstrap_token_ttl >= 4 * 3600  # the workers series grows one cluster over about 20 minutes


def test_the_cluster_series_raises_every_quota_twenty_clusters_need():
    quotas = run.cluster_quotas(20)
    assert quotas[("ec2", "L-0263D0A3")] >= 60  # three NAT gateways, so three Elastic IPs, per cluster
    assert quotas[("vpc", "L-F678F1CE")] >= 20 and quotas[("vpc", "L-FE5A380F")] >= 20
    assert run.cluster_quotas(1)[("ec2", "L-0263D0A3")] == 5  # never below AWS's default


def test_the_cluster_series_target_is_the_performance_issues_0_7x():
    """20 clusters in one run must cost at most 0.7x the CPU per cluster of one alone; 0.98x is not met."""
    runs = [{"ours": {"cpu": 5.05}}]
    many = [{"ours": {"cpu": 99.12}}]
    (row,) = report.cluster_targets([{"clusters": 1, "runs": runs}, {"clusters": 20, "runs": many}])
    assert "≤ 0.7× of one" in row and "4.96 s vs 5.05 s = 0.98×" in row and row.endswith("| **no** |")
    (row,) = report.cluster_targets(
        [{"clusters": 1, "runs": runs}, {"clusters": 20, "runs": [{"ours": {"cpu": 60.0}}]}]
    )
    assert "= 0.59×" in row and row.endswith("| yes |")


def test_the_worker_series_judges_the_performance_issues_16_requests_and_0_2_wall():
    """The HA self-managed cluster's no-op: at most 16 AWS requests at the series' smallest size (no second page)
    and a wall time at most 0.2 of the peer's at every size; 17 requests or 0.25 of the wall are not met."""

    def series(requests: int, wall: float) -> list[dict]:
        ours = dict(side(wall), requests=requests)
        return [{"ours": ours, "peer": side(10.0)}] * 3

    met = report.worker_targets([{"workers": 2, "runs": series(16, 1.0)}, {"workers": 20, "runs": series(16, 2.0)}])
    (fewest,) = [r for r in met if "≤ 16 AWS requests" in r]
    (wall,) = [r for r in met if "wall ≤ 0.2" in r]
    assert "(2 workers, median of 3 runs) | 16 |" in fewest and fewest.endswith("| yes |")
    assert "ours/peer = 0.1, 0.2" in wall and wall.endswith("| yes |")
    missed = report.worker_targets([{"workers": 2, "runs": series(17, 2.5)}])
    assert [r for r in missed if "≤ 16 AWS requests" in r][0].endswith("| **no** |")
    assert [r for r in missed if "wall ≤ 0.2" in r][0].endswith("| **no** |")


def test_the_chain_trace_follows_each_traceable_cluster_through_its_journal():
    """demo-eks's delete chain is traced from the journal; demo's too (its NAT gateways, then its Elastic IPs);
    nothing for a side without a journal."""
    tasks = [["demo-eks", "", "Delete", 0.5, 18.5, "ok"], ["demo", "", "Delete", 0.5, 4.5, "ok"]]
    journal = [
        ["eks:DeleteNodegroup", 1.5],
        ["ec2:DeleteNatGateway", 1.6],
        ["ec2:ReleaseAddress", 3.8],
        ["ec2:DeleteInternetGateway", 3.9],
        ["ec2:DeleteVpc", 4.0],
        ["eks:DeleteCluster", 12.0],
        ["ec2:DeleteSubnet", 18.5],
        ["ec2:DeleteVpc", 18.6],
    ]
    lines = report.chain_trace({"tasks": tasks, "journal": journal}, "delete", 1 / 30)
    assert "| demo-eks | control plane deleted | 12 | 6 | 18 | 0.5 |" in lines
    assert "| demo | nat gateway 2 deleted | 1.6 | 1.83 | 3.43 | 0.37 |" in lines
    assert (
        "demo-eks: 1.50 s before the chain's first request, 16 s of the model's time on it, 1.50 s lost after its "
        "steps = done at 19.00 s." in lines
    )
    assert report.chain_trace({"tasks": tasks}, "delete", 1 / 30) == []
