"""A second, independent MCP client: the MCP Inspector's CLI (npm) against a real `slugline serve --workers 2`, with
a key and with OAuth.

The Inspector is installed once into `node_modules/.inspector` (git-ignored). Without npm, or when the registry cannot
be reached, the tests skip with the reason, except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest

from tests.support.helpers import unavailable
from tests.support.mcp_client import TOOL_NAMES
from tests.support.oauth_client import Person
from tests.support.server import Keys, Server, ServerFactory, free_port, make_account

PACKAGE, VERSION = "@modelcontextprotocol/inspector", "2.12.0"
CACHE = Path(__file__).resolve().parents[2] / "node_modules" / ".inspector"


def installed_version() -> str | None:
    manifest = CACHE / "node_modules" / PACKAGE / "package.json"
    return json.loads(manifest.read_text())["version"] if manifest.exists() else None


@pytest.fixture(scope="session")
def inspector() -> Path:
    if shutil.which("npm") is None or shutil.which("node") is None:
        unavailable("node and npm are not installed")
    if installed_version() != VERSION:
        CACHE.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                ["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"],
                capture_output=True,
                text=True,
                timeout=300,
                check=True,
            )
        except subprocess.CalledProcessError as exc:
            unavailable(f"npm could not install {PACKAGE}@{VERSION}: {exc.stderr.strip()[-800:]}")
        except subprocess.TimeoutExpired:
            unavailable(f"npm install {PACKAGE}@{VERSION} took longer than 300 s")
    return CACHE / "node_modules" / ".bin" / "mcp-inspector"


def run(inspector: Path, server: Server, key: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(inspector),
        "--cli",
        f"{server.url}/mcp",
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {key}",
        *args,
    ]
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")}  # never touch ~/.mcp-inspector
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)


def ok(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    return json.loads(result.stdout)


@pytest.fixture
def served(start_server: ServerFactory) -> tuple[Server, Keys]:
    server = start_server(workers=2)
    return server, make_account(server, "inspected")


def test_inspector_lists_the_tools(inspector: Path, served: tuple[Server, Keys], tmp_path: Path) -> None:
    server, keys = served
    # --strict: the Inspector's schema portability check fails the run on any error-severity problem.
    listing = ok(run(inspector, server, keys.full, tmp_path, "--method", "tools/list", "--strict"))
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert set(tools) == TOOL_NAMES
    assert tools["delete_link"]["annotations"]["destructiveHint"] is True
    assert tools["list_links"]["inputSchema"]["properties"]["per"]["maximum"] == 100


def test_inspector_calls_tools(inspector: Path, served: tuple[Server, Keys], tmp_path: Path) -> None:
    server, keys = served

    def call(key: str, name: str, *arguments: str) -> subprocess.CompletedProcess[str]:
        tool_args = ["--tool-arg", *arguments] if arguments else []
        return run(inspector, server, key, tmp_path, "--method", "tools/call", "--tool-name", name, *tool_args)

    made = ok(
        call(keys.full, "create_link", "destination_url=https://example.org/i", "slug=inspected", "visibility=private")
    )
    link = made["structuredContent"]
    assert (link["slug"], link["short_url"], made["isError"]) == ("inspected", f"{server.url}/inspected", False)
    assert ok(call(keys.full, "get_me"))["structuredContent"]["username"] == "inspected"
    hidden = call(keys.public, "delete_link", f"id={link['id']}")
    assert hidden.returncode != 0 and "link not found" in hidden.stdout
    assert ok(call(keys.full, "list_links"))["structuredContent"]["pagination"]["total"] == 1


def test_inspector_is_refused_with_a_bad_key(inspector: Path, served: tuple[Server, Keys], tmp_path: Path) -> None:
    server, _ = served
    result = run(inspector, server, "svc_live_not-a-key", tmp_path, "--method", "tools/list")
    assert result.returncode != 0 and '"tools"' not in result.stdout


@pytest.mark.anyio
async def test_inspector_signs_in_with_oauth(inspector: Path, served: tuple[Server, Keys], tmp_path: Path) -> None:
    """No key: the Inspector discovers the authorization server from the 401, registers, and prints the authorization
    URL (it would open a browser); a signed-in person consents, the redirect reaches the Inspector's loopback
    listener, and it lists the tools with the access token it got."""
    server, keys = served
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    command = [str(inspector), "--cli", f"{server.url}/mcp", "--transport", "http", "--method", "tools/list"]
    env = {
        **os.environ,
        "MCP_CATALOG_PATH": str(tmp_path / "catalog.json"),
        "HOME": str(tmp_path),  # its OAuth state file goes under ~/.mcp-inspector
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "MCP_AUTO_OPEN_ENABLED": "true",  # without a TTY it starts interactive OAuth only when told to
        "PATH": f"{no_browser(tmp_path)}:{os.environ['PATH']}",
    }
    proc = await anyio.to_thread.run_sync(start, [*command, "--callback-url", callback], env)
    try:
        url = await anyio.to_thread.run_sync(authorization_url, proc)
        async with Person(server, keys.username, scope="public") as person, httpx.AsyncClient() as browser:
            await person.open(url)
            assert person.redirected_to is not None and person.redirected_to.startswith(callback)
            assert (await browser.get(person.redirected_to)).status_code == 200
        stdout, stderr = await anyio.to_thread.run_sync(lambda: proc.communicate(timeout=60))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, (stdout[-2000:], stderr[-2000:])
    assert {tool["name"] for tool in json.loads(stdout)["tools"]} == TOOL_NAMES


def start(command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    pipe = subprocess.PIPE
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, text=True, env=env)


def no_browser(tmp_path: Path) -> Path:
    """An `xdg-open` that opens nothing: the test is the browser."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    opener = bin_dir / "xdg-open"
    opener.write_text("#!/bin/sh\nexit 0\n")
    opener.chmod(0o755)
    return bin_dir


def authorization_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("Please navigate to: "):
            return line.removeprefix("Please navigate to: ").strip()
    raise AssertionError(f"the Inspector printed no authorization URL: {''.join(seen)[-2000:]}")


def test_inspector_reads_resources_and_prompts(inspector: Path, served: tuple[Server, Keys], tmp_path: Path) -> None:
    server, keys = served

    def inspect(key: str, *args: str) -> subprocess.CompletedProcess[str]:
        return run(inspector, server, key, tmp_path, "--method", *args)

    templates = ok(inspect(keys.full, "resources/templates/list"))["resourceTemplates"]
    assert {t["uriTemplate"] for t in templates} == {"slugline://links/{link_id}", "slugline://links{?q,page}"}
    made = ok(
        run(
            inspector, server, keys.full, tmp_path, "--method", "tools/call", "--tool-name", "create_link",
            "--tool-arg", "destination_url=https://example.org/r", "visibility=private",
        )
    )["structuredContent"]  # fmt: skip
    [content] = ok(inspect(keys.full, "resources/read", "--uri", f"slugline://links/{made['id']}"))["contents"]
    assert json.loads(content["text"])["id"] == made["id"]
    hidden = inspect(keys.public, "resources/read", "--uri", f"slugline://links/{made['id']}")
    assert hidden.returncode != 0 and "link not found" in hidden.stdout + hidden.stderr
    prompts = ok(inspect(keys.full, "prompts/list"))["prompts"]
    assert {p["name"] for p in prompts} == {"weekly_performance", "tidy_links"}
    [message] = ok(inspect(keys.public, "prompts/get", "--prompt-name", "tidy_links"))["messages"]
    assert "preview_url" in message["content"]["text"] and made["id"] not in message["content"]["text"]
    # the list template, and the other prompt, each as the owner and as a public-only key sees them
    for key, ids in ((keys.full, [made["id"]]), (keys.public, [])):
        [content] = ok(inspect(key, "resources/read", "--uri", "slugline://links?q=example"))["contents"]
        assert [link["id"] for link in json.loads(content["text"])["data"]] == ids
        [message] = ok(inspect(key, "prompts/get", "--prompt-name", "weekly_performance"))["messages"]
        text = message["content"]["text"]
        assert "get_analytics" in text and '"total_clicks": 0' in text.replace('":0', '": 0')
