"""Container images for tests/e2e/test_container.py, made on this machine where no registry image can be pulled:
a Debian root file system from debootstrap (`docker import`), and on it the Dockerfile's two bases (a Rust builder
holding this machine's own toolchain, a Python runtime) and stand-ins for compose.yaml's PostgreSQL and Redis
(tests/e2e/images/). Each base is tagged with a hash of what it is made from, so a later run reuses it; the
Slugline image itself is rebuilt every run, on Docker's layer cache."""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "tests" / "e2e" / "images"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
LOCAL_CAS = Path("/usr/local/share/ca-certificates")  # the machine's own certificate authorities, if any


@dataclass(frozen=True)
class Images:
    slugline: str
    postgres: str
    redis: str


def run(*args: str | Path, timeout: float = 600, cwd: Path = ROOT, input: bytes | None = None) -> str:
    """Runs a command; its output on success, an AssertionError with the end of its output otherwise."""
    res = subprocess.run(
        [str(a) for a in args], cwd=cwd, input=input, capture_output=True, timeout=timeout, check=False
    )
    out, err = res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace")
    assert res.returncode == 0, f"{[str(a) for a in args]} exited {res.returncode}\n{out[-3000:]}\n{err[-3000:]}"
    return out


def docker_problem() -> str | None:
    """Why the container tests cannot run here, or None."""
    for tool in ("docker", "debootstrap"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install docker.io debootstrap)"
    if compose_command() is None:
        return "neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)"
    info = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    return None if info.returncode == 0 else "the Docker daemon does not answer (start dockerd)"


def compose_command() -> list[str] | None:
    """Compose v2 as a docker plugin, else the standalone v1 (Debian's docker-compose)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def mirror() -> str:
    """The Debian mirror apt uses here (sources.list or a deb822 .sources file), else Debian's own."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        text = path.read_text(errors="replace") if path.is_file() else ""
        for url in re.findall(r"(?:^deb\s+(?:\[[^]]*\]\s+)?|^URIs:\s*)(\S+)", text, re.MULTILINE):
            if url.rstrip("/").endswith("/debian"):
                return str(url)
    return DEFAULT_MIRROR


def _tag(name: str, *parts: str | bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return f"slugline-test/{name}:{digest.hexdigest()[:12]}"


def _exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def debian(work: Path) -> str:
    """A minimal Debian (debootstrap's minbase) imported as an image: about 40 s the first time."""
    source = mirror()
    tag = _tag("debian", SUITE, source)
    if not _exists(tag):
        rootfs = work / "rootfs"
        run("debootstrap", "--variant=minbase", SUITE, rootfs, source, timeout=900)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / cache).glob("*"):
                if entry.is_file():
                    entry.unlink()
        archive = subprocess.run(["tar", "-C", rootfs, "-c", "."], capture_output=True, check=True).stdout
        run("docker", "import", "-", tag, input=archive)
        shutil.rmtree(rootfs, ignore_errors=True)
    return tag


def _recipe_tag(name: str, base: str, *extra: str) -> str:
    files = [p.read_bytes() for p in sorted(RECIPES.glob(f"{name}[.-]*"))]  # NAME.Dockerfile and its scripts
    return _tag(name, base, *files, *extra)


# Builds pass --force-rm, so a step that fails leaves no stopped container behind, and a low CPU weight: in CI they
# run beside the suite (.ci/run), whose servers and timings come first.
BUILD = ("docker", "build", "-q", "--force-rm", "--cpu-shares", "256")


def layered(name: str, base: str, context: Path = RECIPES, *extra: str) -> str:
    """tests/e2e/images/NAME.Dockerfile built FROM `base`, once per content of the recipe, base and `extra`."""
    recipe = RECIPES / f"{name}.Dockerfile"
    tag = _recipe_tag(name, base, *extra)
    if not _exists(tag):
        run(*BUILD, "-f", recipe, "--build-arg", f"BASE={base}", "-t", tag, context, timeout=900)
    return tag


def _cas() -> list[Path]:
    return sorted(LOCAL_CAS.glob("*.crt")) if LOCAL_CAS.is_dir() else []


def _context(work: Path, name: str) -> Path:
    """A build context holding `ca/`: the machine's own certificate authorities, which the bases trust as it does
    (a TLS-inspecting proxy's, where one stands between this machine and the registries)."""
    context = work / name
    (context / "ca").mkdir(parents=True, exist_ok=True)
    for cert in _cas():
        shutil.copy2(cert, context / "ca" / cert.name)
    return context


def python(base: str, work: Path) -> str:
    """The runtime base: Debian's CPython with its venv module."""
    cas = "".join(cert.read_text() for cert in _cas())
    if _exists(tag := _recipe_tag("python", base, cas)):
        return tag
    try:
        return layered("python", base, _context(work, "python"), cas)
    finally:
        shutil.rmtree(work / "python", ignore_errors=True)


def rust(base: str, work: Path) -> str:
    """The builder base with this machine's Rust toolchain (cargo, rustc and their libraries), which Debian's own
    rustc is too old to build Cargo.lock with."""
    version = run("rustc", "-vV") + run("cargo", "-V") + "".join(cert.read_text() for cert in _cas())
    if _exists(tag := _recipe_tag("rust", base, version)):
        return tag
    context = _context(work, "rust")
    sysroot = Path(run("rustc", "--print", "sysroot").strip())
    (context / "toolchain" / "bin").mkdir(parents=True, exist_ok=True)
    for tool in ("cargo", "rustc"):
        shutil.copy2(sysroot / "bin" / tool, context / "toolchain" / "bin" / tool)
    shutil.copytree(sysroot / "lib", context / "toolchain" / "lib", symlinks=True, dirs_exist_ok=True)
    try:
        return layered("rust", base, context, version)
    finally:
        shutil.rmtree(context, ignore_errors=True)


def build_all(work: Path, tag: str = "slugline-test/slugline:e2e") -> Images:
    """Every image the container tests start, Slugline's built by the repository's own Dockerfile. One build at a
    time on this machine: a test that comes while CI's early build (`python -m tests.support.images`) runs waits
    for it, then finds everything made."""
    with open(Path("/tmp/slugline-test-images.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_all(work, tag)


def _build_all(work: Path, tag: str) -> Images:
    base = debian(work)
    builder, runtime = rust(base, work), python(base, work)
    args = ["--build-arg", f"BUILDER_IMAGE={builder}", "--build-arg", f"RUNTIME_IMAGE={runtime}"]
    run(*BUILD, *args, "-t", tag, ROOT, timeout=1800)
    return Images(slugline=tag, postgres=layered("postgres", base), redis=layered("redis", base))


if __name__ == "__main__":  # .ci/run starts this early, beside the rest of the suite: see build_all
    import tempfile
    import time

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="slugline-images-") as scratch:
        print(build_all(Path(scratch)), f"in {time.monotonic() - started:.0f} s", flush=True)
