"""The termination watcher, run for real against a fake instance metadata service that the test starts.

No AWS is needed: the fake IMDS (127.0.0.1, a free port) speaks IMDSv2 - it rejects metadata requests without the
token it handed out - and serves ``spot/instance-action`` and ``autoscaling/target-lifecycle-state`` as each test
sets them. ``kubectl`` and ``aws`` are shell scripts that append their argv to a log. The cloud-config checks call
the real ``cloud-init schema`` (Debian: ``apt-get install -y --no-install-recommends cloud-init``); a missing
binary fails the test with that command, nothing is skipped.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.machines import termination as t
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.termination_assets import (
    UNIT_NAME,
    UNIT_PATH,
    WATCHER_PATH,
    WATCHER_SCRIPT,
)

TOKEN = "fake-imds-token-0123"
NODE = "ip-10-0-1-23.ec2.internal"
INSTANCE = "i-0123456789abcdef0"
GROUP = "demo-pool-0"


class FakeImds:
    """A tiny IMDSv2: PUT /latest/api/token, then GETs carrying the token; everything else is 404."""

    def __init__(self) -> None:
        self.spot_action: str | None = None
        self.lifecycle_state: str | None = None
        self.token_requests = 0
        self.metadata_requests: list[str] = []
        self.rejected = 0
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        imds = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _answer(self, status: int, body: str = "") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self) -> None:
                if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    imds.token_requests += 1
                    self._answer(200, TOKEN)
                else:
                    self._answer(400)

            def do_GET(self) -> None:
                if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                    imds.rejected += 1
                    self._answer(401)
                    return
                path = self.path.removeprefix("/latest/meta-data/")
                imds.metadata_requests.append(path)
                values = {
                    "spot/instance-action": imds.spot_action,
                    "autoscaling/target-lifecycle-state": imds.lifecycle_state,
                    "local-hostname": NODE,
                    "instance-id": INSTANCE,
                    "placement/region": "us-east-1",
                }
                value = values.get(path)
                self._answer(200, value) if value is not None else self._answer(404)

        return Handler

    def __enter__(self) -> FakeImds:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def imds():
    with FakeImds() as server:
        yield server


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, Path]:
    """Fake kubectl and aws that log their argv; aws answers describe-auto-scaling-instances with the group."""
    log = tmp_path / "calls.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(f'#!/bin/sh\necho "kubectl $*" >> "{log}"\n')
    aws = bin_dir / "aws"
    aws.write_text(
        "#!/bin/sh\n"
        f'echo "aws $*" >> "{log}"\n'
        'case "$2" in describe-auto-scaling-instances) echo ' + GROUP + " ;; esac\n"
    )
    for tool in (kubectl, aws):
        tool.chmod(0o755)
    script = tmp_path / "watcher.py"
    script.write_text(WATCHER_SCRIPT)
    return {"log": log, "bin": bin_dir, "script": script}


def run_watcher(imds: FakeImds, tools: dict[str, Path], hook: str = "", max_polls: int = 3) -> list[str]:
    env = {
        **os.environ,
        "PATH": f"{tools['bin']}{os.pathsep}{os.environ['PATH']}",
        "CAPA_WATCHER_IMDS_URL": imds.url,
        "CAPA_WATCHER_POLL_SECONDS": "0.05",
        "CAPA_WATCHER_MAX_POLLS": str(max_polls),
        "CAPA_WATCHER_LIFECYCLE_HOOK": hook,
    }
    done = subprocess.run(
        [sys.executable, str(tools["script"])], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return tools["log"].read_text().splitlines() if tools["log"].exists() else []


def drain_calls(node: str = NODE) -> list[str]:
    kubectl = "kubectl --kubeconfig /etc/kubernetes/kubelet.conf"
    return [
        f"{kubectl} cordon {node}",
        f"{kubectl} drain {node} --ignore-daemonsets --delete-emptydir-data --force --timeout=90s",
    ]


def test_no_notice_polls_and_calls_nothing(imds, tools):
    calls = run_watcher(imds, tools, hook="pool-drain", max_polls=4)
    assert calls == []
    assert imds.metadata_requests.count("spot/instance-action") == 4
    assert imds.metadata_requests.count("autoscaling/target-lifecycle-state") == 4
    assert imds.token_requests == 1  # one token serves every poll
    assert imds.rejected == 0


def test_without_a_hook_the_lifecycle_state_is_not_watched(imds, tools):
    imds.lifecycle_state = "Terminated"
    assert run_watcher(imds, tools, max_polls=3) == []
    assert "autoscaling/target-lifecycle-state" not in imds.metadata_requests


def test_spot_notice_cordons_then_drains_once(imds, tools):
    imds.spot_action = json.dumps({"action": "terminate", "time": "2030-01-01T00:00:00Z"})
    calls = run_watcher(imds, tools, max_polls=20)
    assert calls == drain_calls()
    assert imds.metadata_requests.count("spot/instance-action") == 1  # handled on the first poll, then done
    assert imds.rejected == 0


def test_scale_in_drains_then_completes_the_lifecycle_action(imds, tools):
    imds.lifecycle_state = "Terminated"
    calls = run_watcher(imds, tools, hook="pool-0-drain", max_polls=20)
    assert calls == drain_calls() + [
        "aws autoscaling describe-auto-scaling-instances --region us-east-1 --instance-ids "
        f"{INSTANCE} --query AutoScalingInstances[0].AutoScalingGroupName --output text",
        "aws autoscaling complete-lifecycle-action --region us-east-1 --lifecycle-hook-name pool-0-drain "
        f"--auto-scaling-group-name {GROUP} --instance-id {INSTANCE} --lifecycle-action-result CONTINUE",
    ]


def test_in_service_is_not_a_notice(imds, tools):
    imds.lifecycle_state = "InService"
    assert run_watcher(imds, tools, hook="pool-0-drain", max_polls=3) == []


def test_token_is_required_and_renewed_when_rejected(imds, tools):
    """A fake IMDS that forgets its token once: the watcher asks for a new one and still sees the notice."""
    imds.spot_action = json.dumps({"action": "stop", "time": "2030-01-01T00:00:00Z"})
    original = imds.server.RequestHandlerClass.do_GET
    forgot = {"done": False}

    def forget_once(handler: BaseHTTPRequestHandler) -> None:
        if not forgot["done"]:
            forgot["done"] = True
            imds.rejected += 1
            handler._answer(401)  # type: ignore[attr-defined]
            return
        original(handler)

    imds.server.RequestHandlerClass.do_GET = forget_once  # type: ignore[method-assign]
    calls = run_watcher(imds, tools, max_polls=5)
    assert calls == drain_calls()
    assert imds.token_requests == 2 and imds.rejected == 1


def test_unreachable_imds_is_retried_not_fatal(tools):
    """No metadata service at all: each poll fails quietly, nothing is called, the watcher keeps going."""

    class Nowhere:
        url = "http://127.0.0.1:9"  # discard port: nothing listens

    assert run_watcher(Nowhere(), tools, max_polls=2) == []  # type: ignore[arg-type]


# cloud-config ------------------------------------------------------------------------------------------------------
def require(binary: str, install: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"'{binary}' is not installed; install it with: {install}")
    return path


def render_jinja(cloud_init: str, document: bytes) -> str:
    """Render the jinja header with cloud-init's own code, as the node does before it reads the document."""
    interpreter = Path(cloud_init).read_text().splitlines()[0].removeprefix("#!").strip()
    script = (
        "import sys\n"
        "from cloudinit.handlers.jinja_template import render_jinja_payload\n"
        f"data = {{'ds': {{'meta_data': {{'local-hostname': '{NODE}'}}}}}}\n"
        "sys.stdout.write(render_jinja_payload(sys.stdin.read(), 'user-data', data))\n"
    )
    done = subprocess.run(
        interpreter.split() + ["-c", script], input=document.decode(), capture_output=True, text=True, check=True
    )
    return done.stdout


def schema_check(cloud_init: str, text: str, path: Path) -> None:
    path.write_text(text)
    done = subprocess.run(
        [cloud_init, "schema", "--config-file", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "Valid cloud-config" in done.stdout, done.stdout + done.stderr


KUBEADM_LIKE = (
    b"## template: jinja\n#cloud-config\n"
    b"write_files:\n- path: /run/kubeadm/kubeadm.yaml\n  owner: root:root\n  permissions: '0600'\n"
    b"  content: |\n    nodeRegistration:\n      name: '{{ ds.meta_data.local_hostname }}'\n"
    b"runcmd:\n- mkdir -p /run/cluster-api\n- kubeadm join --config /run/kubeadm/kubeadm.yaml\n"
)


@pytest.mark.parametrize("hook", [None, "pool-0-drain"])
def test_merged_jinja_document_renders_and_passes_the_schema(tmp_path, hook):
    cloud_init = require("cloud-init", "apt-get update && apt-get install -y --no-install-recommends cloud-init")
    merged = t.merge_cloud_config(KUBEADM_LIKE, t.watcher_cloud_config(lifecycle_hook=hook))
    assert merged.startswith(b"## template: jinja\n#cloud-config\n")
    rendered = render_jinja(cloud_init, merged)
    config = yaml.safe_load(rendered)
    # The jinja pass leaves the script and the unit exactly as written (no jinja delimiters in them).
    files = {f["path"]: f["content"] for f in config["write_files"]}
    assert files[WATCHER_PATH] == WATCHER_SCRIPT
    assert f"CAPA_WATCHER_LIFECYCLE_HOOK={hook or ''}\n" in files[UNIT_PATH]
    assert f"name: '{NODE}'" in files["/run/kubeadm/kubeadm.yaml"]
    assert config["runcmd"][-1] == f"systemctl enable --now {UNIT_NAME}"
    assert config["runcmd"][1].startswith("kubeadm join")  # the watcher comes after the join
    schema_check(cloud_init, rendered, tmp_path / "rendered.yaml")


def test_merged_plain_document_passes_the_schema(tmp_path):
    cloud_init = require("cloud-init", "apt-get update && apt-get install -y --no-install-recommends cloud-init")
    merged = t.merge_cloud_config(b"#cloud-config\npackages: [jq]\n", t.watcher_cloud_config())
    schema_check(cloud_init, merged.decode(), tmp_path / "plain.yaml")


def test_watcher_from_the_written_file_runs(imds, tools, tmp_path):
    """The script as cloud-init writes it (taken back out of the merged document) is the one that works."""
    merged = t.merge_cloud_config(b"#cloud-config\n", t.watcher_cloud_config())
    files = {f["path"]: f["content"] for f in yaml.safe_load(merged)["write_files"]}
    tools["script"].write_text(files[WATCHER_PATH])
    imds.spot_action = json.dumps({"action": "terminate", "time": "2030-01-01T00:00:00Z"})
    assert run_watcher(imds, tools, max_polls=5) == drain_calls()


def gunzip_chunks(chunks: list[bytes]) -> bytes:
    return gzip.decompress(b"".join(chunks))


# spot machines of capa_instance ------------------------------------------------------------------------------------
SPOT_CLUSTER = "term-it"
BOOTSTRAP_TAG = "clusterapi.aws/bootstrap-data"
RAW = "#cloud-config\nruncmd:\n  - echo joined > /run/joined\n"


def stored_document(aws, group: str) -> bytes:
    """The machine's bootstrap document as the node's boot hook would reassemble it from Secrets Manager."""
    reservations = aws.client("ec2").describe_instances(
        Filters=[{"Name": "tag:clusterapi.aws/machine-group", "Values": [group]}]
    )["Reservations"]
    (instance,) = [i for r in reservations for i in r["Instances"]]
    tags = {x["Key"]: x["Value"] for x in instance["Tags"]}
    backend, prefix, count = tags[BOOTSTRAP_TAG].split(":")
    assert backend == "secrets-manager"
    secrets = aws.client("secretsmanager")
    return gunzip_chunks(
        [secrets.get_secret_value(SecretId=f"{prefix}-{i}")["SecretBinary"] for i in range(int(count))]
    )


def test_spot_machine_bootstrap_data_carries_the_watcher(aws, run_module, build_network, tmp_path):
    network = build_network(SPOT_CLUSTER, zones=1)
    common = {
        "cluster_name": SPOT_CLUSTER,
        "role": "node",
        "replicas": 1,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "subnets": network["subnets"],
        "bootstrap": {"type": "raw", "data": RAW},
        "wait_timeout": 60,
    }
    spot = run_module("clusterapi.aws.capa_instance", {**common, "name": "spot", "spot_market_options": {}})
    assert not spot.get("failed"), spot
    on_demand = run_module("clusterapi.aws.capa_instance", {**common, "name": "ondemand"})
    assert not on_demand.get("failed"), on_demand

    document = stored_document(aws, "spot")
    config = yaml.safe_load(document)
    assert config["runcmd"][0] == "echo joined > /run/joined"  # the user's document, then the watcher
    assert config["runcmd"][-1] == f"systemctl enable --now {UNIT_NAME}"
    assert {f["path"] for f in config["write_files"]} == {WATCHER_PATH, UNIT_PATH}
    assert "CAPA_WATCHER_LIFECYCLE_HOOK=\n" in document.decode()  # a single machine has no scale-in hook
    cloud_init = require("cloud-init", "apt-get update && apt-get install -y --no-install-recommends cloud-init")
    schema_check(cloud_init, document.decode(), tmp_path / "spot.yaml")

    assert stored_document(aws, "ondemand") == RAW.encode()  # on-demand machines are left as they were
