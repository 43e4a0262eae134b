# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: graceful termination - the node-side watcher that drains a node before EC2 takes it away.

CAPA has no interruption handling (issue #1899). Here every spot machine and every pool node gets, through its
cloud-config, a small systemd service (:mod:`._termination_assets`) that polls IMDSv2 for a spot interruption
notice and, in an auto scaling group with a termination lifecycle hook, for the ``Terminated`` target lifecycle
state; it then cordons and drains the node with the kubelet's credentials and, for scale-in, completes the
lifecycle action. The interface is three pure functions, used by the machine, ASG and fleet tiers:

* :func:`watcher_cloud_config` - the ``write_files``/``runcmd`` entries that install and start the watcher;
* :func:`merge_cloud_config` - those entries merged into a rendered ``#cloud-config`` document;
* :func:`lifecycle_hook_name` - the name of a pool's ``autoscaling:EC2_INSTANCE_TERMINATING`` hook.

What the node needs: the AWS CLI and ``autoscaling:DescribeAutoScalingInstances`` plus
``autoscaling:CompleteLifecycleAction`` for scale-in (spot needs nothing), and RBAC that lets the node's
credentials evict its own pods.
"""

from __future__ import annotations

import copy
import re
from typing import Any

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; the sanity import test runs without it
    yaml = None  # type: ignore[assignment]

from .termination_assets import UNIT_NAME, UNIT_PATH, UNIT_TEMPLATE, WATCHER_PATH, WATCHER_SCRIPT

JINJA_HEADER = "## template: jinja"
CLOUD_CONFIG_HEADER = "#cloud-config"
LIFECYCLE_TRANSITION = "autoscaling:EC2_INSTANCE_TERMINATING"
# Auto Scaling's pattern for lifecycle hook names; it also keeps the systemd Environment= line unquoted.
DEFAULT_KUBECONFIG = "/etc/kubernetes/kubelet.conf"  # kubeadm's kubelet credentials
HOOK_NAME = re.compile(r"^[A-Za-z0-9_/-]{1,255}$")
# Lists whose entries are identified by a key: a second merge replaces an entry instead of adding a copy.
KEYED_LISTS = {"write_files": "path"}


def lifecycle_hook_name(pool: str) -> str:
    """The termination lifecycle hook of a pool (the ASG and its nodes' watcher must agree on it)."""
    return f"{pool}-drain"


def watcher_cloud_config(
    *, lifecycle_hook: str | None = None, poll_seconds: int = 5, kubeconfig: str = DEFAULT_KUBECONFIG
) -> dict[str, Any]:
    """cloud-config entries that install the watcher and start it (``systemctl enable --now``).

    With ``lifecycle_hook`` the watcher also reacts to auto scaling scale-in and completes that hook;
    ``kubeconfig`` is where the node's kubelet keeps its credentials (kubeadm and EKS nodes differ).
    """
    if lifecycle_hook is not None and not HOOK_NAME.match(lifecycle_hook):
        raise ValueError(f"lifecycle hook name '{lifecycle_hook}' is not valid for Auto Scaling")
    if poll_seconds < 1:
        raise ValueError("poll_seconds must be at least 1")
    unit = UNIT_TEMPLATE % {
        "poll_seconds": poll_seconds,
        "lifecycle_hook": lifecycle_hook or "",
        "kubeconfig": kubeconfig,
        "watcher_path": WATCHER_PATH,
    }
    return {
        "write_files": [
            {"path": WATCHER_PATH, "owner": "root:root", "permissions": "0755", "content": WATCHER_SCRIPT},
            {"path": UNIT_PATH, "owner": "root:root", "permissions": "0644", "content": unit},
        ],
        "runcmd": ["systemctl daemon-reload", f"systemctl enable --now {UNIT_NAME}"],
    }


def split_header(document: bytes) -> tuple[str, str]:
    """``(jinja header line or "", the rest)``; raises ValueError when the rest is not a ``#cloud-config``."""
    text = document.decode("utf-8")
    header = ""
    if text.startswith(JINJA_HEADER):
        header, _sep, text = text.partition("\n")
    if not text.startswith(CLOUD_CONFIG_HEADER):
        raise ValueError("not a #cloud-config document")
    return header, text


def is_cloud_config(document: bytes) -> bool:
    try:
        split_header(document)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _merge(config: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(config)
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, list) and isinstance(value, list):
            id_key = KEYED_LISTS.get(key)
            if id_key:
                replaced = {entry.get(id_key) for entry in value if isinstance(entry, dict)}
                current = [e for e in current if not (isinstance(e, dict) and e.get(id_key) in replaced)]
                merged[key] = current + copy.deepcopy(value)
            else:
                merged[key] = current + [copy.deepcopy(v) for v in value if v not in current]
        elif isinstance(current, dict) and isinstance(value, dict):
            merged[key] = {**current, **copy.deepcopy(value)}
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _str_representer(dumper: Any, value: str) -> Any:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


def _dump_blocks(data: Any) -> str:
    """YAML with scripts and units as ``|`` blocks, so the node's user data stays readable."""

    class BlockDumper(yaml.SafeDumper):
        pass

    BlockDumper.add_representer(str, _str_representer)
    return yaml.dump(data, Dumper=BlockDumper, sort_keys=False, default_flow_style=False, width=1 << 16)


def merge_cloud_config(document: bytes, extra: dict[str, Any]) -> bytes:
    """``extra`` merged into a rendered ``#cloud-config``; the ``## template: jinja`` header stays first.

    Lists are appended to (``write_files`` entries with the same path replaced, other entries not repeated), so
    merging the same entries twice gives the same document; the output depends only on the inputs.
    """
    header, text = split_header(document)
    config = yaml.safe_load(text) or {}
    if not isinstance(config, dict):
        raise ValueError("the #cloud-config document is not a mapping")
    body = _dump_blocks(_merge(config, extra))
    prefix = f"{header}\n" if header else ""
    return f"{prefix}{CLOUD_CONFIG_HEADER}\n{body}".encode()


def with_watcher(document: bytes, *, lifecycle_hook: str | None = None, kubeconfig: str = DEFAULT_KUBECONFIG) -> bytes:
    """The document with the watcher merged in; documents that are not a ``#cloud-config`` (a shell script, MIME,
    Ignition, check mode's stand-in) are returned as they are."""
    if not is_cloud_config(document):
        return document
    return merge_cloud_config(document, watcher_cloud_config(lifecycle_hook=lifecycle_hook, kubeconfig=kubeconfig))
