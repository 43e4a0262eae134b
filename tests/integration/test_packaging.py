"""The collection as users get it: built with ansible-galaxy, installed from the tarball, documented, runnable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
FQCN_PREFIX = f"{GALAXY['namespace']}.{GALAXY['name']}"
OWNED_TAG = "sigs.k8s.io/cluster-api-provider-aws/cluster/{}"


def _module_names() -> list[str]:
    return sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if p.stem != "__init__")


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(command, env=env, cwd=str(cwd), capture_output=True, text=True, timeout=600, check=False)
    output = f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, f"{' '.join(command)} -> rc {proc.returncode}\n{output}"
    return proc


@pytest.fixture(scope="module")
def installed_collection(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Build the collection tarball and install it (no dependencies: amazon.aws comes from the venv)."""
    build_dir = tmp_path_factory.mktemp("galaxy-build")
    install_dir = tmp_path_factory.mktemp("galaxy-install")
    empty_cfg = build_dir / "empty-ansible.cfg"
    empty_cfg.write_text("")
    env = dict(os.environ, ANSIBLE_CONFIG=str(empty_cfg), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)

    galaxy = str(VENV_BIN / "ansible-galaxy")
    _run([galaxy, "collection", "build", "--output-path", str(build_dir), str(REPO)], env, REPO)
    (tarball,) = build_dir.glob(f"{GALAXY['namespace']}-{GALAXY['name']}-*.tar.gz")
    # --force: a clusterapi.aws elsewhere on the default paths (~/.ansible/collections) must not count.
    _run(
        [galaxy, "collection", "install", "--no-deps", "--force", "-p", str(install_dir), str(tarball)],
        dict(env, ANSIBLE_COLLECTIONS_PATH=str(install_dir)),
        build_dir,
    )
    root = install_dir / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    assert (root / "MANIFEST.json").is_file()
    env = dict(env, ANSIBLE_COLLECTIONS_PATH=str(install_dir))
    return {"tarball": tarball, "path": install_dir, "root": root, "env": env}


def test_tarball_leaves_out_build_only_files(installed_collection):
    root = installed_collection["root"]
    for unwanted in (
        ".venv",
        ".build",
        ".capa",
        ".git",
        ".ci",
        "tests/output",
        "tests/unit",
        "tests/integration",
        "tests/sanity",
        "bench",
        "tools",
        "Makefile",
        "extensions/molecule",
        "BENCHMARKS.md",
    ):
        assert not (root / unwanted).exists(), f"{unwanted} was packaged"
    for wanted in (
        "plugins/modules",
        "roles/cluster/README.md",
        "playbooks/site.yml",
        "meta/runtime.yml",
        "changelogs/changelog.yaml",
        "CHANGELOG.md",
        "requirements.txt",
        "tests/config.yml",
        "LICENSE",
    ):
        assert (root / wanted).exists(), f"{wanted} is missing from the tarball"


def test_every_module_renders_documentation_with_examples(installed_collection):
    modules = _module_names()
    assert modules, "plugins/modules has no modules"
    fqcns = [f"{FQCN_PREFIX}.{m}" for m in modules]
    env = installed_collection["env"]
    root = installed_collection["root"]

    docs = json.loads(_run([str(VENV_BIN / "ansible-doc"), "-t", "module", "--json", *fqcns], env, root.parent).stdout)
    for fqcn in fqcns:
        assert fqcn in docs, f"ansible-doc did not document {fqcn}"
        entry = docs[fqcn]
        assert entry["doc"]["filename"].startswith(str(installed_collection["path"])), entry["doc"]["filename"]
        assert (entry.get("examples") or "").strip(), f"{fqcn} has no EXAMPLES"
        assert entry["doc"].get("short_description"), f"{fqcn} has no short_description"

    for fqcn in fqcns:  # the text rendering users see
        text = _run([str(VENV_BIN / "ansible-doc"), "-t", "module", fqcn], env, root.parent).stdout
        assert "EXAMPLES:" in text, f"{fqcn}: no EXAMPLES section\n{text[-2000:]}"
        assert str(installed_collection["path"]) in text


def test_installed_module_runs_against_moto(installed_collection, aws, run_module):
    env = {
        "ANSIBLE_COLLECTIONS_PATH": str(installed_collection["path"]),
        "ANSIBLE_CONFIG": installed_collection["env"]["ANSIBLE_CONFIG"],
    }
    ec2 = aws.client("ec2")
    tag_filter = [{"Name": f"tag:{OWNED_TAG.format('pkg-test')}", "Values": ["owned"]}]

    created = run_module(f"{FQCN_PREFIX}.capa_vpc", {"cluster_name": "pkg-test", "state": "present"}, env=env)
    assert not created.get("failed"), created
    assert created["changed"] is True
    assert len(ec2.describe_vpcs(Filters=tag_filter)["Vpcs"]) == 1

    deleted = run_module(f"{FQCN_PREFIX}.capa_vpc", {"cluster_name": "pkg-test", "state": "absent"}, env=env)
    assert not deleted.get("failed"), deleted
    assert deleted["changed"] is True
    assert ec2.describe_vpcs(Filters=tag_filter)["Vpcs"] == []
