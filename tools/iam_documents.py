"""Write every IAM document the collection generates to a JSON file (make iam-lint's first half).

Calls the public builders of plugins/module_utils (the IAM bootstrap's desired state for each combination of its
options, the trust policies of the roles it and capa_eks_cluster create) instead of copying documents, so what is
linted is what the modules send.  Runs in the main venv (the collection's imports); tools/iam_lint.py lints the file
in its own venv.

Usage: python tools/iam_documents.py OUTPUT.json
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / ".build" / "collections"))

from ansible_collections.clusterapi.aws.plugins.module_utils.iam import iam as bootstrap  # noqa: E402
from ansible_collections.clusterapi.aws.plugins.module_utils.iam import policies, roles  # noqa: E402

BACKENDS = ([policies.SECRETS_MANAGER], [policies.SSM_PARAMETER_STORE], list(policies.SECRET_BACKENDS))


def _add(found: dict[str, dict], name: str, document: dict) -> None:
    """Keep every distinct document: a second, different one of the same name gets a number."""
    n = 1
    key = name
    while key in found and found[key] != document:
        n += 1
        key = f"{name} #{n}"
    found[key] = document


def documents() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for backends, eks, nodegroup, fargate in itertools.product(BACKENDS, (True, False), (True, False), (True, False)):
        params = {
            "state": "present",
            "path": "/",
            "permissions_boundary": None,
            "prefix": "",
            "suffix": ".cluster-api-provider-aws.sigs.k8s.io",
            "eks": eks,
            "eks_nodegroup": nodegroup,
            "eks_fargate": fargate,
            "secret_backends": backends,
            "extra_statements": {},
        }
        desired = bootstrap.desired_state(bootstrap.BootstrapSpec.from_params(params), "us-east-1")
        for base, document in desired.policies.items():
            _add(found, f"policy {base} [{'+'.join(backends)}]", document)
        for role in desired.roles:
            _add(found, f"trust {role.base}", roles.trust_policy(role.trust))
    # capa_eks_cluster's own service role (<cluster>-iam-service-role) when the spec names none.
    _add(found, "trust eks-cluster-service-role", roles.trust_policy("eks.amazonaws.com"))
    return found


def main() -> None:
    out = Path(sys.argv[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    docs = documents()
    out.write_text(json.dumps(docs, indent=1, sort_keys=True))
    print(f"iam-documents: {len(docs)} documents -> {out}")


if __name__ == "__main__":
    main()
