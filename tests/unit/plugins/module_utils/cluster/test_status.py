"""cluster/status.py: status.json written, left, removed and refused through the kernel's operations."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.status import (
    as_given,
    check_status_path,
    reconcile_status_file,
    reconcile_topology_files,
    render_status,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations

STATUS = {"cluster": "demo", "state": "present", "conditions": {"VpcReady": {"status": True}}, "kubeconfig": None}


def test_the_text_is_sorted_indented_json_ending_in_a_newline():
    text = render_status({"b": 1, "a": {"d": [1, "é"], "c": None}})
    assert text.splitlines() == [
        "{",
        '    "a": {',
        '        "c": null,',
        '        "d": [',
        "            1,",
        '            "é"',
        "        ]",
        "    },",
        '    "b": 1',
        "}",
    ]
    assert text.endswith("}\n")
    assert json.loads(text) == {"b": 1, "a": {"d": [1, "é"], "c": None}}


def test_a_missing_file_is_written_owner_only_in_a_new_directory(tmp_path: Path):
    path = tmp_path / "out" / "demo" / "status.json"
    ops = Operations(check_mode=False)
    written = reconcile_status_file(ops, path, STATUS)
    assert (written.before, written.after) == (None, render_status(STATUS))
    assert json.loads(path.read_text()) == STATUS
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert ops.plan_as_list() == [{"call": "file:WriteFile", "resource": str(path), "reason": "status missing"}]


def test_the_same_status_again_changes_nothing(tmp_path: Path):
    path = tmp_path / "status.json"
    reconcile_status_file(Operations(check_mode=False), path, STATUS)
    before = path.stat().st_mtime_ns
    ops = Operations(check_mode=False)
    written = reconcile_status_file(ops, path, dict(reversed(list(STATUS.items()))))  # key order is not content
    assert not ops.changed and written.before == written.after
    assert path.stat().st_mtime_ns == before


def test_check_mode_plans_the_write_and_leaves_the_file(tmp_path: Path):
    path = tmp_path / "status.json"
    path.write_text("old\n")
    ops = Operations(check_mode=True)
    written = reconcile_status_file(ops, path, STATUS)
    assert ops.plan_as_list() == [{"call": "file:WriteFile", "resource": str(path), "reason": "status differs"}]
    assert (written.before, written.after) == ("old\n", render_status(STATUS))
    assert path.read_text() == "old\n"


@pytest.mark.parametrize("check_mode", [False, True])
def test_absent_removes_the_file_once(tmp_path: Path, check_mode: bool):
    path = tmp_path / "status.json"
    path.write_text("{}\n")
    ops = Operations(check_mode=check_mode)
    written = reconcile_status_file(ops, path, None)
    assert (written.before, written.after) == ("{}\n", None)
    assert ops.plan_as_list() == [{"call": "file:DeleteFile", "resource": str(path), "reason": "state=absent"}]
    assert path.exists() == check_mode
    if not check_mode:
        again = Operations(check_mode=False)
        reconcile_status_file(again, path, None)
        assert not again.changed


def test_a_directory_or_no_file_name_is_refused_before_anything_is_read(tmp_path: Path):
    with pytest.raises(SpecError, match="is a directory; name the file") as e:
        check_status_path(tmp_path)
    assert e.value.field == "path"
    with pytest.raises(SpecError, match="does not name a file"):
        check_status_path(Path("/"))


def test_an_unreadable_file_is_an_error_not_a_silent_overwrite(tmp_path: Path):
    """A path under a file cannot be read (NotADirectoryError, as root too): the run fails, naming it."""
    (tmp_path / "out").write_text("a file where the directory should be\n")
    path = tmp_path / "out" / "status.json"
    with pytest.raises(ReconcileError, match=f"cannot read {path}"):
        reconcile_status_file(Operations(check_mode=False), path, STATUS)


def test_the_topology_is_drawn_next_to_the_status_once_and_removed_with_it(tmp_path: Path):
    """topology.dot and Graphviz's topology.svg (dot from Debian's graphviz, which make test installs)."""
    path = tmp_path / "demo" / "status.json"
    status = {**STATUS, "region": "us-east-1", "resources": {"vpc": [{"id": "vpc-1", "cidr_block": "10.0.0.0/16"}]}}
    ops = Operations(check_mode=False)
    assert reconcile_topology_files(ops, path, status) == []
    assert [p["reason"] for p in ops.plan_as_list()] == ["topology missing", "topology picture missing"]
    svg = (tmp_path / "demo" / "topology.svg").read_text()
    assert svg.startswith("<?xml") and ">Internet</text>" in svg
    assert (tmp_path / "demo" / "topology.dot").read_text().startswith('digraph "demo"')
    again = Operations(check_mode=False)
    reconcile_topology_files(again, path, status)
    assert not again.changed  # no clock in the picture: the same status draws the same bytes
    gone = Operations(check_mode=False)
    reconcile_topology_files(gone, path, None)
    assert [p["call"] for p in gone.plan_as_list()] == ["file:DeleteFile", "file:DeleteFile"]
    assert not (tmp_path / "demo" / "topology.svg").exists()


def test_a_status_is_taken_as_given_with_its_blank_optional_keys_none():
    """ansible-core 2.17 and 2.18 render the role's ``eks: "{{ cluster_info.eks }}"`` (None on a self-managed
    cluster) as "": the optional keys are None again, whatever the ansible-core; other keys are as given."""
    given = {"cluster": "demo", "endpoint": "", "eks": "", "certificates": "", "etcd_backup": "", "kubeconfig": ""}
    assert as_given(given) == {
        "cluster": "demo",
        "endpoint": "",
        "eks": None,
        "certificates": None,
        "etcd_backup": None,
        "kubeconfig": None,
    }
    assert as_given({"eks": {"cluster": {"name": "demo-eks"}}}) == {"eks": {"cluster": {"name": "demo-eks"}}}
    assert as_given(None) is None
