"""The execution environment's build context (`make ee`: ansible-builder create) carries the collection and its needs.

Run by `make ee` after `ansible-builder create` wrote .build/ee/context; not part of tests/unit (it needs the context).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
CONTEXT = Path(os.environ.get("CAPA_EE_CONTEXT", REPO / ".build" / "ee" / "context"))
BUILD = CONTEXT / "_build"
GALAXY = yaml.safe_load((REPO / "galaxy.yml").read_text())


def _requirements(text: str) -> dict[str, Requirement]:
    found = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            found[req.name.lower()] = req
    return found


def test_context_requirements_carry_the_collections_python_dependencies():
    ours = _requirements((REPO / "meta" / "requirements.txt").read_text())
    context = _requirements((BUILD / "requirements.txt").read_text())
    for name, req in ours.items():
        assert name in context, f"{req} is not in the EE context's requirements.txt"
        assert context[name].specifier == req.specifier, f"{context[name]} != {req}"
    assert (BUILD / "bindep.txt").is_file()


def test_context_includes_the_built_collection_and_amazon_aws():
    requirements = yaml.safe_load((BUILD / "requirements.yml").read_text())
    names = [c["name"] for c in requirements["collections"]]
    (ours,) = [c for c in requirements["collections"] if c.get("type") == "file"]
    tarball = BUILD / "collections" / Path(ours["name"]).name
    assert tarball.is_file(), f"{tarball} (the collection) is not in the build context"
    with tarfile.open(tarball) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == ("clusterapi", "aws", GALAXY["version"])
    assert "amazon.aws" in names
    (amazon,) = [c for c in requirements["collections"] if c["name"] == "amazon.aws"]
    assert amazon["version"] == GALAXY["dependencies"]["amazon.aws"]
    containerfile = next(p for p in (CONTEXT / "Containerfile", CONTEXT / "Dockerfile") if p.is_file()).read_text()
    assert "COPY _build/collections/ /build/collections/" in containerfile
    assert "ansible-galaxy collection install" in containerfile


def test_builder_introspection_reads_the_collections_ee_metadata(tmp_path):
    """What the image build does after installing the collections: the context's introspect.py, on the tarball."""
    install = tmp_path / "collections"
    ansible_galaxy = Path(sys.executable).parent / "ansible-galaxy"
    tarball = next((BUILD / "collections").glob("*.tar.gz"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(install))
    subprocess.run(
        [str(ansible_galaxy), "collection", "install", "--no-deps", "-p", str(install), str(tarball)],
        env=env,
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        [sys.executable, str(BUILD / "scripts" / "introspect.py"), "introspect", str(install)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = yaml.safe_load(out)
    ours = _requirements((REPO / "meta" / "requirements.txt").read_text())
    # ansible-builder leaves out what ansible-core itself brings (PyYAML, among others); the rest must come through,
    # each marked as coming from this collection.
    from_us = [line for line in found["python"] if line.endswith("# from collection clusterapi.aws")]
    assert len(from_us) == len(found["python"]), found["python"]
    expected = {name: req for name, req in ours.items() if name != "pyyaml"}
    assert _requirements("\n".join(from_us)) == expected
    # meta/bindep.txt: Graphviz, whose dot draws the topology pictures (capa_status), on either family of images.
    assert found["system"] == [
        "graphviz [platform:rpm]  # from collection clusterapi.aws",
        "graphviz [platform:dpkg]  # from collection clusterapi.aws",
    ], found["system"]
