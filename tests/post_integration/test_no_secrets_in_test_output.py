"""Suite-wide guard: no integration test's playbook printed a private key or a kubeadm/EKS token.

``tests/conftest.py`` keeps every ansible-playbook run's stdout and stderr under ``.build/test-output/<worker>/``.
This file runs AFTER the integration suite, in its own pytest invocation (``make integration``), so the scan sees the
output of every xdist worker. Kubeconfig files are not scanned: tests never print them, and they exist to hold
credentials (written mode 0600). Run on its own with no integration run before it, it fails: nothing was kept.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEST_OUTPUT = REPO / ".build" / "test-output"
PRIVATE_KEY_MARKER = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----")
TOKEN_SHAPE = re.compile(rb"(?<![a-z0-9.])[a-z0-9]{6}\.[a-z0-9]{16}(?![a-z0-9])")
EKS_TOKEN = re.compile(rb"k8s-aws-v1\.[A-Za-z0-9_-]{20,}")  # a presigned GetCallerIdentity URL, base64url


def find(data: bytes) -> list[str]:
    found = [m.group(0).decode() for m in PRIVATE_KEY_MARKER.finditer(data)]
    found += [f"token-shaped {m.group(0)[:7].decode()}..." for m in TOKEN_SHAPE.finditer(data)]
    return found + [f"EKS token {m.group(0)[:14].decode()}..." for m in EKS_TOKEN.finditer(data)]


def test_the_guard_finds_what_it_looks_for():
    assert find(b'{"msg": "-----BEGIN RSA PRIVATE KEY-----"}')
    assert find(b"token: abcdef.0123456789abcdef\n")
    assert find(b'"token": "k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9u"')
    assert not find(b"-----BEGIN CERTIFICATE----- ami-0123456789abcdef0 sg-0123456789abcdef0 us-east-1.elb")


def test_no_private_key_or_token_in_any_playbook_output():
    files = sorted(p for p in TEST_OUTPUT.rglob("*") if p.is_file())
    assert files, f"no playbook output under {TEST_OUTPUT}: run the integration suite first (make integration)"
    size = 0
    matches = []
    for path in files:
        data = path.read_bytes()
        size += len(data)
        matches += [f"{path.relative_to(TEST_OUTPUT)}: {m}" for m in find(data)]
    print(f"playbook output scanned: {len(files)} files, {size} bytes; matches: {len(matches)}")
    assert matches == [], "\n".join(matches[:50])
