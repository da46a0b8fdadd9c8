"""The container image and compose.yaml as an operator runs them: the repository's Dockerfile built on base images
made here (no registry image can be pulled; tests/support/images.py), the README's quick start walked against the
container, and a restart that keeps the data in its volume; then the compose stack (Slugline, PostgreSQL, Redis),
migrated at start with its secrets from files, walked and restarted likewise. Skipped where Docker is missing,
except in CI, which installs it (.ci/run)."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import CHROME, unavailable
from tests.support.images import ROOT, Images, build_all, compose_command, docker_problem, run

# The first run debootstraps Debian and compiles the Rust core in the builder (minutes); later ones reuse both.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

Exec = Callable[..., str]  # runs `slugline ARGS...` inside the running service


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Images:
    problem = docker_problem()
    if problem is not None:
        unavailable(problem)
    started = time.monotonic()
    built = build_all(tmp_path_factory.mktemp("images"))
    size = int(run("docker", "image", "inspect", "-f", "{{.Size}}", built.slugline).strip())
    print(f"\nimages ready in {time.monotonic() - started:.0f} s; {built.slugline} is {size / 1e6:.0f} MB")
    return built


def quick_start() -> tuple[str, str]:
    """The README's quick start, as two shell scripts: up to registering (steps 1-2), and from the key on."""
    section = (ROOT / "README.md").read_text().split("## Quick start", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert match, "the README's quick start has no sh block"
    head, sep, tail = match.group(1).partition("# 3.")
    assert sep and "BASE=http://127.0.0.1:8000\n" in head
    return head, sep + tail


def ready(url: str, logs: Callable[[], str], timeout: float = 120) -> float:
    """Seconds until GET /api/v1/health/ready answers 200."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if httpx.get(f"{url}/api/v1/health/ready", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{url} was not ready within {timeout} s:\n{logs()[-4000:]}")


def walk(url: str, slugline: Exec, cwd: Path) -> tuple[str, str]:
    """The README's curl commands against `url`, the plan raised in between as step 3 says; (key, link id)."""
    head, tail = quick_start()
    script = "set -eu\n" + head.replace("http://127.0.0.1:8000", url, 1) + 'echo; echo "$TOKEN"\n'
    first = run("bash", "-c", script, cwd=cwd)
    token = first.strip().splitlines()[-1]
    assert token.startswith("svc_sess_"), first
    slugline("accounts", "set-plan", "ada", "developer")
    rest = f"set -eu\nBASE={url}\nAPI=$BASE/api/v1\nTOKEN={token}\n{tail}" + 'echo; echo "$KEY $ID"\n'
    second = run("bash", "-c", rest, cwd=cwd, timeout=60)
    assert re.search(r"HTTP/1\.1 302 Found\r?\n", second), second
    assert "location: https://doc.rust-lang.org/book/" in second.lower(), second
    assert (cwd / "qr.png").read_bytes().startswith(b"\x89PNG"), "step 9 saved no PNG"
    key, link_id = second.strip().splitlines()[-1].split()
    assert clicks(url, key, at_least=1) == 1
    return key, link_id


def clicks(url: str, key: str, at_least: int) -> int:
    """The account's clicks of the last 7 days, once at least `at_least` have been written (within 20 s)."""
    deadline = time.monotonic() + 20
    while True:
        answer = httpx.get(f"{url}/api/v1/analytics?days=7", headers={"Authorization": f"Bearer {key}"}, timeout=5)
        assert answer.status_code == 200, answer.text
        total = int(answer.json()["total_clicks"])
        if total >= at_least or time.monotonic() > deadline:
            return total
        time.sleep(0.3)


def kept(url: str, key: str, link_id: str) -> None:
    """After a restart: the key, the link and its click are all still there, and the link still redirects."""
    link = httpx.get(f"{url}/api/v1/links/{link_id}", headers={"Authorization": f"Bearer {key}"}, timeout=5)
    assert link.status_code == 200 and link.json()["slug"] == "rust-book", link.text
    assert clicks(url, key, at_least=1) == 1
    hop = httpx.get(f"{url}/rust-book", headers={"User-Agent": CHROME}, timeout=5)
    assert (hop.status_code, hop.headers["location"]) == (302, "https://doc.rust-lang.org/book/")
    assert clicks(url, key, at_least=2) == 2


@pytest.fixture
def container() -> Iterator[str]:
    """A name for a container and its data volume, both removed afterwards."""
    name = f"slugline-e2e-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        yield name
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        subprocess.run(["docker", "volume", "rm", "-f", name], capture_output=True, check=False)


def test_image_serves_the_quick_start_and_keeps_its_data(images: Images, container: str, tmp_path: Path) -> None:
    name = volume = container
    started = time.monotonic()
    run("docker", "run", "-d", "--name", name, "-p", "127.0.0.1::8000", "-v", f"{volume}:/data", images.slugline)
    url = "http://" + run("docker", "port", name, "8000/tcp").split()[0]
    logs = lambda: run("docker", "logs", name)  # noqa: E731
    ready(url, logs)
    print(f"\ncontainer start (docker run) to ready: {time.monotonic() - started:.2f} s")

    key, link_id = walk(url, lambda *a: run("docker", "exec", name, "slugline", *a), tmp_path)
    # Non-root, with no compiler, and healthy by its own HEALTHCHECK.
    assert run("docker", "exec", name, "id", "-u").strip() == "10001"
    assert run("docker", "exec", name, "sh", "-c", "command -v cc gcc rustc cargo || true").strip() == ""
    deadline = time.monotonic() + 60
    while (health := run("docker", "inspect", "-f", "{{.State.Health.Status}}", name).strip()) != "healthy":
        assert health == "starting" and time.monotonic() < deadline, health
        time.sleep(1)

    run("docker", "restart", name)
    url = "http://" + run("docker", "port", name, "8000/tcp").split()[0]  # a new host port after a restart
    ready(url, logs)
    kept(url, key, link_id)


def test_compose_stack_migrates_at_start_and_keeps_its_data(images: Images, tmp_path: Path) -> None:
    compose = compose_command()
    assert compose is not None
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    (secrets_dir / "secret_key").write_text(secrets.token_urlsafe(48) + "\n")
    (secrets_dir / "postgres_password").write_text(secrets.token_urlsafe(24) + "\n")
    for path in secrets_dir.iterdir():
        path.chmod(0o644)  # the service's own user (10001) reads it where it is mounted
    env = {  # none of this machine's own SLUGLINE_* settings: compose.yaml's defaults, and these
        **{k: v for k, v in os.environ.items() if not k.startswith("SLUGLINE_")},
        "SLUGLINE_IMAGE": images.slugline,
        "POSTGRES_IMAGE": images.postgres,
        "REDIS_IMAGE": images.redis,
        "SLUGLINE_PUBLISH": "127.0.0.1:",  # any free port on loopback
        "SLUGLINE_SECRETS_DIR": str(secrets_dir),
    }
    project = [*compose, "-p", f"slugline-e2e-{os.getpid()}", "-f", str(ROOT / "compose.yaml")]

    def cmd(*args: str, timeout: float = 300) -> str:
        res = subprocess.run([*project, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)
        assert res.returncode == 0, f"compose {args}: {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        return res.stdout

    try:
        started = time.monotonic()
        cmd("up", "-d", "--no-build")
        url = "http://" + cmd("port", "slugline", "8000").strip()
        logs = lambda: cmd("logs", "--no-color")  # noqa: E731
        # Ready on PostgreSQL means migrated (`serve` migrates only SQLite), with the password and the secret read
        # from their files by the entrypoint.
        ready(url, logs)
        print(f"\ncompose up to ready: {time.monotonic() - started:.2f} s")
        slugline: Exec = lambda *a: cmd("exec", "-T", "slugline", "slugline-entrypoint", "slugline", *a)  # noqa: E731
        key, link_id = walk(url, slugline, tmp_path)
        assert int(cmd("exec", "-T", "redis", "redis-cli", "dbsize").strip()) > 0, "Slugline left nothing in Redis"
        cmd("restart", "slugline")
        url = "http://" + cmd("port", "slugline", "8000").strip()
        ready(url, logs)
        kept(url, key, link_id)
    finally:
        subprocess.run([*project, "down", "-v", "--remove-orphans"], env=env, capture_output=True, timeout=300)
