"""mkdocs hook: the configuration reference, generated from `slugline.settings.Settings` so it cannot drift.

`<!-- settings-table -->` in a page becomes a table of every setting: its environment variable, type, default and
description. The description is the field's `description=`, else the `#` comment block right above the field.
`settings.py` is loaded by path, so the docs build without the compiled Rust core.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
import typing
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from pydantic.fields import FieldInfo

MARKER = "<!-- settings-table -->"
SETTINGS_PATH = ("python", "slugline", "settings.py")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if MARKER not in markdown:
        return markdown
    root = Path(config.config_file_path).parent
    return markdown.replace(MARKER, settings_table(root.joinpath(*SETTINGS_PATH)))


def settings_table(path: Path) -> str:
    settings = _load(path).Settings
    prefix = str(settings.model_config.get("env_prefix", ""))
    comments = _field_comments(path.read_text(encoding="utf-8"))
    rows = ["| variable | type | default | description |", "|---|---|---|---|"]
    for name, field in settings.model_fields.items():
        description = field.description or comments.get(name, "—")
        cells = [f"`{prefix}{name.upper()}`", _type(field), _default(field), _cell(description)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _load(path: Path) -> types.ModuleType:
    """The module at `path`, run under a private name (pydantic resolves annotations through `sys.modules`)."""
    python_dir = str(path.parents[1])
    if importlib.util.find_spec("slugline") is None and python_dir not in sys.path:
        sys.path.insert(0, python_dir)  # for any `slugline.*` import settings.py may make
    name = "_slugline_settings_for_docs"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _field_comments(source: str) -> dict[str, str]:
    """Each field of `class Settings` mapped to the `#` comment block directly above it."""
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ClassDef) and node.name == "Settings"):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            block: list[str] = []
            row = stmt.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#"):
                block.insert(0, lines[row].strip().lstrip("#").strip())
                row -= 1
            if block:
                found[stmt.target.id] = " ".join(block)
    return found


def _type(field: FieldInfo) -> str:
    text = _type_name(field.annotation)
    bounds = [f"{symbol} {getattr(m, attr)}" for m in field.metadata for attr, symbol in _BOUNDS if hasattr(m, attr)]
    return text + (f" ({', '.join(bounds)})" if bounds else "")


_BOUNDS = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        named = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(named) + (", optional" if type(None) in args else "")
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
