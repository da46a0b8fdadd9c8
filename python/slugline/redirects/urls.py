"""URLs on the redirect path: the destination with the short URL's query merged in, as an ASCII `Location`."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

URL_SAFE = "!#$%&'()*+,-./:;=?@[]_~"  # everything a valid URL may hold unescaped; the rest is percent-encoded


def merge_query(destination: str, query: bytes) -> tuple[bytes, str | None, bool]:
    """The destination with the short URL's query merged in (the short URL's values win); `src=qr` is dropped
    and reported as a QR scan. Also returns `utm_source`, for the click's source."""
    pairs = parse_qsl(query.decode("utf-8", "replace"), keep_blank_values=True)
    via_qr = ("src", "qr") in pairs
    pairs = [pair for pair in pairs if pair != ("src", "qr")]
    utm = next((value for key, value in pairs if key == "utm_source"), None)
    if pairs:
        parts = urlsplit(destination)
        keys = {key for key, _ in pairs}
        own = parts.query
        if own and any(key in keys for key, _ in parse_qsl(own, keep_blank_values=True)):
            own = urlencode([pair for pair in parse_qsl(own, keep_blank_values=True) if pair[0] not in keys])
        destination = urlunsplit(parts._replace(query="&".join(filter(None, [own, urlencode(pairs)]))))
    return ascii_url(destination).encode("ascii"), utm, via_qr


def ascii_url(url: str) -> str:
    """The URL as ASCII for a `Location` header: IDNA host, everything else percent-encoded as UTF-8."""
    if not url.isascii():
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 literal: ASCII already, and it keeps its brackets
            host = f"[{quote(host, safe=':.%')}]"
        else:
            try:
                host = host.encode("idna").decode("ascii")
            except UnicodeError:
                host = quote(host, safe="")
        netloc = host if parts.port is None else f"{host}:{parts.port}"
        url = urlunsplit(parts._replace(netloc=netloc))
    return quote(url, safe=URL_SAFE)
