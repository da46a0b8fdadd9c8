"""The release artefacts as a user gets them. `make wheel-manylinux` builds the sdist and, from the unpacked sdist,
the abi3 manylinux2014 wheel, once per session; installed into a clean venv of every supported CPython, that wheel
migrates a fresh database, answers the API and redirects, with nothing from this checkout on its path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import IN_CI
from tests.support.server import SECRET, Server

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(sys.executable).parent  # uv, auditwheel: `make` installs them beside the test interpreter
PYTHONS = ("3.11", "3.12", "3.13")
MIGRATIONS = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("*.py"))
SDIST_HAS = """pyproject.toml Cargo.toml Cargo.lock LICENSE README.md rust_core/lib.rs rust_core/build.rs
    python/slugline/__init__.py python/slugline/_core.pyi migrations/env.py migrations/script.py.mako
    python/slugline/dashboard/world-110m.json"""
WHEEL_HAS = """slugline/_core.abi3.so slugline/_core.pyi slugline/py.typed slugline/__main__.py
    slugline/migrations/env.py slugline/migrations/script.py.mako slugline/api/static/docs.js
    slugline/dashboard/world-110m.json"""

# Building the wheel takes about a minute the first time; the tests share it.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@dataclass(frozen=True)
class Artefacts:
    sdist: Path
    wheel: Path
    constraints: Path  # the runtime dependencies at their uv.lock versions


def run(
    *args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert res.returncode == 0, f"{args} exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="session")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> Artefacts:
    work = tmp_path_factory.mktemp("release")
    # A private unpack directory: other test runs in the same checkout may be building too.
    make = ["make", "-s", "wheel-manylinux", f"VENV={sys.prefix}"]
    run(*make, f"DIST={work / 'dist'}", f"UNPACKED={work / 'src'}", timeout=900)
    (sdist,) = (work / "dist").glob("slugline-*.tar.gz")
    (wheel,) = (work / "dist").glob("slugline-*.whl")
    pins = run(
        TOOLS / "uv", "export", "--frozen", "--no-emit-project", "--no-hashes", "--no-default-groups", "--quiet"
    ).stdout
    constraints = work / "constraints.txt"
    constraints.write_text(pins)
    return Artefacts(sdist, wheel, constraints)


def test_sdist_carries_what_a_wheel_is_built_from(artefacts: Artefacts) -> None:
    with tarfile.open(artefacts.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    expected = {*SDIST_HAS.split(), *(f"migrations/versions/{name}" for name in MIGRATIONS)}
    assert expected <= names, expected - names
    assert not any(n.startswith(("python/slugline/migrations/", "target/", ".venv/")) for n in names)


def test_wheel_is_portable_and_complete(artefacts: Artefacts) -> None:
    assert re.fullmatch(
        r"slugline-[^-]+-cp311-abi3-manylinux2014_x86_64\.manylinux_2_17_x86_64\.whl", artefacts.wheel.name
    ), artefacts.wheel.name
    with zipfile.ZipFile(artefacts.wheel) as whl:
        names = set(whl.namelist())
    dist_info = next(n for n in names if n.endswith(".dist-info/METADATA")).split("/")[0]
    assert {n.split("/")[0] for n in names} == {"slugline", dist_info}  # nothing else lands in site-packages
    expected = {*WHEEL_HAS.split(), f"{dist_info}/licenses/LICENSE"}
    expected |= {f"slugline/migrations/versions/{name}" for name in MIGRATIONS}
    assert expected <= names, expected - names
    shown = run(TOOLS / "auditwheel", "show", artefacts.wheel).stdout
    assert 'consistent with the following platform tag: "manylinux_2_17_x86_64"' in " ".join(shown.split()), shown


def find_python(minor: str) -> Path | None:
    found = sorted(Path.home().glob(f".pyenv/versions/{minor}.*/bin/python3"))
    which = shutil.which(f"python{minor}")
    return found[-1] if found else Path(which) if which else None


PROBE = """
from importlib.metadata import version
import slugline._core as core, slugline.storage.migrate as migrate
print(version("slugline"))
print(migrate.migrations_dir())
print(hasattr(core, "_panic") or hasattr(core.ClickBatch, "synthetic"))
"""


@pytest.mark.parametrize("minor", PYTHONS)
def test_wheel_migrates_answers_and_redirects(minor: str, artefacts: Artefacts, tmp_path: Path) -> None:
    python = find_python(minor)
    if python is None:
        if IN_CI:
            pytest.fail(f"CI must test the wheel on CPython {minor}, which is not installed")
        pytest.skip(f"CPython {minor} is not installed")
    venv = tmp_path / "venv"
    run(TOOLS / "uv", "venv", "--quiet", "--python", python, venv)
    bin_ = venv / "bin"
    # Pinned as uv.lock pins them; compiled once here rather than by every process started below.
    install = ["pip", "install", "--quiet", "--compile-bytecode", "--constraint", str(artefacts.constraints)]
    run(TOOLS / "uv", *install, "--python", bin_ / "python", artefacts.wheel, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env |= {"SLUGLINE_DATABASE_URL": f"sqlite:///{tmp_path}/wheel.db", "SLUGLINE_SECRET_KEY": SECRET}

    # The installed package answers, with its own Alembic scripts and without the test hooks.
    probe = run(bin_ / "python", "-c", PROBE, env=env, cwd=tmp_path)
    release, migrations, hooks = probe.stdout.split("\n")[:3]
    assert Path(migrations).is_relative_to(venv) and hooks == "False", probe.stdout
    for command in ([bin_ / "slugline"], [bin_ / "python", "-m", "slugline"]):
        assert run(*command, "--version", env=env, cwd=tmp_path).stdout.strip() == f"slugline {release}"

    assert "created the database schema at revision" in run(bin_ / "slugline", "migrate", env=env, cwd=tmp_path).stdout
    password = {"SLUGLINE_NEW_PASSWORD": "wheel-password"}
    run(bin_ / "slugline", "accounts", "create", "ada", "--plan", "developer", env=env | password, cwd=tmp_path)
    server = Server(env["SLUGLINE_DATABASE_URL"], python=str(bin_ / "python")).start(tmp_path)
    try:
        api = f"{server.url}/api/v1"
        login = httpx.post(f"{api}/auth/login", json={"username": "ada", "password": "wheel-password"})
        session = {"Authorization": f"Bearer {login.json()['token']}"}
        key = httpx.post(f"{api}/api-key", json={"scope": "full"}, headers=session).json()["key"]
        link = {"destination_url": "https://example.com/wheel", "slug": "whl"}
        made = httpx.post(f"{api}/links", json=link, headers={"Authorization": f"Bearer {key}"})
        assert made.status_code == 201, made.text
        hop = httpx.get(f"{server.url}/whl")
        assert (hop.status_code, hop.headers["location"]) == (302, "https://example.com/wheel")
    finally:
        server.stop()
