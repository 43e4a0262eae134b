"""containerd's ``ctr`` on a simulated node, for what an etcd restore runs with it (kubeadm's documented restore with
the etcd image's own ``etcdutl``): ``images ls -q`` (every etcd image kubeadm uses is there, as on a CAPA AMI whose
images are pulled when it is built), ``images pull`` and ``run --rm [--mount ...] <etcd image> <id> etcdutl snapshot
restore <file> --name N --initial-cluster N=<peer> --initial-advertise-peer-urls <peer> --data-dir <dir>``.

The restore itself is real: Debian's etcdctl 3.4 (``ETCDCTL_API=3 etcdctl snapshot restore``, the same flags)
checks the snapshot's sha256 and writes the data directory. The node's peer URL ``https://<private ip>:2380`` is
the one thing translated - into the loopback port the node's member will listen on (members talk plain HTTP on
127.0.0.1 here, see etcd.py) - and that member is the one ``kubeadm init`` starts on the restored directory.
Paths must lie inside the node's sandbox (the runcmd line was rewritten into it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from . import etcd
from .kubeadm import ETCD_IMAGES, _flag

if TYPE_CHECKING:
    from .cluster import Cluster, NodeRuntime
    from .sim import Simulator

ETCD_IMAGE_PREFIX = "registry.k8s.io/etcd:"


def run_ctr(sim: Simulator, cluster: Cluster, runtime: NodeRuntime, args: list[str]) -> tuple[int, str]:
    args = list(args)
    while args and args[0] in ("-n", "--namespace"):
        args = args[2:]
    if args[:2] == ["images", "ls"]:
        return 0, "".join(f"{ETCD_IMAGE_PREFIX}{tag}\n" for tag in sorted(set(ETCD_IMAGES.values())))
    if args[:2] == ["images", "pull"]:
        return 0, ""
    if args[:1] == ["run"]:
        return _run(sim, cluster, runtime, args[1:])
    return 1, f"kubesim: ctr {' '.join(args)} is not simulated\n"


def _run(sim: Simulator, cluster: Cluster, runtime: NodeRuntime, args: list[str]) -> tuple[int, str]:
    positional, index = [], 0
    while index < len(args):
        arg = args[index]
        if arg in ("--mount", "--env", "--label") and index + 1 < len(args):
            index += 2
            continue
        if arg.startswith("--") and not positional:
            index += 1
            continue
        positional = args[index:]
        break
    if len(positional) < 3 or not positional[0].startswith(ETCD_IMAGE_PREFIX):
        return 1, f"kubesim: ctr run of {positional[:1]} is not simulated (only the etcd image)\n"
    command = positional[2:]
    if command[:3] != ["etcdutl", "snapshot", "restore"] or len(command) < 4:
        return 1, f"kubesim: {' '.join(command[:3])} in the etcd image is not simulated\n"
    return _restore(sim, cluster, runtime, command[3], command[4:])


def _restore(
    sim: Simulator, cluster: Cluster, runtime: NodeRuntime, snapshot: str, flags: list[str]
) -> tuple[int, str]:
    root = str(runtime.root)
    data_dir = _flag(flags, "--data-dir") or ""
    name = _flag(flags, "--name") or ""
    for path in (snapshot, data_dir):
        if not path.startswith(root + "/"):
            return 1, f"kubesim: {path or '(no --data-dir)'} is outside the node's sandbox\n"
    node_peer = f"https://{runtime.private_ip}:2380"
    member = etcd.Member(name=name, data_dir=Path(data_dir))
    translated = [flag.replace(node_peer, member.peer_url) for flag in flags]
    binary = etcd.etcd_binary().parent / "etcdctl"
    env = {**os.environ, "ETCDCTL_API": "3"}
    result = etcd.run([str(binary), "snapshot", "restore", snapshot, *translated], timeout=120, env=env)
    output = (result.stdout + result.stderr).decode("utf-8", "replace")
    sim.journal.record(
        "node",
        "etcd-snapshot-restore",
        cluster=cluster.name,
        node=runtime.name,
        instance=runtime.instance_id,
        rc=result.returncode,
        peer_url=member.peer_url,
    )
    if result.returncode == 0:
        runtime.member = member
    return result.returncode, output
