#!/usr/bin/env bash
# `make test`: every check of the collection, in two lanes, with the time of each and coverage of plugins/.
#
#   lane 1: the integration suite (real ansible-playbook against moto and the workload-cluster simulator, pytest -n
#           $INTEGRATION_WORKERS; its tests wait on servers more than they compute), then the suite-wide secrets scan;
#   lane 2: what needs no server - lint (ruff, mypy, ansible-lint), the unit tests, ansible-test sanity, the changelog,
#           the IAM documents, the Galaxy import checks, the EE, the docs, the AWX job and molecule - one after
#           another, on the core the integration lane leaves idle.
#
# The unit tests run under coverage (tools/coverage.ini: plugins/, branches); with COVERAGE_INTEGRATION=1 (make
# coverage) the integration tests too, with every Python process they start - ansible-playbook and the modules it
# runs - through coverage's `patch = subprocess`. That costs: on Python 3.11 coverage's tracer sees every function
# call of Ansible's own code, and one integration test took 31.5 s of CPU under it against 17.8 s without (+77 %),
# which on a 2-core machine put make test at 26 minutes; so make test measures the unit tests' coverage and make
# coverage the whole suite's. The data is combined and reported per package at the end. A target that fails fails
# the run, after both lanes finished (so one failure does not hide another); each target's output is in
# .build/test-logs/<target>.log and printed on failure.
# The report - targets and their times, the 20 slowest tests, coverage per package - is .build/test-report.md.
#
# Environment: INTEGRATION_WORKERS (4), PYTEST_ARGS (passed to both pytest runs), COVERAGE (1; 0: none),
# COVERAGE_INTEGRATION (0; 1: the integration lane under coverage too).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=.build
LOGS=$BUILD/test-logs
COVERAGE_DIR=$ROOT/$BUILD/coverage
REPORT=$BUILD/test-report.md
WORKERS=${INTEGRATION_WORKERS:-4}
COVER=${COVERAGE:-1}
COVER_INTEGRATION=$((COVER == 1 && ${COVERAGE_INTEGRATION:-0} == 1))
rm -rf "$LOGS" "$COVERAGE_DIR" && mkdir -p "$LOGS" "$COVERAGE_DIR"
started=$SECONDS

pytest_under_coverage() { # the pytest command, under coverage when it is on
    if [[ $COVER == 1 ]]; then echo ".venv/bin/coverage run -m pytest"; else echo ".venv/bin/pytest"; fi
}

# target NAME COMMAND...: run, log, time; append "NAME STATUS SECONDS" to the lane's file
target() {
    local lane=$1 name=$2
    shift 2
    local t0=$SECONDS
    local coverage_env=()
    if [[ $COVER == 1 ]]; then
        # Absolute data files: the servers and ansible-playbook run in other directories.
        coverage_env=(COVERAGE_RCFILE="$ROOT/tools/coverage.ini" COVERAGE_FILE="$COVERAGE_DIR/.coverage"
            CAPA_SOURCE_ROOT="$ROOT" CAPA_COVERAGE_FORKS="$ROOT/tools/coverage_forks.py")
    fi
    echo "make test: $name ..." >&2
    if env "${coverage_env[@]}" "$@" >"$LOGS/$name.log" 2>&1; then
        echo "$name ok $((SECONDS - t0))" >>"$LOGS/$lane.times"
    else
        echo "$name FAILED $((SECONDS - t0))" >>"$LOGS/$lane.times"
        echo "make test: $name FAILED after $((SECONDS - t0))s (log: $LOGS/$name.log)" >&2
        return 1
    fi
    echo "make test: $name ok in $((SECONDS - t0))s" >&2
}

lane_integration() {
    rm -rf "$BUILD/test-output"
    local status=0
    # worksteal: a worker that ran out of tests takes queued ones from the others, so the lane does not end with
    # idle workers waiting behind one that still has a queue.
    COVER=$COVER_INTEGRATION target integration integration $(COVER=$COVER_INTEGRATION pytest_under_coverage) \
        -q -n "$WORKERS" --dist worksteal -p no:cacheprovider \
        --durations=20 \
        -rf tests/integration ${PYTEST_ARGS:-} || status=1
    # The secrets scan reads what every worker kept; it measures nothing of plugins/.
    COVER=0 target integration secrets-scan .venv/bin/pytest -q -s -p no:cacheprovider tests/post_integration || status=1
    return $status
}

lane_checks() {
    local status=0
    target checks lint make --no-print-directory lint || status=1
    target checks unit $(pytest_under_coverage) -q -n 2 -p no:cacheprovider tests/unit ${PYTEST_ARGS:-} || status=1
    local t
    for t in sanity changelog-lint iam-lint galaxy-importer ee docs awx-job molecule; do
        COVER=0 target checks "$t" make --no-print-directory "$t" || status=1
    done
    return $status
}

lane_integration &
integration_pid=$!
lane_checks
checks_status=$?
wait $integration_pid
integration_status=$?

coverage_status=0
if [[ $COVER == 1 ]]; then
    t0=$SECONDS
    if (export COVERAGE_RCFILE="$ROOT/tools/coverage.ini" COVERAGE_FILE="$COVERAGE_DIR/.coverage" CAPA_SOURCE_ROOT="$ROOT"
        .venv/bin/coverage combine -q "$COVERAGE_DIR" && .venv/bin/coverage json -q -o "$COVERAGE_DIR/coverage.json"
    ) >"$LOGS/coverage.log" 2>&1; then
        echo "coverage ok $((SECONDS - t0))" >>"$LOGS/checks.times"
    else
        echo "coverage FAILED $((SECONDS - t0))" >>"$LOGS/checks.times"
        coverage_status=1
    fi
fi

.venv/bin/python tools/test_report.py --logs "$LOGS" --coverage "$COVERAGE_DIR/coverage.json" \
    --coverage-of "$( ((COVER_INTEGRATION)) && echo "unit + integration + the processes they start" || echo "unit tests; make coverage: the whole suite")" \
    --total $((SECONDS - started)) --out "$REPORT"
for name in $(awk '$2 == "FAILED" {print $1}' "$LOGS"/*.times 2>/dev/null); do
    echo "===== $name (failed): the end of $LOGS/$name.log"
    tail -n 150 "$LOGS/$name.log"
done
cat "$REPORT"
if ((checks_status || integration_status || coverage_status)); then
    echo "make test: FAILED (see above)" >&2
    exit 1
fi
echo "make test: passed in $((SECONDS - started))s" >&2
