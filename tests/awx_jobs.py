"""An AWX job as ansible-runner runs one, for the tests that play AWX (tests/awx, and the integration test of progress
in a job's output): the private data dir's playbook run by ``ansible-runner run``, its artifacts read back.

ansible-runner lives in its own venv (.build/tools/ansible-runner, built by `make test`'s tools-venvs and `make
awx-job`; CAPA_ANSIBLE_RUNNER names another executable); it starts this venv's ansible-playbook, as an execution
environment starts its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
RUNNER = Path(
    os.environ.get("CAPA_ANSIBLE_RUNNER", REPO / ".build" / "tools" / "ansible-runner" / "bin" / "ansible-runner")
)


def run_job(pdd: Path, playbook: str = "site.yml") -> dict[str, Any]:
    """Run ``playbook`` of the private data dir ``pdd`` as job ``job``: rc, status, stdout (as AWX keeps it, with
    colour), the events in order, and what ansible-runner itself printed."""
    assert RUNNER.is_file(), f"{RUNNER} missing: `make test` (tools-venvs) or `make awx-job` creates it"
    # The job's process environment: no AWS_* and no ANSIBLE_* of this test session, only what AWX would set.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANSIBLE_", "EC2_"))}
    env.update(
        {
            "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",  # the EE's ansible-playbook: this venv's
            "HOME": str(pdd / "home"),
            "AWS_CONFIG_FILE": str(pdd / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(pdd / "no-aws-credentials"),
        }
    )
    proc = subprocess.run(
        [str(RUNNER), "run", str(pdd), "-p", playbook, "--ident", "job"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    artifacts = pdd / "artifacts" / "job"
    events = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
    events.sort(key=lambda e: e["counter"])
    return {
        "rc": int((artifacts / "rc").read_text()),
        "status": (artifacts / "status").read_text().strip(),
        "stdout": (artifacts / "stdout").read_text(),
        "events": events,
        "runner_output": proc.stdout + proc.stderr,
    }
