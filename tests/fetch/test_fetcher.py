import asyncio
import datetime
import ipaddress
import socket
import ssl
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from slugline.fetch import fetcher
from slugline.fetch.fetcher import PageMeta, UnsafeURLError, fetch_metadata
from tests.support.helpers import SQLITE_ONLY, ClientFactory
from tests.support.webpages import LOOPBACK, PageServer, respond, serve_pages

PAGE = b"""<!doctype html><html><head><meta charset="utf-8">
<title>  Plain   title </title>
<meta property="og:title" content="  The   OG title ">
<meta name="description" content="Plain description">
<meta property="og:description" content="OG description">
<meta property="og:image" content="/img/card.png">
<meta property="og:site_name" content="Example">
<link rel="Shortcut Icon" href="static/fav.ico">
</head><body><p>hello</p></body></html>"""


@pytest.fixture
async def server() -> AsyncIterator[PageServer]:
    async for srv in serve_pages("127.0.0.1"):
        yield srv


@pytest.fixture
async def other_server() -> AsyncIterator[PageServer]:
    async for srv in serve_pages("127.0.0.2"):
        yield srv


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a00:1]/",
        "http://[2002:7f00:1::]/",
        "http://[fe80::1]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
    ],
)
@pytest.mark.anyio
async def test_non_public_addresses_are_refused(url: str) -> None:
    with pytest.raises(UnsafeURLError, match="private or reserved"):
        await fetch_metadata(url)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/", "absolute http"),
        ("javascript:alert(1)", "absolute http"),
        ("file:///etc/passwd", "absolute http"),
        ("/relative/path", "absolute http"),
        ("example.com/page", "absolute http"),
        ("http://user:pass@example.com/", "credentials"),
        ("http://user@example.com/", "credentials"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com:99999/", "invalid host or port"),
        ("http:///path", "absolute http"),
        ("http://example.com/" + "a" * 2048, "2048"),
        ("http://[abc/", "not a valid URL"),
        ("http://[::1/", "not a valid URL"),
        ("https://[x]/", "not a valid URL"),
    ],
)
@pytest.mark.anyio
async def test_invalid_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(UnsafeURLError, match=message):
        await fetch_metadata(url)


@pytest.mark.anyio
async def test_name_resolving_to_loopback_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(fetcher, "_resolve", resolve)
    with pytest.raises(UnsafeURLError, match="private or reserved address, which is not allowed") as refused:
        await fetch_metadata("http://evil.test/")
    assert "127.0.0.1" not in str(refused.value)  # what an internal name resolves to is not told


@pytest.mark.anyio
async def test_public_host_redirecting_to_private_is_refused(server: PageServer, other_server: PageServer) -> None:
    server.routes["/"] = respond(200, PAGE, content_type="text/html")
    other_server.routes["/go"] = respond(302, location=server.url("/"))
    with pytest.raises(UnsafeURLError, match="redirects"):
        await fetch_metadata(other_server.url("/go"), allow_networks=[ipaddress.ip_network("127.0.0.2/32")])
    assert server.seen == []


@pytest.mark.anyio
async def test_redirect_to_other_scheme_is_refused(server: PageServer) -> None:
    server.routes["/go"] = respond(301, location="file:///etc/passwd")
    with pytest.raises(UnsafeURLError, match="redirects"):
        await fetch_metadata(server.url("/go"), allow_networks=LOOPBACK)


@pytest.mark.anyio
async def test_reads_open_graph_metadata(server: PageServer) -> None:
    server.routes["/page"] = respond(200, PAGE, content_type="text/html; charset=utf-8")
    meta = await fetch_metadata(server.url("/page"), allow_networks=LOOPBACK)
    assert meta == PageMeta(
        url=server.url("/page"),
        final_url=server.url("/page"),
        status=200,
        content_type="text/html; charset=utf-8",
        title="The OG title",
        description="OG description",
        image=server.url("/img/card.png"),
        favicon=server.url("/static/fav.ico"),
        site_name="Example",
        redirects=[],
        reachable=True,
    )
    assert meta.to_dict()["title"] == "The OG title"
    _, headers = server.seen[0]
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert headers["user-agent"].startswith("Slugline/")


@pytest.mark.anyio
async def test_falls_back_to_title_tag_and_default_favicon(server: PageServer) -> None:
    long_title = "word " * 100
    body = f"<html><head><title>\n {long_title}</title><meta name=description content='caf\xe9'></head></html>"
    server.routes["/"] = respond(200, body.encode("latin-1"), content_type="text/html; charset=ISO-8859-1")
    meta = await fetch_metadata(server.url("/"), allow_networks=LOOPBACK)
    assert meta.title == " ".join(long_title.split())[:255]
    assert meta.description == "caf\xe9"
    assert meta.favicon == server.url("/favicon.ico")
    assert meta.image is None and meta.site_name is None


@pytest.mark.anyio
async def test_connects_to_the_checked_address_with_the_original_host(
    server: PageServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [[ipaddress.ip_address("127.0.0.1")], [ipaddress.ip_address("10.0.0.1")]]

    async def rebinding_resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        assert (host, port) == ("site.test", server.port)
        return answers.pop(0)

    monkeypatch.setattr(fetcher, "_resolve", rebinding_resolve)
    server.routes["/page"] = respond(200, PAGE, content_type="text/html")
    meta = await fetch_metadata(f"http://site.test:{server.port}/page", allow_networks=LOOPBACK)
    assert meta.reachable and meta.title == "The OG title"
    assert meta.image == f"http://site.test:{server.port}/img/card.png"
    assert server.seen[0][1]["host"] == f"site.test:{server.port}"
    assert len(answers) == 1  # resolved once, never a second lookup


@pytest.mark.anyio
async def test_follows_redirect_chain(server: PageServer) -> None:
    server.routes["/a"] = respond(302, location="/b")
    server.routes["/b"] = respond(301, location=server.url("/page?x=1"))
    server.routes["/page?x=1"] = respond(200, PAGE, content_type="text/html")
    meta = await fetch_metadata(server.url("/a"), allow_networks=LOOPBACK)
    assert meta.redirects == [server.url("/b"), server.url("/page?x=1")]
    assert meta.final_url == server.url("/page?x=1")
    assert (meta.status, meta.reachable, meta.title) == (200, True, "The OG title")


@pytest.mark.anyio
async def test_too_many_redirects(server: PageServer) -> None:
    server.routes["/loop"] = respond(302, location="/loop")
    meta = await fetch_metadata(server.url("/loop"), allow_networks=LOOPBACK, max_redirects=3)
    assert not meta.reachable
    assert meta.fetch_error == "too many redirects (more than 3)"
    assert len(meta.redirects) == 3 and len(server.seen) == 4


@pytest.mark.anyio
async def test_non_html_is_reachable_without_metadata(server: PageServer) -> None:
    server.routes["/data"] = respond(200, b'{"title": "no"}', content_type="application/json")
    meta = await fetch_metadata(server.url("/data"), allow_networks=LOOPBACK)
    assert (meta.reachable, meta.status, meta.content_type) == (True, 200, "application/json")
    assert meta.title is None and meta.favicon is None and meta.fetch_error is None


@pytest.mark.anyio
async def test_endless_body_is_read_only_up_to_max_bytes(server: PageServer) -> None:
    async def endless(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><head><title>Big</title></head><body>")
        while not server.stop.is_set():
            writer.write(b"<p>" + b"x" * 65536 + b"</p>")
            await writer.drain()

    server.routes["/big"] = endless
    meta = await fetch_metadata(server.url("/big"), allow_networks=LOOPBACK, max_bytes=200_000, timeout=5)
    assert meta.reachable and meta.title == "Big"


@pytest.mark.anyio
async def test_silent_server_times_out(server: PageServer) -> None:
    async def silent(writer: asyncio.StreamWriter) -> None:
        await server.stop.wait()

    server.routes["/"] = silent
    started = time.monotonic()
    meta = await fetch_metadata(server.url("/"), allow_networks=LOOPBACK, timeout=0.5)
    assert time.monotonic() - started < 3
    assert not meta.reachable and meta.fetch_error == "timed out after 0.5 s"


@pytest.mark.anyio
async def test_closed_port_is_unreachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    meta = await fetch_metadata(f"http://127.0.0.1:{port}/", allow_networks=LOOPBACK, timeout=2)
    assert not meta.reachable and meta.fetch_error and meta.fetch_error.startswith("could not connect")
    assert meta.status is None


@pytest.mark.anyio
async def test_unresolvable_name_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    async def resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(fetcher, "_resolve", resolve)
    meta = await fetch_metadata("http://nowhere.invalid/")
    assert (meta.reachable, meta.fetch_error) == (False, "could not resolve host")


def self_signed(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a self-signed certificate for `name`, and a client context trusting only it."""
    pytest.importorskip("cryptography", reason="cryptography is needed to make a test certificate")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "cert.pem").write_bytes(pem)
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return server, ssl.create_default_context(cadata=pem.decode())


@pytest.mark.anyio
async def test_tls_verifies_the_url_host_not_the_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server_tls, client_tls = self_signed(tmp_path, "secure.test")

    async def resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(fetcher, "_resolve", resolve)
    async for srv in serve_pages("127.0.0.1", server_tls):
        srv.routes["/"] = respond(200, PAGE, content_type="text/html")
        named = await fetch_metadata(
            f"https://secure.test:{srv.port}/", allow_networks=LOOPBACK, ssl_context=client_tls
        )
        assert named.reachable and named.title == "The OG title"
        for other in (f"https://other.test:{srv.port}/", srv.url("/").replace("http:", "https:")):
            mismatch = await fetch_metadata(other, allow_networks=LOOPBACK, ssl_context=client_tls)
            assert not mismatch.reachable and mismatch.fetch_error
            assert mismatch.fetch_error.startswith("TLS error:") and "mismatch" in mismatch.fetch_error
        untrusted = await fetch_metadata(f"https://secure.test:{srv.port}/", allow_networks=LOOPBACK)
        assert (untrusted.reachable, untrusted.fetch_error) == (False, "TLS error: self-signed certificate")
        assert [path for path, _ in srv.seen] == ["/"]


@pytest.mark.anyio
async def test_garbage_response_is_unreachable(server: PageServer) -> None:
    async def garbage(writer: asyncio.StreamWriter) -> None:
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()

    server.routes["/"] = garbage
    meta = await fetch_metadata(server.url("/"), allow_networks=LOOPBACK)
    assert not meta.reachable and meta.fetch_error and meta.fetch_error.startswith("invalid HTTP response")


@SQLITE_ONLY
def test_analyze_refuses_an_unparseable_url_with_422(client: TestClient) -> None:
    for url in ("http://[abc/", "https://[::1/page"):
        res = client.get("/api/v1/analyze", params={"url": url})
        assert res.status_code == 422, res.text
        assert res.json()["error"].startswith("url must be an http(s) URL"), res.text  # refused before any fetch


@pytest.mark.anyio
async def test_unparseable_links_in_the_page_are_skipped(server: PageServer) -> None:
    page = b"""<html><head><title>Broken links</title>
<meta property="og:image" content="http://[x/"><link rel="icon" href="//[::1/fav.ico"></head></html>"""
    server.routes["/"] = respond(200, page, content_type="text/html; charset=utf-8")
    meta = await fetch_metadata(server.url("/"), allow_networks=LOOPBACK)
    assert (meta.reachable, meta.title, meta.image, meta.favicon) == (True, "Broken links", None, None)


@pytest.mark.parametrize("charset", ["idna", "undefined", "punycode", "rot13", "hex", "base64", "zlib", "no-such"])
@pytest.mark.anyio
async def test_non_text_or_failing_charsets_fall_back_to_utf8(server: PageServer, charset: str) -> None:
    body = "<html><head><title>Caf\u00e9 \u2603</title></head><body>\xff\xfe</body></html>".encode()
    server.routes["/header"] = respond(200, body + b"\xff", content_type=f"text/html; charset={charset}")
    server.routes["/meta"] = respond(200, f'<meta charset="{charset}">'.encode() + body, content_type="text/html")
    for path in ("/header", "/meta"):
        meta = await fetch_metadata(server.url(path), allow_networks=LOOPBACK)
        assert (meta.reachable, meta.title, meta.fetch_error) == (True, "Caf\u00e9 \u2603", None), path


@pytest.mark.anyio
async def test_text_charsets_are_still_honoured(server: PageServer) -> None:
    body = "<html><head><title>\u041f\u0440\u0438\u0432\u0435\u0442</title></head></html>"
    server.routes["/"] = respond(200, body.encode("koi8-r"), content_type="text/html; charset=KOI8-R")
    meta = await fetch_metadata(server.url("/"), allow_networks=LOOPBACK)
    assert meta.title == "\u041f\u0440\u0438\u0432\u0435\u0442"


@pytest.mark.parametrize("location", ["http://[x/", "//[::1/elsewhere", "https://[2001:db8::1/"])
@pytest.mark.anyio
async def test_unparseable_redirect_location_is_a_fetch_error(server: PageServer, location: str) -> None:
    server.routes["/go"] = respond(302, location=location)
    meta = await fetch_metadata(server.url("/go"), allow_networks=LOOPBACK)
    assert (meta.reachable, meta.status, meta.fetch_error) == (False, 302, "invalid redirect location")
    assert meta.redirects == [] and [path for path, _ in server.seen] == ["/go"]


@SQLITE_ONLY
@pytest.mark.parametrize("url", ["http://intranet.corp.example/", "http://intranet.corp.example:8080/x"])
def test_anonymous_analyze_never_tells_what_an_internal_name_resolves_to(
    make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    async def resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        return [ipaddress.ip_address("10.20.30.40"), ipaddress.ip_address("fd12:3456::7")]

    monkeypatch.setattr(fetcher, "_resolve", resolve)
    strict, _ = make_client(fetch_allow_private=False)
    res = strict.get("/api/v1/analyze", params={"url": url})
    assert res.status_code == 422
    assert res.json() == {"error": "url: url resolves to a private or reserved address, which is not allowed"}


@pytest.mark.anyio
async def test_a_redirect_to_an_internal_name_does_not_tell_its_address(
    server: PageServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = fetcher._resolve

    async def resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        return [ipaddress.ip_address("10.20.30.40")] if host == "intranet.corp.example" else await real(host, port)

    monkeypatch.setattr(fetcher, "_resolve", resolve)
    server.routes["/go"] = respond(302, location="http://intranet.corp.example/admin")
    with pytest.raises(UnsafeURLError, match="redirects to a refused location") as refused:
        await fetch_metadata(server.url("/go"), allow_networks=LOOPBACK)
    assert "10.20.30.40" not in str(refused.value)
