"""The capa_cluster_spec action plugin validates in the controller exactly as the module does in its own process:
same normalised spec, same security group roles, same failures naming the same field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import MagicMock

import pytest

from ansible_collections.clusterapi.aws.plugins.action.capa_cluster_spec import ActionModule

REPO = Path(__file__).resolve().parents[4]
MODULE = REPO / "plugins/modules/capa_cluster_spec.py"
COLLECTIONS = REPO / ".build/collections"

SPECS = [
    {"name": "demo", "region": "us-east-1"},
    {"name": "demo", "region": "eu-west-1", "kind": "eks", "eks": {"version": "1.31"}},
    {"name": "demo", "region": "us-east-1", "machine_pools": [{"name": "mp-0", "min_size": 1, "max_size": 2}]},
    {"name": "Demo", "region": "us-east-1"},
    {"name": "demo", "region": "us-east-1", "network": {"vpc": {"cidr_block": "10.0.0.0/33"}}},
    {"name": "demo", "region": "us-east-1", "network": {"bogus": 1}},
    {"name": "demo", "region": "us-east-1", "control_plane": {"replicas": "three"}},
    {"name": "demo"},  # no region anywhere
]


def run_module(cluster: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}
    env["PYTHONPATH"] = str(COLLECTIONS)
    answer = subprocess.run(
        [sys.executable, str(MODULE)],
        input=json.dumps({"ANSIBLE_MODULE_ARGS": {"cluster": cluster}}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return json.loads(answer.stdout)


def run_action(cluster: dict, monkeypatch) -> dict:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    task = MagicMock()
    task.args = {"cluster": cluster}
    task.async_val = 0
    action = ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    return action.run(task_vars={})


def core(message: str) -> str:
    """A failure without the wrapping: our prefix, and AnsibleModule's name for the module (basic.py here)."""
    return message.replace("capa_cluster is invalid: ", "").split(" module: ")[-1]


@pytest.mark.parametrize("cluster", SPECS, ids=[json.dumps(s, sort_keys=True) for s in SPECS])
def test_action_answers_as_the_module(cluster, monkeypatch):
    module = run_module(cluster)
    action = run_action(cluster, monkeypatch)
    assert bool(action.get("failed")) == bool(module.get("failed")), (module, action)
    if module.get("failed"):
        assert action.get("field") == module.get("field")
        assert core(action["msg"]) == core(module["msg"]), (module, action)
    else:
        assert action["cluster"] == module["cluster"]
        assert action["security_group_roles"] == module["security_group_roles"]
        assert action["changed"] is False
