"""Secrets never exposed: a whole self-managed cluster's life, then every output it produced is searched for them.

The cluster is the demo's HA shape (3 control-plane machines, a bastion) with a machine pool for its workers, whose
bootstrap data goes to SSM (the control-plane machines use Secrets Manager), so both backends are covered; no NAT
gateway, to stay fast. It is built
with ``site.yml -vvv --diff``, reconciled once in check mode, then deleted with ``delete.yml``, every run with
``ANSIBLE_LOG_PATH`` set.

Before the delete, every secret value the run generated is read back through boto3: the cluster PKI secret (CA,
etcd CA and front-proxy CA keys and certificates, the service-account key pair, the bootstrap token) and every
bootstrap-data entry in Secrets Manager and SSM (gunzipped: the cloud-init documents, whose private keys and tokens
are added), plus the admin client key of the kubeconfig. Each is searched in the forms an output could carry it:
as is, the PEM's base64 body lines, the base64 of the PEM at each of the 3 alignments, the stored gzip chunk's
base64, the token and its secret half. Also searched: any ``-----BEGIN ... PRIVATE KEY-----`` marker and anything
shaped like a kubeadm token (``[a-z0-9]{6}.[a-z0-9]{16}``).

Searched: the Ansible log, stdout/stderr of every run, every task result of the json callback, every file the
runs wrote under the output directory (``status.json``), the user data of every instance (DescribeInstanceAttribute)
and of every launch template version. Excluded, on purpose: the kubeconfig files (``kubeconfig``), which exist to
hold credentials and are written mode 0600.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DELETE = REPO / "playbooks/delete.yml"
CLUSTER = "sec-it"
PKI_SECRET = f"clusterapi.aws/{CLUSTER}/pki"
BOOTSTRAP_PREFIX = "aws.cluster.x-k8s.io/"  # Secrets Manager entries
SSM_PREFIX = "/cluster.x-k8s.io/"  # SSM parameters (CAPA drops the "aws." there)
PEM = re.compile(r"-----BEGIN ([A-Z ]+)-----\s*(.+?)\s*-----END \1-----", re.S)
PRIVATE_KEY_MARKER = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----")
TOKEN_SHAPE = re.compile(rb"(?<![a-z0-9.])[a-z0-9]{6}\.[a-z0-9]{16}(?![a-z0-9])")
MIN_NEEDLE = 16


def pem_forms(text: str) -> set[str]:
    """How a PEM could show up: as is, its base64 body's lines, the base64 of the PEM at each alignment."""
    forms = set()
    for match in PEM.finditer(text):
        block = match.group(0)
        forms.add(block)
        lines = [line for line in match.group(2).split() if len(line) >= MIN_NEEDLE]
        # The first line of a key is mostly ASN.1 framing every key of that kind shares: use the others.
        forms.update(lines[1:] or lines)
        for offset in range(3):
            encoded = base64.b64encode(block[offset:].encode()).decode()
            forms.add(encoded[8:72])
    return forms


def secret_needles(aws: Any, kubeconfig: Path) -> tuple[set[str], dict[str, int], list[str]]:
    """Every secret the cluster holds, in every searched form; counts of what was read; the decoded documents."""
    needles: set[str] = set()
    sm = aws.client("secretsmanager")
    pki = json.loads(sm.get_secret_value(SecretId=PKI_SECRET)["SecretString"])
    assert not [k for k in pki if "token" in k], "the PKI secret keeps no bootstrap token"
    texts = [v for v in pki.values() if isinstance(v, str) and "-----BEGIN" in v]
    # Bootstrap data: one gzip document per machine, in chunks named <prefix>-<i> (Secrets Manager) or
    # <prefix>/<i> (SSM, base64 text).
    chunks: dict[str, dict[int, bytes]] = {}
    for secret in sm.list_secrets()["SecretList"]:
        if secret["Name"].startswith(BOOTSTRAP_PREFIX):
            prefix, index = secret["Name"].rsplit("-", 1)
            chunks.setdefault(prefix, {})[int(index)] = sm.get_secret_value(SecretId=secret["Name"])["SecretBinary"]
    ssm = aws.client("ssm")
    for page in ssm.get_paginator("describe_parameters").paginate():
        for parameter in page["Parameters"]:
            if parameter["Name"].startswith(SSM_PREFIX):
                value = ssm.get_parameter(Name=parameter["Name"], WithDecryption=True)["Parameter"]["Value"]
                needles.add(value[8:72])  # the stored base64 text itself
                prefix, index = parameter["Name"].rsplit("/", 1)
                chunks.setdefault(prefix, {})[int(index)] = base64.b64decode(value)
    documents = []
    for parts in chunks.values():
        for part in parts.values():
            needles.add(base64.b64encode(part).decode()[8:72])
        documents.append(gzip.decompress(b"".join(parts[i] for i in sorted(parts))).decode())
    config = yaml.safe_load(kubeconfig.read_text())
    for user in config["users"]:
        documents.append(base64.b64decode(user["user"]["client-key-data"]).decode())
    for text in texts + documents:
        needles |= pem_forms(text)
    # Join tokens live in the bootstrap documents (each machine's own, a pool's) and in the cluster, never elsewhere.
    tokens = {t.decode() for d in documents for t in TOKEN_SHAPE.findall(d.encode())}
    for value in tokens:
        needles |= {value, value.split(".")[1]}
    counts = {
        "pki_values": len(texts),
        "bootstrap_documents": len(chunks),
        "pem_blocks": sum(len(PEM.findall(t)) for t in texts + documents),
        "tokens": len(tokens),
    }
    return {n for n in needles if len(n) >= MIN_NEEDLE}, counts, documents


def user_data_outputs(aws: Any) -> dict[str, bytes]:
    """The user data of every instance and of every launch template version, decoded."""
    ec2 = aws.client("ec2")
    found: dict[str, bytes] = {}
    for reservation in ec2.describe_instances()["Reservations"]:
        for instance in reservation["Instances"]:
            answer = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
            found[f"user data of {instance['InstanceId']}"] = base64.b64decode(answer["UserData"].get("Value", ""))
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        versions = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])
        for version in versions["LaunchTemplateVersions"]:
            data = version["LaunchTemplateData"].get("UserData", "")
            key = f"user data of {template['LaunchTemplateName']} v{version['VersionNumber']}"
            found[key] = base64.b64decode(data)
    return found


def scan(outputs: dict[str, bytes], needles: set[str]) -> list[str]:
    encoded = [(n, n.encode()) for n in needles]
    matches = []
    for name, data in outputs.items():
        matches += [f"{name}: a secret ({n[:12]}...)" for n, raw in encoded if raw in data]
        matches += [f"{name}: private key marker" for marker in PRIVATE_KEY_MARKER.finditer(data) if marker]
        matches += [f"{name}: token-shaped {t[:7]!r}..." for t in TOKEN_SHAPE.findall(data)]
    return matches


def test_no_secret_in_any_output(aws, run_playbook, tmp_path):
    spec = {
        "name": CLUSTER,
        "region": "us-east-1",
        "kubernetes_version": "v1.31.2",
        "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "none"},
        "bastion": {"enabled": True},
        "control_plane": {"replicas": 3},
        "machine_pools": [
            {"name": "sec-it-pool", "min_size": 1, "max_size": 2, "bootstrap_backend": "ssm-parameter-store"}
        ],
    }
    out = tmp_path / "out"
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "capa_clusters": {
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": sys.executable,
                        "capa_output_dir": str(out),
                    },
                    "hosts": {CLUSTER: {"capa_cluster": spec}},
                }
            }
        )
    )
    log = tmp_path / "ansible.log"
    env = {"ANSIBLE_LOG_PATH": str(log)}
    outputs: dict[str, bytes] = {}
    started = time.monotonic()

    def run(name: str, playbook: Path, **kwargs: Any) -> None:
        result = run_playbook(playbook, inventory=inventory, env=env, args=["-vvv"], **kwargs)
        outputs[f"{name} stdout"] = result.stdout.encode()
        outputs[f"{name} stderr"] = result.stderr.encode()
        assert result.tasks, f"{name}: no task results parsed\n{result.describe()}"
        for index, task in enumerate(result.tasks):
            outputs[f"{name} task {index} {task.name} ({task.host})"] = json.dumps(task.result).encode()

    run("site", SITE, diff=True)
    run("site --check", SITE, diff=True, check=True)
    needles, counts, documents = secret_needles(aws, out / CLUSTER / "kubeconfig")
    outputs.update(user_data_outputs(aws))
    # What the runs wrote, read before the deletion removes it (status.json goes with the cluster).
    files = [p for p in out.rglob("*") if p.is_file() and "kubeconfig" not in p.name]
    assert any(p.name == "status.json" for p in files), files
    for path in files:
        outputs[str(path.relative_to(tmp_path))] = path.read_bytes()
    run("delete", DELETE)
    assert not any(p.name == "status.json" for p in out.rglob("*")), "delete.yml left a status.json"
    outputs[str(log.relative_to(tmp_path))] = log.read_bytes()
    # The search must be able to fail: the secrets are there to be found where they belong.
    assert counts["pki_values"] >= 8 and counts["bootstrap_documents"] >= 4 and counts["pem_blocks"] >= 9, counts
    # Joins need a token (here kubeadm init's: this build has no Kubernetes API), and no token lives for ever.
    assert counts["tokens"] >= 1 and not [d for d in documents if "ttl: 0s" in d], counts
    control_plane_document = next(d for d in documents if "PRIVATE KEY" in d)
    assert scan({"control": control_plane_document.encode()}, needles)
    assert scan({"control": base64.b64encode(control_plane_document.encode())}, needles)
    user_data = [k for k in outputs if k.startswith("user data")]
    assert len(user_data) >= 6, user_data  # 3 control plane + bastion + the pool's machine + its template version

    matches = scan(outputs, needles)
    size = sum(len(v) for v in outputs.values())
    print(
        f"secrets scan: {len(needles)} needles from {counts}; {len(outputs)} outputs "
        f"({len(files) + 1} files, {len(user_data)} user data), {size} bytes; matches: {len(matches)}; "
        f"{time.monotonic() - started:.0f} s"
    )
    assert matches == [], "\n".join(matches[:50])
