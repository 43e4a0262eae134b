#!/usr/bin/env bash
# Run `ansible-test sanity` on a copy of the collection as it ships (make sanity).
#
# ansible-test needs the collection at ansible_collections/<namespace>/<name> and its dependency
# collections next to it, and takes its file list from git.  So the tracked and untracked,
# not-ignored files (`git ls-files -co --exclude-standard`) that galaxy.yml's build_ignore keeps are copied to
# .build/sanity/ansible_collections/clusterapi/aws (its own throwaway git repository: the repo's
# .gitignore hides .build from the outer one), amazon.aws is copied from the venv's site-packages,
# and ansible-test runs there with --requirements: its per-test virtual environments live under
# HOME=.build/ansible-test-home, pip bootstrapped by tools/ansible_test_get_pip.py (no download).
#
# Usage: tools/sanity.sh [extra ansible-test sanity arguments]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${VENV:-.venv}
PY="$ROOT/$VENV/bin/python"
PYVER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
NAMESPACE=$(sed -n 's/^namespace: *//p' galaxy.yml | tr -d "\"' ")
NAME=$(sed -n 's/^name: *//p' galaxy.yml | tr -d "\"' ")
BASE="$ROOT/.build/sanity/ansible_collections"
DEST="$BASE/$NAMESPACE/$NAME"

rm -rf "$ROOT/.build/sanity"
mkdir -p "$DEST"
# What `ansible-galaxy collection build` puts in the artifact: galaxy.yml's build_ignore leaves out the harness (the
# moto server, the simulator, the bench, the unit and integration tests), which ruff and mypy check (make lint).
# Sanity checks the collection as it ships, as Automation Hub's certification runs it on the tarball.
git ls-files -co --exclude-standard -z | "$PY" -c '
import fnmatch, sys, yaml
ignored = (yaml.safe_load(open("galaxy.yml")) or {}).get("build_ignore") or []
def shipped(path):
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return not any(fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(parts[i], pattern)
                   for i, p in enumerate(prefixes) for pattern in ignored)
names = [n for n in sys.stdin.buffer.read().decode().split("\0") if n]
sys.stdout.write("".join(n + "\0" for n in names if shipped(n)))
' | while IFS= read -r -d '' f; do
    if [[ -e "$f" || -L "$f" ]]; then printf '%s\0' "$f"; fi
done | xargs -0 --no-run-if-empty cp -P --parents -t "$DEST"

# Dependency collections (galaxy.yml dependencies) from the venv's ansible package.
for dep in $("$PY" -c 'import yaml; print(" ".join((yaml.safe_load(open("galaxy.yml")) or {}).get("dependencies") or {}))'); do
    src="$SITE/ansible_collections/${dep%%.*}/${dep#*.}"
    if [[ ! -d "$src" ]]; then echo "sanity: dependency $dep not found in $SITE/ansible_collections" >&2; exit 1; fi
    mkdir -p "$BASE/${dep%%.*}"
    cp -a "$src" "$BASE/${dep%%.*}/${dep#*.}"
done

(cd "$DEST" && git init -q . && git add -A . >/dev/null)

export HOME="$ROOT/.build/ansible-test-home"
PIP_VERSION=$("$PY" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$PYVER"'"))["pip"])')
mkdir -p "$HOME/.ansible/test/cache"
cp tools/ansible_test_get_pip.py "$HOME/.ansible/test/cache/get_pip_${PIP_VERSION//./_}.py"

unset ANSIBLE_COLLECTIONS_PATH ANSIBLE_CONFIG
export PATH="$ROOT/$VENV/bin:$PATH"
cd "$DEST"
echo "sanity: ansible-test sanity --python $PYVER --requirements $* (in ${DEST#"$ROOT"/})"
exec ansible-test sanity --python "$PYVER" --requirements --color no "$@"
