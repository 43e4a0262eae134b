#!/usr/bin/env bash
# `make demo`: reconcile the example clusters on a local moto server twice and show that the
# second run changes nothing and sends no mutating request.
#
# With the workload-cluster simulator (DEMO_KUBESIM=1, `make demo`'s default) the clusters' machines
# boot from their user data, kubeadm and real etcd members run on them, and the controller reaches each
# API server at its real endpoint name through the simulator's CONNECT proxy (capa_kubernetes_api.proxy,
# mode required): the nodes join, the status shows Ready nodes and etcd members, and the second run must
# also make no write to any Kubernetes API. DEMO_KUBESIM=0 runs on moto alone (no API server answers:
# kubernetes_api's `auto` fallback), as `make floors` does.
#
# The account's IAM (playbooks/iam.yml) is bootstrapped first, as a user does once per account.
#
# Environment: VENV (default .venv), DEMO_INVENTORY (examples/inventory.yml),
# DEMO_PLAYBOOK (playbooks/site.yml), DEMO_MOTO_STATE (.build/moto: the `make moto-start` server
# is reused when running, otherwise one is started here and stopped on exit), DEMO_KUBESIM (1),
# DEMO_KUBESIM_STATE (.build/demo-kubesim), DEMO_DELETE (0; 1: then run playbooks/delete.yml and fail if anything
# still carries a cluster's ownership tag - make floors and make newest do), DEMO_KEEP (0; 1: leave the moto server
# and the simulator running after the run, so the clusters stay reachable: `make demo KEEP=1`, stopped by
# `make demo-down`; the commands that reach them are printed at the end and written to .build/demo/kept.txt).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${VENV:-.venv}
PY="$ROOT/$VENV/bin/python"
INVENTORY=${DEMO_INVENTORY:-examples/inventory.yml}
PLAYBOOK=${DEMO_PLAYBOOK:-playbooks/site.yml}
STATE=${DEMO_MOTO_STATE:-.build/moto}
KUBESIM=${DEMO_KUBESIM:-1}
KUBESIM_STATE=${DEMO_KUBESIM_STATE:-.build/demo-kubesim}
DELETE=${DEMO_DELETE:-0}
KEEP=${DEMO_KEEP:-0}
LOGDIR=.build/demo
mkdir -p "$LOGDIR"

for f in "$INVENTORY" "$PLAYBOOK"; do
    [[ -f "$f" ]] || { echo "demo: $f does not exist" >&2; exit 1; }
done

if [[ -f $LOGDIR/kept.txt ]]; then
    # A demo kept running earlier (KEEP=1): its clusters live in that moto server; this demo starts from an empty one.
    echo "=== demo: stopping the moto server and simulator an earlier \`make demo KEEP=1\` left running"
    "$PY" tools/kubesim_ctl.py stop --state "$KUBESIM_STATE" 2>/dev/null || true
    "$PY" tools/moto_ctl.py stop --state "$STATE" 2>/dev/null || true
    rm -f "$LOGDIR/kept.txt"
fi

started_here=0
if ! "$PY" tools/moto_ctl.py url --state "$STATE" >/dev/null 2>&1 \
    || ! "$PY" tools/moto_ctl.py requests --state "$STATE" --count >/dev/null 2>&1; then
    started_here=1
fi
cleanup() {
    if [[ $KEEP == 1 ]]; then return; fi
    if [[ $KUBESIM == 1 ]]; then "$PY" tools/kubesim_ctl.py stop --state "$KUBESIM_STATE" 2>/dev/null || true; fi
    if [[ $started_here == 1 ]]; then "$PY" tools/moto_ctl.py stop --state "$STATE" || true; fi
}
trap cleanup EXIT
URL=$("$PY" tools/moto_ctl.py start --state "$STATE")
# KEEP=1 leaves the servers up even when a run fails; the marker lets `make demo-down` and the next demo find them.
if [[ $KEEP == 1 ]]; then echo "kept: $URL (make demo-down stops it)" >"$LOGDIR/kept.txt"; fi

extra_vars=()
if [[ $KUBESIM == 1 ]]; then
    # A fresh simulator per demo: it boots every instance the clusters launch from here on.
    "$PY" tools/kubesim_ctl.py stop --state "$KUBESIM_STATE" 2>/dev/null || true
    "$PY" tools/kubesim_ctl.py start --state "$KUBESIM_STATE" --moto "$URL" >/dev/null
    "$PY" tools/kubesim_ctl.py register-inventory --state "$KUBESIM_STATE" --inventory "$INVENTORY" \
        --vars "$LOGDIR/kubesim-vars.json"
    extra_vars=(-e "@$LOGDIR/kubesim-vars.json")
fi

export AWS_ENDPOINT_URL="$URL"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN
export ANSIBLE_CONFIG="$ROOT/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-0}
export PATH="$ROOT/$VENV/bin:$PATH"

# KEEP=1: the servers stay up; say how to reach what the demo built (and keep it in a file).
print_kept() {
    local proxy="" cluster kubeconfig
    echo "=== demo: kept running (stop both with: make demo-down)"
    echo "AWS endpoint (moto): $URL"
    if [[ $KUBESIM == 1 ]]; then
        proxy=$("$PY" tools/kubesim_ctl.py proxy --state "$KUBESIM_STATE")
        echo "workload-cluster simulator: $("$PY" tools/kubesim_ctl.py url --state "$KUBESIM_STATE"), its CONNECT proxy: $proxy"
        echo "Each kubeconfig names its cluster's real endpoint (the load balancer's or EKS's DNS name), which only the"
        echo "simulator's proxy resolves; kubectl goes through it with HTTPS_PROXY (set it per command, not in your shell):"
        for kubeconfig in .capa/*/kubeconfig; do
            [[ -f $kubeconfig ]] || continue
            cluster=$(basename "$(dirname "$kubeconfig")")
            if [[ -f .capa/$cluster/user-kubeconfig ]]; then
                # EKS: the token in kubeconfig lives 60 s; user-kubeconfig asks `aws eks get-token` for a fresh one.
                echo "  HTTPS_PROXY=$proxy PATH=$ROOT/.build/node-venv/bin:\$PATH AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 kubectl --kubeconfig .capa/$cluster/user-kubeconfig get nodes"
            else
                echo "  HTTPS_PROXY=$proxy kubectl --kubeconfig $kubeconfig get nodes"
            fi
        done
    fi
    echo "Run the playbooks against the same endpoint (a change to examples/inventory.yml, playbooks/delete.yml ...):"
    echo "  export AWS_ENDPOINT_URL=$URL AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1"
    echo "  export ANSIBLE_CONFIG=$ROOT/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$ROOT/.build/collections PATH=$ROOT/$VENV/bin:\$PATH"
    echo "  ansible-playbook -i $INVENTORY ${extra_vars[*]} playbooks/site.yml"
}

recap_changed() { # sum of changed=N over the PLAY RECAP lines of a log
    awk '/^PLAY RECAP/ {r=1; next} r && /changed=/ { for (i = 1; i <= NF; i++) if ($i ~ /^changed=/) { split($i, a, "="); s += a[2] } } END { print s + 0 }' "$1"
}

# Once per account, as a user starts (clusterawsadm bootstrap iam): CAPA's roles and instance profiles, among
# them the nodes profile demo-eks's self-managed pool joins with. Not counted in the runs' requests.
echo "=== demo: the account's IAM (ansible-playbook playbooks/iam.yml)"
ansible-playbook playbooks/iam.yml 2>&1 | tee "$LOGDIR/iam.log"

touch "$LOGDIR/run1.started"
echo "=== demo: first run (ansible-playbook -i $INVENTORY $PLAYBOOK) against $URL"
"$PY" tools/moto_ctl.py reset-requests --url "$URL"
ansible-playbook -i "$INVENTORY" "${extra_vars[@]}" "$PLAYBOOK" 2>&1 | tee "$LOGDIR/run1.log"
first_changed=$(recap_changed "$LOGDIR/run1.log")
first_requests=$("$PY" tools/moto_ctl.py requests --url "$URL" --count)
first_mutating=$("$PY" tools/moto_ctl.py requests --url "$URL" --mutating --count)

if [[ $KUBESIM == 1 ]]; then
    # Machines launched at the end of the first run are still booting (their boot hooks fetch and delete their
    # bootstrap secrets): the second run starts once every node has joined or failed, so what it counts is its own.
    "$PY" tools/kubesim_ctl.py settle --state "$KUBESIM_STATE" --timeout 300
fi

echo "=== demo: second run (must change nothing)"
"$PY" tools/moto_ctl.py reset-requests --url "$URL"
second_started=$("$PY" -c 'import time; print(time.time())')
ansible-playbook -i "$INVENTORY" "${extra_vars[@]}" "$PLAYBOOK" 2>&1 | tee "$LOGDIR/run2.log"
second_changed=$(recap_changed "$LOGDIR/run2.log")
second_requests=$("$PY" tools/moto_ctl.py requests --url "$URL" --count)
second_mutating=$("$PY" tools/moto_ctl.py requests --url "$URL" --mutating --count)

echo
echo "=== demo summary"
echo "first run:  changed=$first_changed, $first_requests AWS requests, $first_mutating mutating"
echo "second run: changed=$second_changed, $second_requests AWS requests, $second_mutating mutating (non Describe/List/Get)"
if [[ $second_mutating != 0 ]]; then
    echo "mutating requests during the second run:"
    "$PY" tools/moto_ctl.py requests --url "$URL" --mutating --summary
fi
mapfile -t statuses < <(find . \( -path ./.venv -o -path ./.build -o -path ./.git \) -prune -o \
    -path '*/.capa/*/status.json' -newer "$LOGDIR/run1.started" -print | sed 's|^\./||' | sort)
if ((${#statuses[@]})); then
    echo "cluster status (.capa/<cluster>/status.json):"
    for s in "${statuses[@]}"; do echo "  $ROOT/$s"; done
else
    echo "cluster status: no .capa/<cluster>/status.json was written"
fi
kubernetes_writes=0
if [[ $KUBESIM == 1 ]]; then
    echo "the clusters as the simulator sees them (nodes, etcd members):"
    "$PY" tools/kubesim_ctl.py summary --state "$KUBESIM_STATE"
    echo "second run, the controller's requests to the Kubernetes API servers:"
    "$PY" tools/kubesim_ctl.py controller-requests --state "$KUBESIM_STATE" --since "$second_started" \
        | tee "$LOGDIR/run2-kubernetes.txt"
    kubernetes_writes=$(awk '/^writes: / {print $2}' "$LOGDIR/run2-kubernetes.txt")
fi
echo "logs: $LOGDIR/run1.log $LOGDIR/run2.log"

status=0
if [[ $second_changed != 0 ]]; then echo "demo FAILED: the second run reported changed=$second_changed" >&2; status=1; fi
if [[ $second_mutating != 0 ]]; then echo "demo FAILED: the second run sent $second_mutating mutating request(s)" >&2; status=1; fi
if [[ $kubernetes_writes != 0 ]]; then
    echo "demo FAILED: the second run wrote to a Kubernetes API $kubernetes_writes time(s)" >&2; status=1
fi
if [[ $status == 0 ]]; then echo "demo OK: the second run changed nothing and sent no mutating request"; fi

if [[ $DELETE == 1 ]]; then
    echo "=== demo: delete (ansible-playbook -i $INVENTORY playbooks/delete.yml)"
    ansible-playbook -i "$INVENTORY" "${extra_vars[@]}" playbooks/delete.yml 2>&1 | tee "$LOGDIR/delete.log" \
        || { echo "demo FAILED: delete.yml failed" >&2; exit 1; }
    # What still carries a cluster's ownership tag, read as a user would (the tagging API and live instances).
    left=$("$PY" - <<'PY'
import boto3
owned = "sigs.k8s.io/cluster-api-provider-aws/cluster/"
def tagged(tags):
    return any(t["Key"].startswith(owned) for t in tags or [])
left = [r["ResourceARN"] for page in boto3.client("resourcegroupstaggingapi").get_paginator("get_resources").paginate()
        for r in page.get("ResourceTagMappings", []) if tagged(r.get("Tags"))]
for page in boto3.client("ec2").get_paginator("describe_instances").paginate():
    left += [i["InstanceId"] for r in page["Reservations"] for i in r["Instances"]
             if i["State"]["Name"] != "terminated" and tagged(i.get("Tags"))]
print(" ".join(sorted(set(left))))
PY
)
    if [[ -n $left ]]; then echo "demo FAILED: after delete.yml these still carry an ownership tag: $left" >&2; exit 1; fi
    echo "demo OK: delete.yml removed everything the clusters owned"
fi
if [[ $KEEP == 1 ]]; then
    print_kept | tee "$LOGDIR/kept.txt"
else
    echo "The moto server and the simulator stop now: the kubeconfigs in .capa/ name endpoints that no longer answer"
    echo "(a record of what a run writes). \`make demo KEEP=1\` keeps both running and prints how to reach the clusters."
fi
exit $status
