"""The capa_cluster_spec action plugin validates and compiles in the controller exactly as the module does in its own
process: same normalised spec, same steps, same security group roles, same failures naming the same field. Only the
action sees the play's module_defaults, for the region of a spec that names none."""

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


ARGS = [
    {"state": "absent"},
    {"output_dir": ""},
    {"output_dir": "/tmp/capa-out", "state": "present"},
    {"kubernetes_api": {"proxy": "http://proxy.internal:3128", "mode": "required"}},
]


def run_module(cluster: dict, **args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_REGION", "AWS_DEFAULT_REGION")}
    env["PYTHONPATH"] = str(COLLECTIONS)
    answer = subprocess.run(
        [sys.executable, str(MODULE)],
        input=json.dumps({"ANSIBLE_MODULE_ARGS": {"cluster": cluster, **args}}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return json.loads(answer.stdout)


def run_action(cluster: dict, monkeypatch, module_defaults=None, **args) -> dict:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    task = MagicMock()
    task.args = {"cluster": cluster, **args}
    task.async_val = 0
    task.module_defaults = module_defaults or []
    templar = MagicMock()
    templar.template.side_effect = lambda value: value
    action = ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=templar, shared_loader_obj=None)
    return action.run(task_vars={})


def core(message: str) -> str:
    """A failure without the wrapping: our prefix, AnsibleModule's name for the module (basic.py here), and the name
    of the spec (the action names it capa_cluster, as users write it; the module's option is cluster)."""
    text = message.replace("capa_cluster is invalid: ", "").split(" module: ")[-1]
    return text.replace("capa_cluster", "cluster")


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
        assert action["steps"] == module["steps"]
        assert action["security_group_roles"] == module["security_group_roles"]
        assert action["changed"] is False


@pytest.mark.parametrize("args", ARGS, ids=[json.dumps(a, sort_keys=True) for a in ARGS])
def test_action_compiles_as_the_module_for_a_state_and_output_dir(args, monkeypatch):
    cluster = {"name": "demo", "region": "us-east-1", "bastion": {"enabled": True}}
    module = run_module(cluster, **args)
    action = run_action(cluster, monkeypatch, **args)
    assert not module.get("failed"), module
    assert action["steps"] == module["steps"]
    assert action["steps"]["state"] == args.get("state", "present")
    expected_dir = {"": None, "/tmp/capa-out": "/tmp/capa-out/demo"}.get(args.get("output_dir", "?"))
    if "output_dir" in args:
        assert action["steps"]["output_dir"] == expected_dir
        assert action["steps"]["control_plane"]["kubeadm"]["output_dir"] == args["output_dir"]


def test_the_plays_module_defaults_give_a_spec_without_region_its_region(monkeypatch):
    """A region in module_defaults of group/clusterapi.aws.capa is the region of every step (before AWS_REGION); the
    spec's own region still wins; the last layer (task over block over play) that sets one decides."""
    defaults = [
        {"group/clusterapi.aws.capa": {"region": "eu-west-1", "profile": "ops"}},
        {"group/clusterapi.aws.capa": {"aws_region": "eu-central-1"}, "clusterapi.aws.capa_vpc": {"region": "x"}},
    ]
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    action = run_action({"name": "demo"}, monkeypatch, module_defaults=defaults)
    assert action["cluster"]["region"] == "eu-central-1"
    assert action["steps"]["network"]["vpc"]["region"] == "eu-central-1"
    assert (
        run_action({"name": "demo", "region": "us-west-2"}, monkeypatch, defaults)["cluster"]["region"] == "us-west-2"
    )
    failed = run_action({"name": "demo"}, monkeypatch)
    assert failed["failed"] and failed["field"] == "capa_cluster.region"
    assert "module_defaults of group/clusterapi.aws.capa" in failed["msg"]
