#!/usr/bin/env bash
# make floors / make newest: the collection on the oldest (or the newest) versions its requirements admit.
#
#   floor:  a venv .build/floors/floor with PYTHON and the pins of tests/constraints/floor.txt (ansible-core, boto3,
#           botocore, cryptography, PyYAML, urllib3, websocket-client: requirements.txt's floors), the `ansible`
#           package pinned there installed with --no-deps (amazon.aws beside that ansible-core).
#   newest: a venv .build/floors/newest with PYTHON and the NEWEST release of every requirement, resolved by pip now
#           (--upgrade --upgrade-strategy eager: no pin list to go stale), the newest `ansible` with --no-deps.
#           The versions it got are written to .build/floors/newest/versions.txt and printed.
# Both add tests/constraints/test-requirements.txt (pytest, moto, the simulator's aiohttp, the kubernetes client the
# tests observe the simulated clusters with), then run tests/unit and make demo's playbook on the workload-cluster
# simulator (tools/demo.sh: every example cluster built, nodes joined, the second run changing nothing, then
# delete.yml leaving nothing that carries an ownership tag).
#
# Usage: tools/floors.sh SET PYTHON      (SET: floor | newest)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SET=$1 PYTHON=$2
VENV=.build/floors/$SET
TESTS_REQUIREMENTS=tests/constraints/test-requirements.txt
command -v "$PYTHON" >/dev/null || { echo "floors: $PYTHON not found" >&2; exit 1; }

case $SET in
floor)
    CONSTRAINTS=tests/constraints/floor.txt
    if [[ ! -f $VENV/.stamp || $CONSTRAINTS -nt $VENV/.stamp || requirements.txt -nt $VENV/.stamp \
        || $TESTS_REQUIREMENTS -nt $VENV/.stamp ]]; then
        rm -rf "$VENV"
        "$PYTHON" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
        # pip's resolver sees ansible-core and the test requirements; `ansible` comes separately, without its pin on
        # the newest ansible-core.
        "$VENV/bin/python" -m pip install --quiet -c "$CONSTRAINTS" ansible-core -r requirements.txt \
            -r "$TESTS_REQUIREMENTS"
        "$VENV/bin/python" -m pip install --quiet --no-deps -c "$CONSTRAINTS" ansible
        touch "$VENV/.stamp"
    fi
    ;;
newest)
    CONSTRAINTS=""
    [[ -x $VENV/bin/python ]] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --upgrade --upgrade-strategy eager ansible-core -r requirements.txt \
        -r "$TESTS_REQUIREMENTS"
    # amazon.aws comes from the `ansible` package (no Galaxy server here): the newest release whose amazon.aws is in
    # galaxy.yml's range, found from the newest major down.
    range=$(sed -n 's/^ *amazon\.aws: *"\(.*\)"/\1/p' galaxy.yml)
    for major in $("$VENV/bin/python" -m pip index versions ansible 2>/dev/null | sed -n 's/^Available versions: //p' \
            | tr ',' '\n' | sed 's/ //g; s/\..*//' | sort -run); do
        "$VENV/bin/python" -m pip install --quiet --upgrade --no-deps "ansible==$major.*"
        if "$VENV/bin/python" - "$range" <<'PY'
import json, pathlib, sys
import ansible_collections.amazon.aws as amazon_aws
from packaging.specifiers import SpecifierSet
found = json.loads((pathlib.Path(amazon_aws.__path__[0]) / "MANIFEST.json").read_text())["collection_info"]["version"]
sys.exit(0 if found in SpecifierSet(sys.argv[1]) else 1)
PY
        then break; fi
        echo "floors (newest): ansible $major.x ships amazon.aws outside galaxy.yml's range $range; trying an older one"
    done
    ;;
*)
    echo "floors: SET is floor or newest, not $SET" >&2
    exit 2
    ;;
esac

# The versions this run uses (newest: what pip resolved just now), checked against the pins for the floor.
"$VENV/bin/python" - "$SET" "$CONSTRAINTS" "$VENV/versions.txt" <<'PY'
import json, pathlib, platform, sys
from importlib.metadata import version, PackageNotFoundError
import ansible_collections.amazon.aws as amazon_aws

which, constraints, out = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
names = ["ansible-core", "ansible", "boto3", "botocore", "cryptography", "PyYAML", "urllib3", "websocket-client",
         "kubernetes"]
found = {}
for name in names:
    try:
        found[name] = version(name)
    except PackageNotFoundError:
        found[name] = "absent"
amazon = json.loads((pathlib.Path(amazon_aws.__path__[0]) / "MANIFEST.json").read_text())["collection_info"]["version"]
line = f"Python {platform.python_version()}, " + ", ".join(f"{k} {v}" for k, v in found.items()) + f", amazon.aws {amazon}"
out.write_text(line + "\n")
print(f"floors ({which}): {line}")
if constraints:
    wanted = {}
    for raw in pathlib.Path(constraints).read_text().splitlines():
        raw = raw.split("#", 1)[0].strip()
        if raw:
            name, pin = raw.split("==")
            wanted[name.lower()] = pin
    wrong = {k: v for k, v in found.items() if wanted.get(k.lower()) not in (None, v)}
    if wrong:
        sys.exit(f"floors: installed versions differ from {constraints}: {wrong}")
PY

echo "floors ($SET): tests/unit"
"$VENV/bin/python" -m pytest -q -n 2 -p no:cacheprovider tests/unit
echo "floors ($SET): make demo's playbook run, on the workload-cluster simulator, then delete.yml"
VENV=$VENV DEMO_DELETE=1 DEMO_MOTO_STATE=.build/floors/$SET-moto DEMO_KUBESIM_STATE=.build/floors/$SET-kubesim bash tools/demo.sh
echo "floors ($SET): passed on $(cat "$VENV/versions.txt")"
