#!/usr/bin/env bash
# make galaxy-importer: run galaxy-importer (Galaxy's and Automation Hub's import checks) on the tarball
# `ansible-galaxy collection build` made, locally: no container engine, ansible-test off, ansible-doc and
# ansible-lint (production profile, as the importer runs it) on.  Fails on any ERROR line and on any warning that
# tools/galaxy-importer-warnings.txt does not list (each one listed there is explained in
# docs/docsite/rst/development.rst, "The artifact: Galaxy and Automation Hub").
#
# Usage: tools/galaxy_importer.sh TARBALL TOOL_VENV MAIN_VENV
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARBALL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") TOOL=$(cd "$2" && pwd) MAIN=$(cd "$3" && pwd)
OUT="$ROOT/.build/galaxy-importer"
rm -rf "$OUT" && mkdir -p "$OUT"

# ansible-doc resolves the amazon.aws doc fragments the modules extend, and ansible-lint the awx.awx modules of
# extensions/awx/controller/apply.yml: give the importer's ansible-core the ones the collection is tested with (the
# main venv's, from the `ansible` package), found by its sys.path scan as the importer sets ANSIBLE_COLLECTIONS_PATH
# to its own temporary directory.
site() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
for dep in amazon/aws awx/awx; do
    mkdir -p "$(site "$TOOL")/ansible_collections/${dep%/*}"
    ln -sfn "$(site "$MAIN")/ansible_collections/$dep" "$(site "$TOOL")/ansible_collections/$dep"
done

cat >"$OUT/galaxy-importer.cfg" <<'CFG'
[galaxy-importer]
LOCAL_IMAGE_DOCKER = False
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_DOC = True
RUN_ANSIBLE_LINT = True
OFFLINE_ANSIBLE_LINT = True
RUN_FLAKE8 = False
CHECK_CHANGELOG = True
CHECK_REQUIRED_TAGS = False
ANSIBLE_LOCAL_TMP = OUT/ansible-tmp
CFG
sed -i "s#OUT/#$OUT/#" "$OUT/galaxy-importer.cfg"

cd "$OUT"
set +e
env -u ANSIBLE_COLLECTIONS_PATH -u ANSIBLE_CONFIG HOME="$OUT/home" PATH="$TOOL/bin:/usr/bin:/bin" \
    GALAXY_IMPORTER_CONFIG="$OUT/galaxy-importer.cfg" \
    "$TOOL/bin/python" -m galaxy_importer.main --print-result "$TARBALL" >"$OUT/import.log" 2>&1
rc=$?
set -e
# The log's own lines ("ERROR: ...", "WARNING: ..."), without pip's index notes that the machine's pip config prints.
grep -E '^(ERROR|WARNING):' "$OUT/import.log" | grep -v "^WARNING: Location 'file:" >"$OUT/findings.txt" || true
errors=$(grep -c '^ERROR:' "$OUT/findings.txt" || true)
warnings=$(grep -c '^WARNING:' "$OUT/findings.txt" || true)
cat "$OUT/findings.txt"
echo "galaxy-importer: $(basename "$TARBALL"): rc $rc, $errors error(s), $warnings warning(s) (log: ${OUT#"$ROOT"/}/import.log)"
unexpected=$(grep -vxF -f "$ROOT/tools/galaxy-importer-warnings.txt" "$OUT/findings.txt" | grep '^WARNING:' || true)
if [[ -n $unexpected ]]; then
    echo "galaxy-importer: warnings not in tools/galaxy-importer-warnings.txt:" >&2
    echo "$unexpected" >&2
    exit 1
fi
if (( rc != 0 || errors > 0 )); then exit 1; fi
