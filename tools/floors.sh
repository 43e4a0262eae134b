#!/usr/bin/env bash
# make floors / make newest: the collection on the oldest (or newest) versions it claims.
#
# A venv .build/floors/<set> with PYTHON and tests/constraints/<set>.txt: ansible-core, boto3, botocore, cryptography,
# PyYAML as pinned there, the `ansible` package pinned there installed with --no-deps (for amazon.aws and awx.awx
# beside that ansible-core), and tests/constraints/test-requirements.txt.  Then tests/unit and make demo's playbook
# run (tools/demo.sh: examples/inventory.yml twice against a moto server; the second run must change nothing).
#
# Usage: tools/floors.sh SET PYTHON      (SET: floor | newest)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SET=$1 PYTHON=$2
CONSTRAINTS=tests/constraints/$SET.txt
VENV=.build/floors/$SET
command -v "$PYTHON" >/dev/null || { echo "floors: $PYTHON not found" >&2; exit 1; }

if [[ ! -f $VENV/.stamp || $CONSTRAINTS -nt $VENV/.stamp ]]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    # pip's resolver sees ansible-core and the test requirements; `ansible` comes separately, without its pin on
    # the newest ansible-core.
    "$VENV/bin/python" -m pip install --quiet -c "$CONSTRAINTS" ansible-core -r requirements.txt \
        -r tests/constraints/test-requirements.txt
    "$VENV/bin/python" -m pip install --quiet --no-deps -c "$CONSTRAINTS" ansible
    touch "$VENV/.stamp"
fi
"$VENV/bin/python" - "$CONSTRAINTS" <<'PY'
import json, pathlib, platform, sys
from importlib.metadata import version
import ansible_collections.amazon.aws as amazon_aws
wanted = {}
for line in pathlib.Path(sys.argv[1]).read_text().splitlines():
    line = line.split("#", 1)[0].strip()
    if line:
        name, pin = line.split("==")
        wanted[name.lower()] = pin
amazon = json.loads((pathlib.Path(amazon_aws.__path__[0]) / "MANIFEST.json").read_text())["collection_info"]["version"]
found = {name: version(name) for name in ("ansible-core", "ansible", "boto3", "botocore", "cryptography", "PyYAML")}
print(f"floors: Python {platform.python_version()}, " + ", ".join(f"{k} {v}" for k, v in found.items()) + f", amazon.aws {amazon}")
wrong = {k: v for k, v in found.items() if wanted.get(k.lower()) not in (None, v)}
if wrong:
    sys.exit(f"floors: installed versions differ from {sys.argv[1]}: {wrong}")
PY

echo "floors ($SET): tests/unit"
"$VENV/bin/python" -m pytest -q -n 2 -p no:cacheprovider tests/unit
echo "floors ($SET): make demo's playbook run"
VENV=$VENV DEMO_KUBESIM=0 DEMO_MOTO_STATE=.build/floors/$SET-moto bash tools/demo.sh
echo "floors ($SET): passed"
