"""The OpenAPI document tells the whole truth: schemathesis (every phase, `--checks all`) against a real server finds
nothing, with a full key, a public-only key and a session token (where the expected answers are 404 and 403).

Key management and logout are left out so the credentials survive the run; the three runs go in parallel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.server import ServerFactory, make_account

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = "1"  # a fixed seed keeps the suite deterministic; run the command in a failure message with another to explore
MAX_EXAMPLES = "10"
UNLIMITED = {
    f"SLUGLINE_RATE_LIMIT_{name}": "1000000"
    for name in ("DEVELOPER", "PRO", "ANONYMOUS", "ANALYZE_ANONYMOUS", "LOGIN", "REGISTER", "UNLOCK")
}


def command(url: str, token: str) -> list[str]:
    return [
        str(SCHEMATHESIS),
        "--config-file",
        str(CONFIG),
        "run",
        f"{url}/api/v1/openapi.json",
        "--url",
        url,
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--exclude-path-regex",
        "^/api/v1/(api-key|auth/logout)$",
        "--max-examples",
        MAX_EXAMPLES,
        "--seed",
        SEED,
        "--request-timeout",
        "20",
        "--no-color",
    ]


def test_schemathesis_finds_nothing(start_server: ServerFactory, tmp_path: Path) -> None:
    server = start_server(**UNLIMITED)
    keys = make_account(server, "schemathesis")
    runs = {}
    for name, token in (("full", keys.full), ("public", keys.public), ("session", keys.session)):
        out = (tmp_path / f"schemathesis-{name}.txt").open("w")
        # cwd: schemathesis keeps a cache directory where it runs
        proc = subprocess.Popen(command(server.url, token), stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
        runs[name] = (proc, out)
    failed = []
    for name, (proc, out) in runs.items():
        code = proc.wait(timeout=240)
        out.close()
        if code != 0:
            failed.append(f"--- {name} key (exit {code}):\n{Path(out.name).read_text()[-6000:]}")
    assert not failed, "\n".join(failed)
