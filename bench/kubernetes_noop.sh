#!/usr/bin/env bash
# The no-op run's requests against the number of workers, on the workload-cluster simulator
# (`make bench-k8s-noop`, WORKERS="2 20" by default): one self-managed cluster (3 control-plane machines,
# addons) grown to each worker count, then run again without a change. For each count it prints the
# second run's PLAY RECAP, its AWS requests (moto's counter) and every request of the controller to the
# cluster's API server (the simulator's journal); the second run must make no write anywhere.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY="$ROOT/${VENV:-.venv}/bin/python"
WORKERS=${WORKERS:-"2 20"}
OUT=.build/bench-k8s-noop
rm -rf "$OUT" && mkdir -p "$OUT"

inventory() { # $1 workers -> the inventory file
    cat > "$OUT/inventory-$1.yml" <<YAML
capa_clusters:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    scale:
      capa_cluster:
        name: scale
        region: us-east-1
        wait_timeout: 900
        network:
          vpc: {availability_zone_usage_limit: 2}
          nat_gateways: single
        control_plane: {replicas: 3, instance_type: t3.large}
        addons: {enabled: true}
        machine_deployments:
          - {name: md-0, replicas: $1, instance_type: t3.large}
YAML
    echo "$OUT/inventory-$1.yml"
}

cleanup() {
    "$PY" tools/kubesim_ctl.py stop --state "$OUT/kubesim" 2>/dev/null || true
    "$PY" tools/moto_ctl.py stop --state "$OUT/moto" 2>/dev/null || true
}
trap cleanup EXIT
URL=$("$PY" tools/moto_ctl.py start --state "$OUT/moto")
"$PY" tools/kubesim_ctl.py start --state "$OUT/kubesim" --moto "$URL" >/dev/null
"$PY" tools/kubesim_ctl.py register-inventory --state "$OUT/kubesim" --inventory "$(inventory 2)" \
    --vars "$OUT/vars.json"
export AWS_ENDPOINT_URL="$URL" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN
export ANSIBLE_CONFIG="$ROOT/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
export PATH="$ROOT/${VENV:-.venv}/bin:$PATH"

play() { # $1 workers, $2 log name
    if ! ansible-playbook -i "$(inventory "$1")" -e "@$OUT/vars.json" -e "capa_output_dir=$OUT/capa" \
        playbooks/site.yml > "$OUT/$2.log" 2>&1; then
        tail -30 "$OUT/$2.log" >&2
        echo "bench: $2 failed (log $OUT/$2.log)" >&2
        exit 1
    fi
}

for n in $WORKERS; do
    play "$n" "grow-$n"
    "$PY" tools/kubesim_ctl.py settle --state "$OUT/kubesim" --timeout 600
    "$PY" tools/moto_ctl.py reset-requests --url "$URL"
    since=$("$PY" -c 'import time; print(time.time())')
    play "$n" "noop-$n"
    echo "=== $n workers, the no-op run"
    grep -A1 'PLAY RECAP' "$OUT/noop-$n.log" | tail -1
    echo "AWS: $("$PY" tools/moto_ctl.py requests --url "$URL" --count) requests," \
        "$("$PY" tools/moto_ctl.py requests --url "$URL" --mutating --count) mutating"
    "$PY" tools/kubesim_ctl.py summary --state "$OUT/kubesim"
    "$PY" tools/kubesim_ctl.py controller-requests --state "$OUT/kubesim" --since "$since"
done
