"""capa_status as Ansible runs it: status.json written once, left alone, planned in check mode, removed, refused;
the status published as the run's custom statistic (what the cluster role's set_stats task did).

The roles write every cluster's status.json with it (roles/cluster/tasks/status.yml, roles/network/tasks/status.yml;
test_cluster, test_network and test_site_on_simulator read what they wrote). It touches only the local file: no
AWS endpoint is needed or given.
"""

from __future__ import annotations

import json
import stat

import yaml

MODULE = "clusterapi.aws.capa_status"
STATUS = {"cluster": "st-it", "state": "present", "conditions": {"VpcReady": {"status": True, "reason": "Available"}}}


def test_written_once_then_no_change_then_a_planned_change_then_removed(run_module, tmp_path):
    path = tmp_path / "out" / "st-it" / "status.json"
    planned = run_module(MODULE, {"path": str(path), "status": STATUS}, check=True, diff=True)
    assert planned["changed"] and not path.exists()
    assert planned["plan"] == [{"call": "file:WriteFile", "resource": str(path), "reason": "status missing"}]
    assert planned["diff"]["before"] == "" and json.loads(planned["diff"]["after"]) == STATUS

    first = run_module(MODULE, {"path": str(path), "status": STATUS})
    assert first["changed"] and first["path"] == str(path)
    assert json.loads(path.read_text()) == STATUS and stat.S_IMODE(path.stat().st_mode) == 0o600

    again = run_module(MODULE, {"path": str(path), "status": STATUS}, diff=True)
    assert not again["changed"] and again["plan"] == []
    assert again["diff"]["before"] == again["diff"]["after"] == path.read_text()

    deleted = {**STATUS, "state": "deleted"}
    change = run_module(MODULE, {"path": str(path), "status": deleted}, check=True, diff=True)
    assert change["plan"] == [{"call": "file:WriteFile", "resource": str(path), "reason": "status differs"}]
    assert json.loads(path.read_text()) == STATUS  # check mode wrote nothing
    assert '"state": "present"' in change["diff"]["before"] and '"state": "deleted"' in change["diff"]["after"]

    removed = run_module(MODULE, {"path": str(path), "state": "absent"})
    assert removed["plan"] == [{"call": "file:DeleteFile", "resource": str(path), "reason": "state=absent"}]
    assert not path.exists()
    assert run_module(MODULE, {"path": str(path), "state": "absent"})["changed"] is False


def test_bad_input_is_refused_before_anything_is_written(run_module, tmp_path):
    no_status = run_module(MODULE, {"path": str(tmp_path / "status.json")})
    assert no_status["failed"] and "state is present but all of the following are missing: status" in no_status["msg"]
    a_directory = run_module(MODULE, {"path": str(tmp_path), "status": STATUS})
    assert a_directory["failed"] and a_directory["field"] == "path" and "is a directory" in a_directory["msg"]
    unknown = run_module(MODULE, {"path": str(tmp_path / "s.json"), "status": STATUS, "region": "us-east-1"})
    assert unknown["failed"] and "region" in unknown["msg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# The json callback reports custom statistics only when asked to, as the default callback shows them.
STATS = {"ANSIBLE_SHOW_CUSTOM_STATS": "1"}


def _publishing_play(tmp_path, statuses, path=None):
    tasks = [
        {
            "name": f"status of {status.get('cluster')}",
            "clusterapi.aws.capa_status": {**({"path": str(path)} if path else {}), "status": status, "publish": True},
        }
        for status in statuses
    ]
    playbook = tmp_path / "publish.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    return playbook


def test_the_status_is_published_as_set_stats_would_with_or_without_a_file_and_in_check_mode(run_playbook, tmp_path):
    """publish: the custom statistic capa_status.<cluster>, aggregated over the clusters of the run (set_stats with
    per_host false and aggregate true: what AWX keeps as the job's artifacts); no path, no file."""
    other = {**STATUS, "cluster": "st-it-2"}
    for check in (True, False):
        result = run_playbook(_publishing_play(tmp_path, [STATUS, other]), check=check, env=STATS)
        assert result.json["global_custom_stats"]["capa_status"] == {"st-it": STATUS, "st-it-2": other}
        assert [t.result["path"] for t in result.tasks] == [None, None] and not any(t.changed for t in result.tasks)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["publish.yml"]

    path = tmp_path / "out" / "status.json"
    written = run_playbook(_publishing_play(tmp_path, [STATUS], path), env=STATS)
    assert written.json["global_custom_stats"]["capa_status"] == {"st-it": STATUS}
    assert written.tasks[0].changed and json.loads(path.read_text()) == STATUS


def test_publish_needs_a_status_that_names_its_cluster(run_playbook, tmp_path):
    result = run_playbook(_publishing_play(tmp_path, [{"state": "present"}]), expect_rc=2, env=STATS)
    assert result.tasks[0].failed and result.tasks[0].result["field"] == "status.cluster"
    assert not result.json.get("global_custom_stats")
