"""The termination watcher's cloud-config entries and the merge into rendered documents (pure)."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.machines import termination as t
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.termination_assets import (
    UNIT_NAME,
    UNIT_PATH,
    UNIT_TEMPLATE,
    WATCHER_PATH,
    WATCHER_SCRIPT,
)


def parse(document: bytes) -> dict:
    return yaml.safe_load(t.split_header(document)[1])


def test_lifecycle_hook_name():
    assert t.lifecycle_hook_name("pool-0") == "pool-0-drain"


@pytest.mark.parametrize("text", [WATCHER_SCRIPT, UNIT_TEMPLATE])
@pytest.mark.parametrize("delimiter", ["{{", "}}", "{%", "%}", "{#", "#}"])
def test_assets_hold_no_jinja_delimiters(text, delimiter):
    """The documents they land in are rendered by cloud-init's jinja first."""
    assert delimiter not in text


def test_watcher_entries():
    config = t.watcher_cloud_config(lifecycle_hook="pool-0-drain", poll_seconds=2)
    files = {f["path"]: f for f in config["write_files"]}
    assert files[WATCHER_PATH]["content"] == WATCHER_SCRIPT and files[WATCHER_PATH]["permissions"] == "0755"
    unit = files[UNIT_PATH]["content"]
    assert "Environment=CAPA_WATCHER_LIFECYCLE_HOOK=pool-0-drain\n" in unit
    assert "Environment=CAPA_WATCHER_POLL_SECONDS=2\n" in unit
    assert f"ExecStart=/usr/bin/python3 {WATCHER_PATH}\n" in unit
    assert config["runcmd"] == ["systemctl daemon-reload", f"systemctl enable --now {UNIT_NAME}"]


def test_watcher_without_hook_watches_spot_only():
    unit = t.watcher_cloud_config()["write_files"][1]["content"]
    assert "Environment=CAPA_WATCHER_LIFECYCLE_HOOK=\n" in unit


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"lifecycle_hook": "bad name"}, "not valid"),
        ({"lifecycle_hook": "x" * 256}, "not valid"),
        ({"lifecycle_hook": ""}, "not valid"),
        ({"poll_seconds": 0}, "at least 1"),
    ],
)
def test_watcher_entries_reject_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        t.watcher_cloud_config(**kwargs)


JINJA_DOC = b"## template: jinja\n#cloud-config\nwrite_files:\n- path: /a\n  content: x\nruncmd:\n- kubeadm join\n"


@pytest.mark.parametrize(
    "document, header",
    [
        (JINJA_DOC, b"## template: jinja\n#cloud-config\n"),
        (b"#cloud-config\nruncmd: [echo hi]\n", b"#cloud-config\n"),
        (b"#cloud-config\n", b"#cloud-config\n"),
    ],
)
def test_merge_keeps_the_header_first(document, header):
    merged = t.merge_cloud_config(document, t.watcher_cloud_config())
    assert merged.startswith(header)
    assert merged.count(b"#cloud-config") == 1


def test_merge_appends_after_existing_entries():
    merged = parse(t.merge_cloud_config(JINJA_DOC, t.watcher_cloud_config()))
    assert [f["path"] for f in merged["write_files"]] == ["/a", WATCHER_PATH, UNIT_PATH]
    assert merged["runcmd"] == ["kubeadm join", "systemctl daemon-reload", f"systemctl enable --now {UNIT_NAME}"]


def test_merge_is_deterministic_and_idempotent():
    extra = t.watcher_cloud_config(lifecycle_hook="p-drain")
    once = t.merge_cloud_config(JINJA_DOC, extra)
    assert once == t.merge_cloud_config(JINJA_DOC, extra)
    assert t.merge_cloud_config(once, extra) == once


def test_merge_replaces_a_file_with_the_same_path():
    first = t.merge_cloud_config(JINJA_DOC, t.watcher_cloud_config(lifecycle_hook="old-drain"))
    second = parse(t.merge_cloud_config(first, t.watcher_cloud_config(lifecycle_hook="new-drain")))
    units = [f["content"] for f in second["write_files"] if f["path"] == UNIT_PATH]
    assert len(units) == 1 and "HOOK=new-drain" in units[0]


def test_merge_other_keys():
    merged = parse(
        t.merge_cloud_config(
            b"#cloud-config\nbootcmd: [a]\nntp: {enabled: true}\n",
            {"bootcmd": ["a", "b"], "ntp": {"servers": ["x"]}, "timezone": "UTC"},
        )
    )
    assert merged == {"bootcmd": ["a", "b"], "ntp": {"enabled": True, "servers": ["x"]}, "timezone": "UTC"}


def test_merged_scripts_are_readable_blocks():
    merged = t.merge_cloud_config(b"#cloud-config\n", t.watcher_cloud_config()).decode()
    assert "content: |\n    #!/usr/bin/env python3\n" in merged


@pytest.mark.parametrize(
    "document",
    [b"#!/bin/bash\necho hi\n", b"Content-Type: multipart/mixed\n", b"planned", b'{"ignition": {}}', b"\xff\xfe"],
)
def test_other_documents(document):
    assert t.is_cloud_config(document) is False
    assert t.with_watcher(document) == document
    with pytest.raises((ValueError, UnicodeDecodeError)):
        t.merge_cloud_config(document, {})


def test_not_a_mapping():
    with pytest.raises(ValueError, match="mapping"):
        t.merge_cloud_config(b"#cloud-config\n- a\n", {})


def test_with_watcher_merges_cloud_config():
    merged = t.with_watcher(JINJA_DOC, lifecycle_hook="p-drain")
    assert b"CAPA_WATCHER_LIFECYCLE_HOOK=p-drain" in merged
