"""Object semantics of kube-apiserver: selectors, the three PATCH formats and server-side apply field ownership.

Strategic merge patch and server-side apply need to know which lists merge by a key. kube-apiserver reads that
from the Go types (``patchMergeKey``/``listType=map``); this table holds the fields of the built-in types that
matter here. Every other list is atomic (replaced as a whole) - which is right for ``spec.taints`` and
``spec.tolerations`` (atomic in the Go types too).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

# field name -> merge key (patchMergeKey / listMapKeys) of the built-in types.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "ports": "port",  # containerPort for container ports: see merge_key()
}
# Lists of scalars with patchStrategy=merge (a patch adds to them instead of replacing them).
PRIMITIVE_MERGE = {"finalizers"}


class PatchError(ValueError):
    """A malformed patch or selector (kube-apiserver answers 400/422)."""


def merge_key(field: str, items: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if field == "ports" and any(isinstance(i, dict) and "containerPort" in i for i in items):
        return "containerPort"
    return key


# --------------------------------------------------------------------------------------------------------------
# selectors
# --------------------------------------------------------------------------------------------------------------
def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


_SET_RE = re.compile(r"^([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)$")


def parse_label_selector(text: str | None) -> list[tuple[str, str, list[str]]]:
    """``app=x,tier!=y,env in (a,b),k notin (c),k,!k`` -> [(key, op, values)] with op in =, !=, in, notin,
    exists, !exists."""
    requirements: list[tuple[str, str, list[str]]] = []
    for part in _split_top(text or ""):
        match = _SET_RE.match(part)
        if match:
            values = [v.strip() for v in match.group(3).split(",") if v.strip()]
            requirements.append((match.group(1), match.group(2), values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            requirements.append((key.strip(), "!=", [value.strip()]))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            requirements.append((key.strip(), "=", [value.strip()]))
        elif part.startswith("!"):
            requirements.append((part[1:].strip(), "!exists", []))
        elif re.match(r"^[A-Za-z0-9./_-]+$", part):
            requirements.append((part, "exists", []))
        else:
            raise PatchError(f"unable to parse requirement: {part!r}")
    return requirements


def selector_from_dict(selector: dict[str, Any] | None) -> list[tuple[str, str, list[str]]] | None:
    """A metav1.LabelSelector; ``None`` for a missing selector (selects nothing), [] for ``{}`` (everything)."""
    if selector is None:
        return None
    out = [(k, "=", [str(v)]) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        out.append((expr["key"], ops.get(expr.get("operator", ""), "in"), [str(v) for v in expr.get("values") or []]))
    return out


def labels_match(requirements: list[tuple[str, str, list[str]]] | None, labels: dict[str, str] | None) -> bool:
    if requirements is None:
        return False
    labels = labels or {}
    for key, op, values in requirements:
        present = key in labels
        value = labels.get(key)
        if op == "=" and value != values[0]:
            return False
        if op == "!=" and present and value == values[0]:
            return False
        if op == "in" and (not present or value not in values):
            return False
        if op == "notin" and present and value in values:
            return False
        if op == "exists" and not present:
            return False
        if op == "!exists" and present:
            return False
    return True


# Field selectors kube-apiserver supports per resource (others answer 400 "field label not supported").
FIELD_LABELS: dict[str, set[str]] = {
    "pods": {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    },
    "nodes": {"spec.unschedulable"},
    "events": {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    },
    "secrets": {"type"},
    "namespaces": {"status.phase"},
    "replicasets": {"status.replicas"},
    "jobs": {"status.successful"},
    "certificatesigningrequests": {"spec.signerName"},
}


def parse_field_selector(text: str | None, plural: str) -> list[tuple[str, str, str]]:
    out = []
    allowed = {"metadata.name", "metadata.namespace"} | FIELD_LABELS.get(plural, set())
    for part in _split_top(text or ""):
        if "!=" in part:
            key, value = part.split("!=", 1)
            op = "!="
        elif "==" in part:
            key, value = part.split("==", 1)
            op = "="
        elif "=" in part:
            key, value = part.split("=", 1)
            op = "="
        else:
            raise PatchError(f"invalid selector: '{part}'; can't understand '{part}'")
        key = key.strip()
        if key not in allowed:
            raise PatchError(f"field label not supported: {key}")
        out.append((key, op, value.strip()))
    return out


def field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        # Go's zero values, as the field selector indexers see them.
        return "false" if path in ("spec.unschedulable", "spec.hostNetwork") else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fields_match(requirements: list[tuple[str, str, str]], obj: dict[str, Any]) -> bool:
    for key, op, value in requirements:
        actual = field_value(obj, key)
        if (op == "=") != (actual == value):
            return False
    return True


# --------------------------------------------------------------------------------------------------------------
# patches
# --------------------------------------------------------------------------------------------------------------
def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    """Kubernetes strategic merge patch (maps merge, keyed lists merge by key, directives ``$patch``,
    ``$retainKeys``, ``$deleteFromPrimitiveList/<f>``, ``$setElementOrder/<f>``)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
            continue
        if isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, key)
            continue
        merged = strategic_merge_patch(result.get(key), value, key)
        if merged is None:
            result.pop(key, None)
        else:
            result[key] = merged
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(current: Any, patch: list[Any], field: str) -> list[Any]:
    if patch and isinstance(patch[0], dict) and patch[0].get("$patch") == "replace":
        return copy.deepcopy(patch[1:])
    current = list(current or []) if isinstance(current, list) else []
    if field in PRIMITIVE_MERGE:
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    key = merge_key(field, patch + current)
    if not key or not all(isinstance(i, dict) for i in patch):
        return copy.deepcopy(patch)
    out = copy.deepcopy(current)
    for item in patch:
        match = next((i for i, c in enumerate(out) if isinstance(c, dict) and c.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if match is not None:
                out.pop(match)
            continue
        if match is None:
            out.append({k: v for k, v in copy.deepcopy(item).items() if k != "$patch"})
        else:
            out[match] = strategic_merge_patch(out[match], item, field)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, parts[-1]


def json_patch(doc: Any, operations: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch."""
    doc = copy.deepcopy(doc)
    try:
        for op in operations:
            kind, parts = op.get("op"), _pointer(op.get("path", ""))
            if kind == "test":
                node: Any = doc
                for part in parts:
                    node = node[int(part)] if isinstance(node, list) else node[part]
                if node != op.get("value"):
                    raise PatchError(f"testing value {op.get('path')} failed")
                continue
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                node = doc
                for part in src:
                    node = node[int(part)] if isinstance(node, list) else node[part]
                value = copy.deepcopy(node)
                if kind == "move":
                    parent, last = _parent(doc, src)
                    if isinstance(parent, list):
                        parent.pop(int(last))
                    else:
                        del parent[last]
                op = {"op": "add", "path": op["path"], "value": value}
                kind = "add"
            if not parts:
                if kind in ("add", "replace"):
                    doc = copy.deepcopy(op.get("value"))
                continue
            parent, last = _parent(doc, parts)
            if kind == "add":
                if isinstance(parent, list):
                    parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op.get("value")))
                else:
                    parent[last] = copy.deepcopy(op.get("value"))
            elif kind == "remove":
                if isinstance(parent, list):
                    parent.pop(int(last))
                else:
                    del parent[last]
            elif kind == "replace":
                if isinstance(parent, list):
                    parent[int(last)] = copy.deepcopy(op.get("value"))
                else:
                    if last not in parent:
                        raise PatchError(f"replace operation does not apply: doc is missing key: {op.get('path')}")
                    parent[last] = copy.deepcopy(op.get("value"))
            else:
                raise PatchError(f"unexpected kind: {kind}")
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, PatchError):
            raise
        raise PatchError(f"the server rejected our request due to an error in our request: {exc}") from None
    return doc


# --------------------------------------------------------------------------------------------------------------
# server-side apply: field sets
# --------------------------------------------------------------------------------------------------------------
# Set by the server, never owned by a manager.
UNOWNED_METADATA = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
}
Path = tuple[str, ...]


def _key_element(item: dict[str, Any], key: str) -> str:
    return "k:" + json.dumps({key: item.get(key)}, separators=(",", ":"))


def field_paths(obj: Any, prefix: Path = (), field: str = "") -> set[Path]:
    """Leaf paths of an object in fieldsV1 notation (``f:<name>``, ``k:{"name":"x"}`` for keyed list items)."""
    paths: set[Path] = set()
    if isinstance(obj, dict):
        if not obj and prefix:
            return {prefix}
        for key, value in obj.items():
            if not prefix and key in ("apiVersion", "kind"):
                continue
            if prefix == ("f:metadata",) and key in UNOWNED_METADATA:
                continue
            paths |= field_paths(value, prefix + (f"f:{key}",), key)
        return paths
    if isinstance(obj, list):
        key = merge_key(field, obj)
        if key and obj and all(isinstance(i, dict) and key in i for i in obj):
            for item in obj:
                element = prefix + (_key_element(item, key),)
                sub = field_paths(dict(item), element, "")
                paths |= sub or {element}
            return paths
        return {prefix}
    return {prefix}


def get_path(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for element in path:
        if element.startswith("f:"):
            if not isinstance(node, dict) or element[2:] not in node:
                return False, None
            node = node[element[2:]]
        elif element.startswith("k:"):
            ((key, value),) = json.loads(element[2:]).items()
            if not isinstance(node, list):
                return False, None
            found = [i for i in node if isinstance(i, dict) and i.get(key) == value]
            if not found:
                return False, None
            node = found[0]
    return True, node


def remove_path(obj: Any, path: Path) -> None:
    """Remove one owned leaf, and the maps the removal leaves empty (apply leaves no empty parents behind)."""
    if not path:
        return
    present, parent = get_path(obj, path[:-1])
    if not present:
        return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        ((key, value),) = json.loads(last[2:]).items()
        parent[:] = [i for i in parent if not (isinstance(i, dict) and i.get(key) == value)]
    if isinstance(parent, dict) and not parent and len(path) > 1 and path[-2].startswith("f:"):
        remove_path(obj, path[:-1])


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for element in path:
            node = node.setdefault(element, {})
        if path and path[-1].startswith("k:"):
            node.setdefault(".", {})
    return root


def from_fields_v1(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    paths: set[Path] = set()
    children = {k: v for k, v in (tree or {}).items() if k != "."}
    if not children:
        return {prefix} if prefix else set()
    for element, sub in children.items():
        paths |= from_fields_v1(sub, prefix + (element,))
    return paths


def changed_paths(old: Any, new: Any) -> tuple[set[Path], set[Path]]:
    """(paths set or changed by a write, paths it removed)."""
    old_paths, new_paths = field_paths(old or {}), field_paths(new or {})
    changed = {p for p in new_paths if get_path(old or {}, p) != get_path(new, p)}
    return changed, old_paths - new_paths


def apply_merge(current: Any, applied: Any, field: str = "") -> Any:
    """Merge an applied configuration into the live object (maps and keyed lists merge, other lists replace)."""
    if isinstance(applied, dict) and isinstance(current, dict):
        out = copy.deepcopy(current)
        for key, value in applied.items():
            out[key] = apply_merge(current.get(key), value, key)
        return out
    if isinstance(applied, list) and isinstance(current, list):
        key = merge_key(field, applied + current)
        if key and all(isinstance(i, dict) and key in i for i in applied + current):
            out = []
            for item in applied:
                match = next((c for c in current if c.get(key) == item.get(key)), None)
                out.append(apply_merge(match, item, "") if match is not None else copy.deepcopy(item))
            out += [copy.deepcopy(c) for c in current if all(c.get(key) != a.get(key) for a in applied)]
            return out
    return copy.deepcopy(applied)


def render_path(path: Path) -> str:
    """``.spec.replicas`` / ``.spec.containers[name="a"].image`` as kube prints conflicts."""
    out = ""
    for element in path:
        if element.startswith("f:"):
            out += "." + element[2:]
        else:
            ((key, value),) = json.loads(element[2:]).items()
            out += f"[{key}={json.dumps(value)}]"
    return out
