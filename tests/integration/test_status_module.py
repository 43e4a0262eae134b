"""capa_status as Ansible runs it: status.json written once, left alone, planned in check mode, removed, refused.

The roles write every cluster's status.json with it (roles/cluster/tasks/status.yml, roles/network/tasks/status.yml;
test_cluster, test_network and test_site_on_simulator read what they wrote). It touches only the local file: no
AWS endpoint is needed or given.
"""

from __future__ import annotations

import json
import stat

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
