"""Every package the code imports is declared in pyproject.toml's [project].dependencies, so its floor is ours to
set (and `make test-lowest` checks it), rather than whatever another package happens to require. An import inside
`try: ... except ImportError` is optional and need not be declared."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "python" / "slugline", ROOT / "migrations"]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]).lower()


def _optional(tree: ast.AST) -> set[int]:
    """The ids of import statements guarded by `except ImportError` (or ModuleNotFoundError)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(handler.type, ast.Name) and handler.type.id in ("ImportError", "ModuleNotFoundError")
            for handler in node.handlers
        ):
            guarded |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return guarded


def _imported() -> dict[str, set[str]]:
    """Top-level modules imported unconditionally, each with the files that import it."""
    found: dict[str, set[str]] = {}
    for source in SOURCES:
        for path in source.rglob("*.py"):
            if "migrations" in path.relative_to(ROOT).parts[1:]:  # the build's copy in the package
                continue
            tree = ast.parse(path.read_text(), str(path))
            optional = _optional(tree)
            for node in ast.walk(tree):
                if id(node) in optional:
                    continue
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(requirement) for requirement in project["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    missing = {}
    for module, files in sorted(_imported().items()):
        if module in sys.stdlib_module_names or module in ("slugline", "__future__"):
            continue
        names = {_name(dist) for dist in distributions.get(module, [])}
        assert names, f"{module} (imported by {sorted(files)}) belongs to no installed distribution"
        if not names & declared:
            missing[module] = (sorted(names), sorted(files))
    assert missing == {}, f"imported but not in [project].dependencies: {missing}"


def test_the_floor_of_granian_is_past_its_broken_release() -> None:
    """Granian 2.0.0 answered 500 to every request that ran work on a thread (anyio could not find its root task)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [granian] = [requirement for requirement in project["dependencies"] if _name(requirement) == "granian"]
    assert ">=2.0.0," not in granian + "," and ">=2.0," not in granian + ",", granian
