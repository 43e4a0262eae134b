"""What an EC2 instance does between ``running`` and its kubelet: cloud-init on the instance's user data.

The user data is handled as cloud-init handles it: MIME multipart parts by content type (``text/cloud-boothook``,
``text/x-include-url``, ``text/cloud-config``, ``text/x-shellscript``), gzip detected by magic, ``#include``,
``## template: jinja`` rendered with the instance's metadata (``ds.meta_data.local_hostname`` = the private DNS
name), ``write_files`` and ``runcmd``.

Everything runs in a per-node sandbox root ``<state>/nodes/<instance-id>/root``: absolute paths under the usual
system directories (``/etc``, ``/run``, ``/var``, ``/tmp``, ``/root``, ``/opt``, ``/srv``, ``/home``, ``/mnt``,
``/usr/local``) in boot hooks and ``runcmd`` are rewritten into that root. The node's ``PATH`` starts with
stand-ins in ``<state>/nodes/<instance-id>/bin``: ``systemctl`` (records its calls; ``restart cloud-init`` marks the
restart the boot hook asks for), ``sleep`` (sleeps the time-scaled duration), ``kubeadm``, ``nodeadm`` and ``ctr``
(hand their arguments to the simulator, which acts as kubeadm/nodeadm/containerd would and returns their exit
code: ``ctr.py``); then the node
venv with the real AWS CLI (``.build/node-venv``), then ``/usr/bin:/bin``.
"""

from __future__ import annotations

import base64
import email
import email.policy
import gzip
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import yaml

from . import etcd

if TYPE_CHECKING:
    from .cluster import Cluster, NodeRuntime
    from .sim import Simulator

REPO = Path(__file__).resolve().parents[2]
NODE_VENV = Path(os.environ.get("KUBESIM_NODE_VENV", str(REPO / ".build" / "node-venv")))
SYSTEM_DIRS = ("etc", "run", "var", "tmp", "root", "opt", "srv", "home", "mnt", "usr/local")
_PATH_RE = re.compile(r"(?<![\w./-])/(" + "|".join(re.escape(d) for d in SYSTEM_DIRS) + r")(?=/|\b)")


class BootError(Exception):
    """The node cannot bootstrap; the reason is recorded and the node never registers."""


def rewrite_paths(text: str, root: Path) -> str:
    """``/etc/x`` -> ``<root>/etc/x`` for the system directories (see module docstring)."""
    return _PATH_RE.sub(lambda m: f"{root}/{m.group(1)}", text)


def in_root(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


STANDIN_SYSTEMCTL = """#!/bin/sh
# kubesim stand-in: the node has no systemd; record the call.
echo "$*" >> "{root}/var/log/kubesim-systemctl.log"
if [ "$1" = restart ] && [ "$2" = cloud-init ]; then
  mkdir -p "{root}/run/kubesim" && : > "{root}/run/kubesim/cloud-init-restarted"
fi
exit 0
"""
STANDIN_SLEEP = """#!/bin/sh
# kubesim stand-in: sleep the time-scaled duration (time scale {scale}).
exec /bin/sleep "$(python3 -c 'import sys; print(max(0.0, float(sys.argv[1].rstrip("s")) * {scale}))' "${{1:-0}}")"
"""
STANDIN_TOOL = """#!{python}
# kubesim stand-in for {tool}: the simulator acts as {tool} would on this node and returns its exit code.
import json, sys, urllib.request
request = urllib.request.Request(
    "{control}/_nodes/{instance}/{tool}", data=json.dumps({{"args": sys.argv[1:]}}).encode(),
    headers={{"Content-Type": "application/json"}}, method="POST")
with urllib.request.urlopen(request, timeout=3600) as response:
    answer = json.load(response)
sys.stdout.write(answer.get("output", ""))
sys.exit(answer.get("rc", 1))
"""


class NodeBoot:
    """Boots one instance: runs in its own thread, from ``running`` to the end of cloud-init."""

    def __init__(self, sim: Simulator, cluster: Cluster, runtime: NodeRuntime, instance: dict[str, Any]) -> None:
        self.sim = sim
        self.cluster = cluster
        self.runtime = runtime
        self.instance = instance
        self.base = sim.state_dir / "nodes" / runtime.instance_id
        self.root = self.base / "root"
        self.bin = self.base / "bin"
        runtime.root = self.root

    def record(self, event: str, **fields: Any) -> None:
        self.sim.journal.record(
            "node",
            event,
            cluster=self.cluster.name,
            instance=self.runtime.instance_id,
            node=self.runtime.name,
            machine=self.runtime.machine,
            **fields,
        )

    def fail(self, reason: str, event: str = "failed") -> None:
        self.runtime.state = "rejected" if event == "rejected" else "failed"
        self.runtime.reason = reason
        self.record(event, reason=reason)

    # ----------------------------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self._run()
        except BootError as exc:
            self.fail(str(exc))
        except Exception as exc:  # noqa: BLE001 - a simulator bug shows in the journal, not as a dead thread
            import traceback

            traceback.print_exc()
            self.fail(f"kubesim error: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        knobs = self.sim.knobs_for(self.runtime)
        if knobs.get("never_boot"):
            self.runtime.state = "never-booted"
            self.record("never-boots", reason="knob never_boot")
            return
        self.runtime.state = "booting"
        if not self.sim.sleep_scaled(self.cluster.delay("boot"), self.runtime):
            return
        self.record("booted")
        self._prepare_sandbox()
        data = self.sim.user_data(self.runtime.instance_id, self.runtime.region)
        if not data:
            self.fail("no user data: cloud-init has nothing to do")
            return
        self.runtime.state = "bootstrapping"
        self.process(data, depth=0)
        self.record("cloud-init-done", state=self.runtime.state)

    def _prepare_sandbox(self) -> None:
        if not (NODE_VENV / "bin" / "aws").is_file():
            raise BootError(f"the node's AWS CLI is missing ({NODE_VENV}/bin/aws): run `make system-deps`")
        for d in ("etc", "run", "var/log", "var/lib/cloud/instance/boothooks", "tmp", "root"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(parents=True, exist_ok=True)
        scale = self.cluster.scale
        standins = {
            "systemctl": STANDIN_SYSTEMCTL.format(root=self.root),
            "sleep": STANDIN_SLEEP.format(scale=scale),
        }
        for tool in ("kubeadm", "nodeadm", "ctr"):
            standins[tool] = STANDIN_TOOL.format(
                python=sys.executable, tool=tool, control=self.sim.control_url, instance=self.runtime.instance_id
            )
        for name, text in standins.items():
            path = self.bin / name
            path.write_text(text)
            path.chmod(0o755)

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{self.bin}:{NODE_VENV / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.root / "root"),
            "AWS_ENDPOINT_URL": self.sim.moto_url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": self.runtime.region,
            "AWS_REGION": self.runtime.region,
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_EC2_METADATA_DISABLED": "true",
            "INSTANCE_ID": self.runtime.instance_id,
            "LANG": "C.UTF-8",
        }

    # ---- cloud-init user data ------------------------------------------------------------------------------
    def process(self, data: bytes, depth: int) -> None:
        if depth > 5:
            raise BootError("user data includes nest too deep")
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8", "replace")
        head = text.lstrip()[:200].lower()
        if head.startswith("content-type:") or head.startswith("mime-version:"):
            message = email.message_from_string(text, policy=email.policy.compat32)
            parts = message.walk() if message.is_multipart() else [message]
            for part in parts:
                if part.is_multipart():
                    continue
                payload = part.get_payload(decode=True) or b""
                self.process_part(part.get_content_type(), payload, depth)
            return
        self.process_part("", data, depth)

    def process_part(self, content_type: str, payload: bytes, depth: int) -> None:
        if payload[:2] == b"\x1f\x8b":
            payload = gzip.decompress(payload)
        text = payload.decode("utf-8", "replace")
        first = text.split("\n", 1)[0].strip()
        kind = content_type
        if not kind or kind == "text/plain":
            kind = {
                "#cloud-boothook": "text/cloud-boothook",
                "#include": "text/x-include-url",
                "#cloud-config": "text/cloud-config",
                "## template: jinja": "jinja",
            }.get(first, "text/x-shellscript" if first.startswith("#!") else "text/plain")
        if kind == "jinja" or first == "## template: jinja":
            self.process_part(content_type if content_type != "jinja" else "", self.render_jinja(text).encode(), depth)
            return
        if kind == "text/cloud-boothook":
            self.boothook(text)
        elif kind == "text/x-include-url":
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                self.process(self.fetch_include(line), depth + 1)
        elif kind == "text/cloud-config":
            self.cloud_config(text)
        elif kind == "text/x-shellscript":
            self.shell(text, "user-script")
        elif kind == "application/node.eks.aws":
            self.sim.nodeadm_config(self, text)
        else:
            self.record("part-ignored", content_type=kind)

    def render_jinja(self, text: str) -> str:
        body = text.split("\n", 1)[1] if "\n" in text else ""
        r = self.runtime
        meta = {
            "local_hostname": r.name,
            "hostname": r.name,
            "instance_id": r.instance_id,
            "local_ipv4": r.private_ip,
            "availability_zone": r.az,
            "placement": {"availability_zone": r.az, "region": r.region},
            "region": r.region,
            "instance_type": r.instance_type,
        }
        variables = {
            "ds": {"meta_data": meta, "ec2_metadata": meta},
            "v1": {
                "local_hostname": r.name,
                "instance_id": r.instance_id,
                "availability_zone": r.az,
                "region": r.region,
                "cloud_name": "aws",
                "platform": "ec2",
                "machine": "x86_64",
            },
            "local_hostname": r.name,
            "instance_id": r.instance_id,
        }

        class Missing(jinja2.Undefined):
            # cloud-init renders an unknown variable as CI_MISSING_JINJA_VAR/<name> and warns.
            def __str__(self) -> str:
                return f"CI_MISSING_JINJA_VAR/{self._undefined_name}"

            def __getattr__(self, name: str) -> Any:
                if name.startswith("_"):
                    raise AttributeError(name)
                return Missing(name=f"{self._undefined_name}.{name}")

        env = jinja2.Environment(undefined=Missing, keep_trailing_newline=True)
        return env.from_string(body).render(**variables)

    def fetch_include(self, url: str) -> bytes:
        if url.startswith("file://"):
            path = in_root(self.root, url[len("file://") :])
            if not path.is_file():
                raise BootError(f"include {url}: no such file (the boot hook did not produce it)")
            self.record("include", url=url, bytes=path.stat().st_size)
            return path.read_bytes()
        raise BootError(f"include {url}: only file:// includes are simulated")

    def boothook(self, text: str) -> None:
        script = rewrite_paths(text, self.root)
        path = self.root / "var/lib/cloud/instance/boothooks" / f"part-{int(time.time() * 1000)}"
        path.write_text(script)
        path.chmod(0o700)
        interpreter = "/bin/bash" if script.startswith("#!/bin/bash") or not script.startswith("#!") else ""
        args = [interpreter, str(path)] if interpreter else [str(path)]
        started = time.time()
        result = etcd.run(args, timeout=300, track=self.runtime.processes, env=self.env(), cwd=str(self.root))
        log = self.root / "var/log/cloud-init-output.log"
        with open(log, "ab") as out:
            out.write(result.stdout + result.stderr)
        restarted = (self.root / "run/kubesim/cloud-init-restarted").exists()
        self.record(
            "boothook",
            rc=result.returncode,
            seconds=round(time.time() - started, 3),
            restarted_cloud_init=restarted,
            stderr=result.stderr.decode("utf-8", "replace")[-600:],
        )
        if result.returncode != 0:
            raise BootError(
                f"boot hook exited {result.returncode}: {result.stderr.decode('utf-8', 'replace').strip()[-400:]}"
            )

    def shell(self, script: str, label: str) -> int:
        script = rewrite_paths(script, self.root)
        path = self.root / "var/lib/cloud/instance/scripts" / label
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script)
        path.chmod(0o700)
        result = etcd.run(
            ["/bin/sh", str(path)], timeout=3600, track=self.runtime.processes, env=self.env(), cwd=str(self.root)
        )
        with open(self.root / "var/log/cloud-init-output.log", "ab") as out:
            out.write(result.stdout + result.stderr)
        self.record(label, rc=result.returncode, stderr=result.stderr.decode("utf-8", "replace")[-600:])
        return result.returncode

    def cloud_config(self, text: str) -> None:
        try:
            config = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise BootError(f"cloud-config is not valid YAML: {exc}") from None
        if not isinstance(config, dict):
            raise BootError("cloud-config is not a mapping")
        ignored = sorted(set(config) - {"write_files", "runcmd"})
        if ignored:
            self.record("cloud-config-keys-ignored", keys=ignored)
        for entry in config.get("write_files") or []:
            self.write_file(entry)
        runcmd = config.get("runcmd") or []
        if runcmd:
            lines = ["#!/bin/sh"]
            for cmd in runcmd:
                lines.append(shlex.join(str(c) for c in cmd) if isinstance(cmd, list) else str(cmd))
            self.shell("\n".join(lines) + "\n", "runcmd")

    def write_file(self, entry: dict[str, Any]) -> None:
        path = in_root(self.root, str(entry.get("path", "")))
        content: Any = entry.get("content", "")
        encoding = str(entry.get("encoding", "")).lower()
        data = content.encode() if isinstance(content, str) else bytes(content or b"")
        if encoding in ("b64", "base64"):
            data = base64.b64decode(data)
        elif encoding in ("gz", "gzip"):
            data = gzip.decompress(data)
        elif encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
            data = gzip.decompress(base64.b64decode(data))
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = "ab" if entry.get("append") else "wb"
        with open(path, mode) as out:
            out.write(data)
        permissions = entry.get("permissions")
        if permissions:
            path.chmod(int(str(permissions), 8))
