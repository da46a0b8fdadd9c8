"""Clients generated from the live server's `/api/v1/openapi.json` work as a user would use them: a Python client from
`openapi-python-client` and a TypeScript client from `@hey-api/openapi-ts`, each with a script
(`tests/e2e/clients/`) that is type-checked (`mypy --strict`, `tsc --strict`) and then run against a real server:
register, generate a key, create a plain and a password link, list with q, get, update, analytics, QR, delete.

So a change of the document that breaks a generated client (a body turned into a union, a field lost, a type
changed) fails here. The generators are installed once, at pinned versions, into git-ignored directories
(`.venv-openapi/` and `node_modules/.openapi-ts/`), and each client is generated once per session. Without uv or npm,
or when a registry cannot be reached, the tests skip with the reason, except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import unavailable
from tests.support.server import ServerFactory

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("clients")
PYTHON_GENERATOR = ("openapi-python-client", "0.29.1")
PYTHON_TOOLS = (f"{PYTHON_GENERATOR[0]}=={PYTHON_GENERATOR[1]}", "mypy==2.4.1")
PYTHON_CACHE = ROOT / ".venv-openapi"
NPM_TOOLS = {"@hey-api/openapi-ts": "0.94.5", "typescript": "5.9.3"}
NPM_CACHE = ROOT / "node_modules" / ".openapi-ts"
# openapi-python-client reads only JSON, text and octet-stream answers: the QR code's images come as bytes (`File`).
PYTHON_CONFIG = (
    "content_type_overrides:\n  image/png: application/octet-stream\n  image/svg+xml: application/octet-stream\n"
)
# The generator's own `client.py` (the same for every document) passes `*args: object` to httpx's `__exit__`, which
# mypy 2 refuses; everything generated from the document, and the script, is checked strictly.
MYPY_CONFIG = "[mypy]\nstrict = True\n\n[mypy-slugline_client.client]\nignore_errors = True\n"
TSCONFIG = {
    "compilerOptions": {
        "strict": True,
        "target": "ES2022",
        "module": "commonjs",
        "moduleResolution": "node10",
        "lib": ["ES2022", "DOM", "DOM.Iterable"],
        "outDir": "out",
        "skipLibCheck": True,
        "noUnusedLocals": True,
    },
    "include": ["*.ts", "client/**/*.ts"],
}
Generated = Callable[[str], Path]  # the document's URL -> the directory of the client generated from it


def run(args: list[str | Path], what: str, cwd: Path | None = None, timeout: float = 300) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    env["PATH"] = f"{PYTHON_CACHE / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # the generator formats with its ruff
    done = subprocess.run(
        [str(arg) for arg in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{what} failed ({done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    return done.stdout + done.stderr


def install(args: list[str | Path], what: str) -> None:
    """An install step: a failure (the registry unreachable) skips the tests, except in CI."""
    try:
        run(args, what)
    except AssertionError as exc:
        unavailable(str(exc)[-1500:])
    except subprocess.TimeoutExpired:
        unavailable(f"{what} took longer than 300 s")


def document(url: str) -> bytes:
    res = httpx.get(f"{url}/api/v1/openapi.json", timeout=30)
    res.raise_for_status()
    return res.content


def per_document(make: Callable[[bytes, Path], None], root: Path) -> Generated:
    """`make(document, directory)` once for each distinct document of the session."""

    def generated(url: str) -> Path:
        doc = document(url)
        directory = root / hashlib.sha256(doc).hexdigest()[:16]
        if not directory.exists():
            building = directory.with_suffix(".tmp")
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir(parents=True)
            make(doc, building)
            building.rename(directory)
        return directory

    return generated


@pytest.fixture(scope="session")
def python_tools() -> Path:
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        found = shutil.which("uv")
        if found is None:
            unavailable("uv is not installed")
        uv = Path(found)
    python = PYTHON_CACHE / "bin" / "python"
    marker = PYTHON_CACHE / "installed.txt"
    wanted = "\n".join(PYTHON_TOOLS)
    if not marker.exists() or marker.read_text() != wanted:
        shutil.rmtree(PYTHON_CACHE, ignore_errors=True)
        install([uv, "venv", "--quiet", "--python", sys.executable, PYTHON_CACHE], "uv venv")
        install([uv, "pip", "install", "--quiet", "--python", python, *PYTHON_TOOLS], "uv pip install")
        marker.write_text(wanted)
    return PYTHON_CACHE / "bin"


@pytest.fixture(scope="session")
def node_tools() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        unavailable("node and npm are not installed")
    marker = NPM_CACHE / "installed.json"
    if not marker.exists() or json.loads(marker.read_text()) != NPM_TOOLS:
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        packages = [f"{name}@{version}" for name, version in NPM_TOOLS.items()]
        install(["npm", "install", "--prefix", NPM_CACHE, "--no-audit", "--no-fund", *packages], "npm install")
        marker.write_text(json.dumps(NPM_TOOLS))
    return NPM_CACHE / "node_modules" / ".bin"


@pytest.fixture(scope="session")
def python_client(python_tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Generated:
    def make(doc: bytes, directory: Path) -> None:
        (directory / "openapi.json").write_bytes(doc)
        (directory / "config.yml").write_text(PYTHON_CONFIG)
        out = run(
            [
                python_tools / "openapi-python-client",
                "generate",
                *("--path", directory / "openapi.json", "--config", directory / "config.yml"),
                *("--output-path", directory / "slugline_client", "--meta", "none"),
            ],
            "openapi-python-client",
        )
        # A part of the document the generator could not read is left out of the client: a failure here.
        assert "Warning" not in out, out
        shutil.copy(SCRIPTS / "slugline_example.py", directory)
        (directory / "mypy.ini").write_text(MYPY_CONFIG)
        cache = PYTHON_CACHE / "mypy-cache"
        run(
            [python_tools / "mypy", "--strict", "--cache-dir", cache, "slugline_example.py", "slugline_client"],
            "mypy --strict",
            cwd=directory,
        )

    return per_document(make, tmp_path_factory.mktemp("python-client"))


@pytest.fixture(scope="session")
def typescript_client(node_tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Generated:
    def make(doc: bytes, directory: Path) -> None:
        (directory / "openapi.json").write_bytes(doc)
        run([node_tools / "openapi-ts", "-i", "openapi.json", "-o", "client"], "openapi-ts", cwd=directory)
        shutil.copy(SCRIPTS / "slugline-example.ts", directory)
        (directory / "tsconfig.json").write_text(json.dumps(TSCONFIG))
        run([node_tools / "tsc", "-p", "tsconfig.json"], "tsc --strict", cwd=directory)

    return per_document(make, tmp_path_factory.mktemp("typescript-client"))


@pytest.fixture
def server_url(start_server: ServerFactory) -> str:
    # New accounts may use the API at once: the script registers its own and makes a key, as a new user would.
    return start_server(SLUGLINE_DEFAULT_PLAN="developer").url


def test_generated_python_client(python_client: Generated, python_tools: Path, server_url: str) -> None:
    directory = python_client(server_url)
    script = directory / "slugline_example.py"
    out = run([python_tools / "python", script, server_url, "pyclient"], "the Python client's script", cwd=directory)
    assert out.strip() == "ok", out


def test_generated_typescript_client(typescript_client: Generated, server_url: str) -> None:
    directory = typescript_client(server_url)
    out = run(["node", "out/slugline-example.js", server_url, "tsclient"], "the TypeScript client's script", directory)
    assert out.strip() == "ok", out
