"""What each module ships: the collection's own module_utils files AnsiballZ bundles with it, from the imports.

AnsiballZ follows a module's imports of ``ansible_collections.clusterapi.aws.plugins.module_utils`` (absolute or
relative, at any depth, including imports inside ``try``) and bundles every file they reach plus the ``__init__.py``
of each package on the way. This script does the same walk over the source (``ast``), so it measures what a module
run loads from the collection without running Ansible::

    python tools/bundle_sizes.py            # a Markdown table: module, files, lines, concerns
    python tools/bundle_sizes.py --json     # the same as JSON (used by the import-rule unit test)
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"
UTILS = PLUGINS / "module_utils"
PREFIX = "ansible_collections.clusterapi.aws.plugins.module_utils"


def _module_path(dotted: str) -> Path | None:
    """The file of ``plugins.module_utils.<dotted>`` (a module, or a package's ``__init__.py``)."""
    base = UTILS.joinpath(*dotted.split(".")) if dotted else UTILS
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _dotted_of(path: Path) -> str:
    relative = path.relative_to(UTILS).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Dotted names (relative to module_utils) that ``path`` imports from the collection's module_utils."""
    tree = ast.parse(path.read_text(), str(path))
    package = _dotted_of(path).split(".") if path.is_relative_to(UTILS) else []
    if path.is_relative_to(UTILS) and path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and (node.module == PREFIX or node.module.startswith(PREFIX + ".")):
                target = node.module[len(PREFIX) + 1 :]
            else:
                continue
            found.add(target)
            for alias in node.names:  # ``from . import _ami`` / ``from .machines import spec``
                candidate = f"{target}.{alias.name}" if target else alias.name
                if _module_path(candidate) is not None and _module_path(candidate).name != "__init__.py":
                    found.add(candidate)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PREFIX + "."):
                    found.add(alias.name[len(PREFIX) + 1 :])
    return found


def bundle(path: Path) -> set[Path]:
    """Every module_utils file ``path`` brings along (itself excluded unless it is a module_utils file)."""
    seen: set[Path] = set()
    todo = [path]
    while todo:
        current = todo.pop()
        for dotted in imports_of(current):
            parts = dotted.split(".") if dotted else []
            # Each package on the way contributes its __init__.py, as AnsiballZ adds them.
            for depth in range(1, len(parts) + 1):
                init = _module_path(".".join(parts[:depth]))
                if init is not None and init not in seen:
                    seen.add(init)
                    todo.append(init)
    return seen


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def concern_of(path: Path) -> str:
    relative = path.relative_to(UTILS)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def measure() -> dict[str, dict[str, object]]:
    table: dict[str, dict[str, object]] = {}
    for module in sorted((PLUGINS / "modules").glob("capa_*.py")):
        files = bundle(module)
        table[module.stem] = {
            # Empty package __init__.py files are bundled too, but carry no code: counted apart.
            "files": sum(1 for f in files if lines(f)),
            "empty_inits": sum(1 for f in files if not lines(f)),
            "lines": sum(lines(f) for f in files),
            "concerns": sorted({concern_of(f) for f in files}),
        }
    return table


def main(argv: list[str]) -> int:
    table = measure()
    if "--json" in argv:
        print(json.dumps(table, indent=1, sort_keys=True))
        return 0
    print("| module | files | lines | what it bundles |")
    print("|---|---:|---:|---|")
    for name, row in table.items():
        print(f"| `{name}` | {row['files']} | {row['lines']} | {', '.join(row['concerns'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
