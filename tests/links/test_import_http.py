"""`POST /api/v1/links/import`: a multipart upload, streamed to a temporary file, read by the same service function as
`slugline links import`, answering its report; every malformed upload is a 4xx with `{"error"}`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from slugline.runtime import Runtime
from slugline.web import importing, multipart
from tests.links.test_import import run_import
from tests.support.helpers import LINKS, SQLITE_ONLY, Account, create

IMPORT = f"{LINKS}/import"


def ndjson(*rows: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def upload(client: TestClient, who: Account, data: bytes, key: str = "full", name: str = "links.ndjson", **form: str):  # type: ignore[no-untyped-def]
    return client.post(IMPORT, files={"file": (name, data, "text/plain")}, data=form, headers=who.auth(key))


ROWS = (
    {"slug": "one", "destination_url": "https://example.com/1", "title": "One", "hashtags": ["news"]},
    {"slug": "two", "destination_url": "https://example.com/2", "visibility": "private"},
    {"slug": "mine", "destination_url": "https://example.com/elsewhere"},
)


def test_an_upload_answers_the_report_the_cli_gives(client: TestClient, runtime: Runtime, make_account: Any) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    create(client, alice, slug="mine", destination_url="https://example.com/mine")
    dry = upload(client, alice, ndjson(*ROWS), dry_run="true")
    assert dry.status_code == 200, dry.text
    assert client.get(LINKS, headers=alice.auth()).json()["pagination"]["total"] == 1
    got = upload(client, alice, ndjson(*ROWS))
    assert got.status_code == 200, got.text
    report = got.json()
    assert (report["created"], report["conflicts"], report["dry_run"]) == (2, 1, False)
    assert {**dry.json(), "dry_run": False} == report
    assert report["problems"] == [
        {"row": 3, "kind": "conflict", "message": "slug 'mine' is already taken (for https://example.com/mine)"}
    ]
    assert client.get(LINKS, params={"q": "#news"}, headers=alice.auth()).json()["pagination"]["total"] == 1
    again = upload(client, alice, ndjson(*ROWS), overwrite="true").json()
    assert (again["skipped"], again["overwritten"]) == (2, 1)
    cli = run_import(runtime, "bob", ndjson(*ROWS), "ndjson")  # the CLI's report, for the same file (alice's slugs)
    answered = upload(client, bob, ndjson(*ROWS), name="other.txt", format="ndjson").json()
    assert answered == cli and cli["conflicts"] == 3


def test_a_public_only_key_imports_no_hidden_link(client: TestClient, alice: Account) -> None:
    report = upload(client, alice, ndjson(*ROWS[:2]), key="public").json()
    assert (report["created"], report["errors"]) == (1, 1), report
    assert report["problems"][0]["message"] == "a public-only key cannot import a private or password-protected link"
    assert [link["slug"] for link in client.get(LINKS, headers=alice.auth()).json()["data"]] == ["one"]


@SQLITE_ONLY
@pytest.mark.parametrize(
    "kwargs, status, words",
    [
        ({"content": b"slug,destination_url\n", "headers": {"content-type": "text/csv"}}, 400, "multipart/form-data"),
        ({"data": {"format": "csv"}, "files": {"other": ("x", b"")}}, 422, "'file' field"),
        ({"data": {"format": "xml"}, "files": {"file": ("x", b"")}}, 422, "format must be one of"),
        ({"data": {"dry_run": "perhaps"}, "files": {"file": ("x", b"")}}, 422, "dry_run must be true or false"),
        ({"data": {"format": ""}, "files": {"file": ("x.csv", b"")}}, 422, "format must be one of"),
        ({"data": {"atomic": "true"}, "files": {"file": ("x", b"")}}, 422, "does not know: 'atomic'"),
        (
            {
                "content": b'--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nno end',
                "headers": {"content-type": "multipart/form-data; boundary=b"},
            },
            400,
            "closing delimiter",
        ),
    ],
)
def test_a_bad_upload_is_refused_in_words(
    client: TestClient, alice: Account, kwargs: dict[str, Any], status: int, words: str
) -> None:
    headers = {**alice.auth(), **kwargs.pop("headers", {})}
    got = client.post(IMPORT, headers=headers, **kwargs)
    assert got.status_code == status and words in got.json()["error"], got.text
    assert client.get(LINKS, headers=alice.auth()).json()["pagination"]["total"] == 0


@SQLITE_ONLY
def test_a_file_that_is_not_utf8_is_reported_and_not_read(client: TestClient, alice: Account) -> None:
    latin = "slug,destination_url,title\nlatin,https://a.example/,Été\n".encode("latin-1")
    bad = latin.index("É".encode("latin-1"))
    report = upload(client, alice, latin, name="x.csv").json()
    assert (report["created"], report["errors"]) == (0, 1), report
    assert report["problems"][0] == {
        "row": 0,
        "kind": "error",
        "message": f"the file is not UTF-8 text (byte {bad}): nothing was imported",
    }


@SQLITE_ONLY
def test_a_file_past_the_limit_is_413(
    client: TestClient, runtime: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime.settings, "import_max_mb", 1)
    got = upload(client, alice, b"slug,destination_url\n" + b"x" * (1 << 20), name="big.csv")
    assert got.status_code == 413 and "at most 1 MiB" in got.json()["error"]


@SQLITE_ONLY
def test_one_import_at_a_time_per_account(client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    me = client.get(f"{LINKS[: -len('/links')]}/me", headers=alice.auth()).json()
    assert me["username"] == "alice"
    monkeypatch.setattr(importing, "_running", {-1, -2})  # two imports of other accounts under way
    got = upload(client, alice, ndjson(ROWS[0]))
    assert got.status_code == 429 and got.headers["retry-after"] == "5", got.text


def test_the_parser_takes_a_body_split_anywhere(tmp_path: Any) -> None:
    """Every split of the body into two chunks, delimiters cut included, reads the same form."""
    body = (
        b"--XyZ\r\n"
        b'Content-Disposition: form-data; name="format"\r\n\r\nndjson\r\n'
        b"--XyZ\r\n"
        b'Content-Disposition: form-data; name="file"; filename="a.ndjson"\r\nContent-Type: text/plain\r\n\r\n'
        b'{"slug": "a"}\r\n--Xy\r\n\r\n'
        b"--XyZ--\r\n"
    )

    async def read(parts: list[bytes]) -> multipart.Upload:
        async def chunks() -> AsyncIterator[bytes]:
            for part in parts:
                yield part

        return await multipart.receive("multipart/form-data; boundary=XyZ", chunks(), "file", str(tmp_path), 1 << 20, 5)

    import anyio

    for cut in range(len(body) + 1):
        got = anyio.run(read, [body[:cut], body[cut:]])
        assert got.fields == {"format": "ndjson"} and got.filename == "a.ndjson", cut
        assert got.path is not None and got.path.read_bytes() == b'{"slug": "a"}\r\n--Xy\r\n', cut
        got.path.unlink()
