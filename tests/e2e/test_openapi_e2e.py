"""The OpenAPI document tells the whole truth: schemathesis (every phase, `--checks all`) against a real server finds
nothing, with a full key, a public-only key and a session token (where the expected answers are 404 and 403).

Key management is left out so the credentials survive the run. Logout runs with both keys (a 403 that revokes
nothing) and, in a fourth run of its own, with a session token of its own: the first 200 revokes it, and every later
call gets the documented 401. The four runs go in parallel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.server import PASSWORD, ServerFactory, make_account

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = "1"  # a fixed seed keeps the suite deterministic; run the command in a failure message with another to explore
MAX_EXAMPLES = "10"
UNLIMITED = {
    f"SLUGLINE_RATE_LIMIT_{name}": "1000000"
    for name in ("DEVELOPER", "PRO", "ANONYMOUS", "ANALYZE_ANONYMOUS", "LOGIN", "REGISTER", "UNLOCK")
}
KEEP_KEYS = "^/api/v1/api-key$"  # key management would replace or revoke the run's own key
OPERATIONS = {  # per credential: the operations it runs
    "full": ("--exclude-path-regex", KEEP_KEYS),
    "public": ("--exclude-path-regex", KEEP_KEYS),
    "session": ("--exclude-path-regex", "^/api/v1/(api-key|auth/logout)$"),
    "logout": ("--include-path-regex", "^/api/v1/auth/logout$"),
}


def command(url: str, token: str, operations: tuple[str, str]) -> list[str]:
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
        *operations,
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
    login = {"username": keys.username, "password": PASSWORD}
    own_session = httpx.post(f"{server.url}/api/v1/auth/login", json=login).json()["token"]
    tokens = {"full": keys.full, "public": keys.public, "session": keys.session, "logout": own_session}
    runs = {}
    for name, token in tokens.items():
        out = (tmp_path / f"schemathesis-{name}.txt").open("w")
        # cwd: schemathesis keeps a cache directory where it runs
        args = command(server.url, token, OPERATIONS[name])
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)
        runs[name] = (proc, out)
    failed = []
    for name, (proc, out) in runs.items():
        code = proc.wait(timeout=240)
        out.close()
        if code != 0:
            failed.append(f"--- {name} (exit {code}):\n{Path(out.name).read_text()[-6000:]}")
    assert not failed, "\n".join(failed)
    # The logout run logged its session out (so its 200 was checked against the document), and only that one.
    for token, status in ((own_session, 401), (keys.session, 200)):
        res = httpx.get(f"{server.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
        assert res.status_code == status, res.text
