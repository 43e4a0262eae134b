"""What a user installs, run as a user runs it.

The collection tarball (``ansible-galaxy collection build``) is installed into a fresh collections path, and a fresh
virtualenv gets ``ansible-core`` and ``requirements.txt`` alone - no development pins, so pip resolves the newest
releases the declared ranges admit, as it does for a user today. amazon.aws, the collection's one dependency, comes
from where a user without a Galaxy server gets it: the ``ansible`` package's copy (this venv's), placed in the same
collections path. Then ``ansible-playbook clusterapi.aws.site`` (the installed playbook, the installed roles and
modules, the fresh venv's Python) builds a self-managed cluster on the embedded endpoint and the workload-cluster
simulator - the nodes join, etcd has its voter - runs again as a no-op, and ``clusterapi.aws.delete`` removes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
NAME = "user-lite"
CONTROLLER = "clusterapi.aws:controller"


def _run(command: list[str], env: dict[str, str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(command, env=env, cwd=str(cwd), capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, (
        f"{' '.join(command)} -> rc {proc.returncode}\n{proc.stdout[-5000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


@pytest.fixture(scope="module")
def user_install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv (ansible-core + requirements.txt) and a fresh collections path with the built tarball."""
    root = tmp_path_factory.mktemp("user")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PIP_CONSTRAINT", "VIRTUAL_ENV"))}
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env, root)
    _run(
        [
            str(venv / "bin/python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "ansible-core",
            "-r",
            str(REPO / "requirements.txt"),
        ],
        env,
        root,
    )
    empty_cfg = root / "ansible.cfg"
    empty_cfg.write_text("")
    env = dict(env, ANSIBLE_CONFIG=str(empty_cfg), ANSIBLE_NOCOLOR="1")
    build = root / "build"
    _run([str(venv / "bin/ansible-galaxy"), "collection", "build", "--output-path", str(build), str(REPO)], env, root)
    (tarball,) = build.glob("clusterapi-aws-*.tar.gz")
    collections = root / "collections"
    _run(
        [str(venv / "bin/ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
        dict(env, ANSIBLE_COLLECTIONS_PATH=str(collections)),
        root,
    )
    import ansible_collections.amazon.aws as amazon_aws  # the `ansible` package's copy

    shutil.copytree(amazon_aws.__path__[0], collections / "ansible_collections" / "amazon" / "aws")
    versions = _run([str(venv / "bin/python"), "-m", "pip", "list", "--format", "json"], env, root).stdout
    installed = {p["name"].lower(): p["version"] for p in json.loads(versions)}
    print(
        "user install: "
        + ", ".join(
            f"{n} {installed[n]}" for n in ("ansible-core", "boto3", "cryptography", "urllib3") if n in installed
        )
        + f"; kubernetes {'absent' if 'kubernetes' not in installed else installed['kubernetes']}"
    )
    return {"venv": venv, "collections": collections, "config": empty_cfg, "installed": installed}


def _recap_changed(stdout: str) -> int:
    return sum(int(n) for n in re.findall(r"\bchanged=(\d+)", stdout.split("PLAY RECAP", 1)[-1]))


def test_a_users_install_builds_no_ops_and_deletes_a_self_managed_cluster(user_install, aws, kubesim, tmp_path):
    installed = user_install["installed"]
    assert "kubernetes" not in installed  # the collection does not need the client: requirements.txt alone
    assert "moto" not in installed and "pytest" not in installed
    kubesim.register(NAME)
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "capa_clusters": {
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                        "capa_output_dir": str(tmp_path / "out"),
                        "capa_kubernetes_api": {"proxy": kubesim.proxy, "mode": "required"},
                    },
                    "hosts": {
                        NAME: {
                            "capa_cluster": {
                                "name": NAME,
                                "region": "us-east-1",
                                "network": {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "single"},
                                "control_plane_load_balancer": {"type": "nlb"},
                                "addons": {"enabled": True},
                                "machine_deployments": [{"name": "md-0", "replicas": 1}],
                            }
                        }
                    },
                }
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        ANSIBLE_CONFIG=str(user_install["config"]),
        ANSIBLE_COLLECTIONS_PATH=str(user_install["collections"]),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PATH=f"{user_install['venv'] / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    playbook = [str(user_install["venv"] / "bin/ansible-playbook"), "-i", str(inventory)]

    first = _run([*playbook, "clusterapi.aws.site"], env, tmp_path)
    status = json.loads((tmp_path / "out" / NAME / "status.json").read_text())
    machines = status["machines"]
    assert [m["kubernetes"]["etcd_member"] for m in machines["control-plane"]] == ["voter"], machines
    assert [m["kubernetes"]["node_ready"] for g in ("control-plane", "md-0") for m in machines[g]] == ["True"] * 2
    assert _recap_changed(first.stdout) > 0

    aws.reset_requests()
    since = time.time()
    second = _run([*playbook, "clusterapi.aws.site"], env, tmp_path)
    assert _recap_changed(second.stdout) == 0, second.stdout[-4000:]
    assert aws.mutating_requests() == []
    writes = [
        e
        for e in kubesim.journal(cluster=NAME, source="apiserver", moto=False, since=since)
        if e.get("user") == CONTROLLER and e.get("method") != "GET"
    ]
    assert writes == []

    _run([*playbook, "clusterapi.aws.delete"], env, tmp_path)
    ec2 = aws.client("ec2")
    assert [v for v in ec2.describe_vpcs()["Vpcs"] if not v["IsDefault"]] == []
    live = [
        i
        for r in ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
        if i["State"]["Name"] != "terminated"
    ]
    assert live == []
