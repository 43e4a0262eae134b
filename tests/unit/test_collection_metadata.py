"""The collection's metadata says what is true: requirements, floors, attributes, role READMEs, build_ignore."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())
README = (REPO / "README.md").read_text()
MODULES = sorted(p for p in (REPO / "plugins" / "modules").glob("capa_*.py"))
ROLES = sorted(p.parent.parent for p in (REPO / "roles").glob("*/meta/argument_specs.yml"))

# Top-level import name -> distribution name on PyPI.
DISTRIBUTIONS = {
    "boto3": "boto3",
    "botocore": "botocore",
    "cryptography": "cryptography",
    "yaml": "PyYAML",
    "kubernetes": "kubernetes",
    "urllib3": "urllib3",
    "websocket": "websocket-client",
}


def _requirements(path: Path) -> dict[str, Requirement]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            found[req.name.lower()] = req
    return found


def _third_party_imports() -> set[str]:
    stdlib = set(sys.stdlib_module_names)
    names = set()
    for path in (REPO / "plugins").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in stdlib and n not in {"ansible", "ansible_collections", "__future__"}}


def test_requirements_list_every_third_party_import_with_a_floor_only():
    reqs = _requirements(REPO / "requirements.txt")
    imports = _third_party_imports()
    assert imports <= set(DISTRIBUTIONS), f"an import under plugins/ has no distribution mapping: {imports}"
    for name in imports:
        dist = DISTRIBUTIONS[name].lower()
        assert dist in reqs, f"plugins/ imports {name} but requirements.txt does not list {DISTRIBUTIONS[name]}"
    for name, req in reqs.items():
        assert name not in ("ansible-core", "ansible"), "ansible-core is what runs the collection, not a requirement"
        assert [s.operator for s in req.specifier] == [">="], f"{req}: floors only"
    assert set(reqs) == {DISTRIBUTIONS[n].lower() for n in imports}, "requirements.txt lists a package nothing imports"


def test_execution_environment_metadata_points_at_files_that_exist():
    meta = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    assert meta["version"] == 1
    for key in ("python", "system"):
        target = REPO / meta["dependencies"][key]
        assert target.is_file(), f"meta/execution-environment.yml: {key} -> {target} missing"
    assert _requirements(REPO / meta["dependencies"]["python"]) == _requirements(REPO / "requirements.txt")


def test_floors_are_stated_once_and_agree():
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    floor = re.fullmatch(r">=(\d+\.\d+)(\.0)?", runtime["requires_ansible"])
    assert floor, runtime["requires_ansible"]
    python_floor = yaml.safe_load((REPO / "tests" / "config.yml").read_text())["modules"]["python_requires"]
    assert f"ansible-core {floor.group(1)}" in README
    assert f"Python {python_floor.removeprefix('>=')}" in README
    for role in ROLES:
        meta = yaml.safe_load((role / "meta" / "main.yml").read_text())
        assert str(meta["galaxy_info"]["min_ansible_version"]) == floor.group(1), role.name


def test_amazon_aws_range_is_bounded_and_holds_the_tested_version():
    spec = GALAXY["dependencies"]["amazon.aws"]
    lower, upper = (Version(v) for v in re.fullmatch(r">=([\d.]+),<([\d.]+)", spec).groups())
    import ansible_collections.amazon.aws as amazon_aws

    manifest = json.loads((Path(amazon_aws.__path__[0]) / "MANIFEST.json").read_text())
    tested = Version(manifest["collection_info"]["version"])
    assert lower <= tested < upper, f"amazon.aws {tested} (the one tested) is outside {spec}"


@pytest.fixture(scope="module")
def module_docs() -> dict:
    """ansible-doc's rendering of every module (doc fragments merged), as users see it."""
    collections = REPO / ".build" / "collections"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    fqcns = [f"clusterapi.aws.{m.stem}" for m in MODULES]
    ansible_doc = Path(sys.executable).parent / "ansible-doc"
    out = subprocess.run(
        [str(ansible_doc), "--json", "-t", "module", *fqcns], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_every_module_documents_honest_attributes(module, module_docs):
    doc = module_docs[f"clusterapi.aws.{module.stem}"]["doc"]
    attributes = doc.get("attributes") or {}
    assert {"check_mode", "diff_mode", "idempotent"} <= set(attributes), f"{module.stem}: {sorted(attributes)}"
    supports = {name: attributes[name]["support"] for name in ("check_mode", "diff_mode", "idempotent")}
    source = module.read_text()
    # capa_step runs another module of the collection (plugins/action/capa_step.py): that module's support.
    runs_tier = "run_tier(" in source or module.stem == "capa_step"
    # run_tier(..., info=True): a read-only tier (capa_preflight is one without the _info suffix: it is a check).
    read_only = module.stem.endswith("_info") or "info=True" in source
    # A module that is no tier but still changes something (capa_status: a local file) diffs what it changes.
    diffs = runs_tier or "module._diff" in source
    if read_only or not diffs:
        # Read-only (or controller-only) modules: nothing to diff.
        assert supports == {"check_mode": "full", "diff_mode": "none", "idempotent": "full"}, supports
    else:
        # run_tier (or a module's own diff): supports_check_mode=True, a diff with --diff, idempotence.
        assert supports == {"check_mode": "full", "diff_mode": "full", "idempotent": "full"}, supports


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_every_role_has_a_readme_naming_its_variables(role):
    readme = role / "README.md"
    assert readme.is_file(), f"{role.name} has no README.md"
    text = readme.read_text()
    assert text.startswith(f"# clusterapi.aws.{role.name}\n")
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    for option in spec["options"]:
        assert f"`{option}`" in text, f"roles/{role.name}/README.md does not document {option}"


def test_build_ignore_leaves_out_the_harness():
    ignored = set(GALAXY["build_ignore"])
    for entry in (
        "bench",
        "tools",
        "Makefile",
        "mypy.ini",
        ".ci",
        "extensions/molecule",
        "tests/output",
        "tests/unit",
        "tests/integration",
        ".build",
    ):
        assert entry in ignored, f"galaxy.yml build_ignore lacks {entry}"
    assert "tests" not in ignored and "changelogs" not in ignored
    # The harness' helpers at the top of tests/ (the module runner, the simulator's fixtures ...) do not ship either.
    helpers = {f"tests/{path.name}" for path in (REPO / "tests").glob("*.py")}
    assert helpers - ignored == set()
