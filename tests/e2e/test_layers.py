"""The package's own shape: what each module says it exports (the import contracts themselves
run in ``.ci/run`` as ``lint-imports``)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "asz"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declared_all(tree: ast.Module) -> set[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return None


def test_every_module_another_imports_says_what_it_exports() -> None:
    """A module others import declares ``__all__``, and every name taken from it is there:
    what a module offers is written down where it is defined, not found by reading its users."""
    trees = {_module_name(path): ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")}
    taken: dict[str, set[str]] = defaultdict(set)
    for importer, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in trees and node.level == 0:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" not in trees and node.module != importer:
                        taken[node.module].add(alias.name)
    missing = {
        module: sorted(names - (_declared_all(trees[module]) or set()))
        for module, names in taken.items()
        if not names <= (_declared_all(trees[module]) or set())
    }
    assert missing == {}
