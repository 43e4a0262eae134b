# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The import rule of plugins/module_utils (docs/architecture.md), checked on the source.

kernel <- aws and workload (service wrappers) <- concern packages <- cluster. A concern package imports the kernel,
the service wrappers and itself, plus the declared edges only; the facade (``capa.py``) imports only the kernel; a
module imports the facade and its own tier file (``capa_<x>`` -> ``<package>/<x>.py``) - with, at most, other files
of that same package (``capa_cluster_spec`` validates with ``cluster/cluster_spec.py`` and compiles with
``cluster/compile.py``) - nothing else; a module that runs only as its action plugin (``capa_step``) imports nothing.
Only ``capa.py`` sits directly in ``plugins/module_utils``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
import bundle_sizes  # noqa: E402  (the same import walk that measures what each module bundles)

UTILS = REPO / "plugins" / "module_utils"
KERNEL, TOP = "kernel", "cluster"
# The service wrappers: AWS's services, and the workload cluster's API server and etcd.
WRAPPERS = ("aws", "workload")
CONCERNS = ("network", "machines", "kubeadm", "eks", "iam")
# Edges between concern packages, each for a reason docs/architecture.md gives.
DECLARED = {("machines", "kubeadm"), ("eks", "iam")}


def allowed(source: str, target: str) -> bool:
    """May a file of package ``source`` import from package ``target``?"""
    if source == target or target == KERNEL:
        return True
    if source == KERNEL:
        return False
    if source in WRAPPERS:
        return False
    if source in CONCERNS:
        return target in WRAPPERS or (source, target) in DECLARED
    if source == TOP:
        return target in (*WRAPPERS, *CONCERNS)
    if source == "capa":
        return False
    raise AssertionError(f"unknown package {source}")


def package_of(dotted: str) -> str:
    return dotted.split(".")[0] if dotted else ""


def violations(root: Path = UTILS) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        source = package_of(bundle_sizes._dotted_of(path))
        for dotted in sorted(bundle_sizes.imports_of(path)):
            target = package_of(dotted)
            if target and not allowed(source, target):
                found.append(f"{path.relative_to(root)} imports {dotted}")
    return found


def test_packages_import_down_the_layers_only():
    assert violations() == []


def test_only_the_facade_sits_at_the_top():
    top = sorted(p.name for p in UTILS.iterdir() if p.is_file() and p.suffix == ".py")
    assert top == ["capa.py"]
    packages = sorted(p.name for p in UTILS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert packages == sorted([KERNEL, *WRAPPERS, TOP, *CONCERNS])


MODULES = sorted((REPO / "plugins" / "modules").glob("capa_*.py"))


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_a_module_imports_the_facade_and_its_own_tier(module: Path):
    tier = module.stem.removeprefix("capa_")
    imported = bundle_sizes.imports_of(module)
    if (REPO / "plugins" / "action" / module.name).exists() and not imported:
        return  # the action plugin does the work; the module file only documents it
    tiers = {d for d in imported if d != "capa"}
    own = [d for d in tiers if d.rpartition(".")[2] == tier]
    assert len(own) == 1, f"{module.name} imports {sorted(imported)}, no <package>.{tier}"
    package = own[0].rpartition(".")[0]
    assert package in (TOP, *CONCERNS), own[0]
    assert {d.rpartition(".")[0] for d in tiers} == {package}, f"{module.name} imports {sorted(imported)}"


def test_a_module_bundles_only_its_concern_and_the_kernel():
    """What AnsiballZ ships with each module (tools/bundle_sizes.py): its own package, the kernel, the wrappers."""
    for name, row in bundle_sizes.measure().items():
        concerns = set(row["concerns"]) - {KERNEL, *WRAPPERS, "capa"}
        tier = {m.stem: bundle_sizes.imports_of(m) - {"capa"} for m in MODULES}[name]
        if not tier:
            continue  # an action-only module bundles nothing of ours
        own = package_of(next(iter(tier)))
        reach = {own} | {target for source, target in DECLARED if source == own}
        if own == TOP:
            reach |= set(CONCERNS)
        assert concerns <= reach, f"{name} bundles {sorted(concerns - reach)}"


def test_the_rule_catches_a_concern_importing_another(tmp_path: Path):
    """The checker itself: a deliberate violation (network importing machines) is reported."""
    bad = tmp_path / "network"
    bad.mkdir()
    (bad / "__init__.py").write_text("")
    (bad / "vpc.py").write_text("from ..machines.plan import Machine\nfrom ..kernel.errors import SpecError\n")
    original = bundle_sizes.UTILS
    bundle_sizes.UTILS = tmp_path
    try:
        assert violations(tmp_path) == ["network/vpc.py imports machines.plan"]
    finally:
        bundle_sizes.UTILS = original
