"""Password links: the form, checking a submitted password, and the signed per-link unlock cookie.

The cookie holds only an expiry and an HMAC (server secret) over the link id, the link's password hash and
that expiry: it never carries the password, and changing the password (a new hash) voids every cookie.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from html import escape
from typing import Any
from urllib.parse import parse_qs

from slugline import _core
from slugline.common.errors import PayloadTooLarge
from slugline.limits import rules as limits
from slugline.limits.buckets import Decision
from slugline.redirects.linkcache import Entry
from slugline.runtime import Runtime
from slugline.web.request import collect

COOKIE_SECONDS = 24 * 3600
MAX_FORM = 4096

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Password required</title>
<style>body{{font-family:system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem}}
input,button{{font-size:1rem;padding:.4rem}} .error{{color:#b00020}}</style></head>
<body><main><h1>This link is password-protected</h1>
{message}<form method="post" action="{action}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required autofocus{invalid}>
<button type="submit">Continue</button>
</form></main></body></html>
"""


def form_page(slug: str, query: bytes, message: str = "") -> bytes:
    action = f"/{slug}" + (f"?{query.decode('latin-1')}" if query else "")
    note = f'<p class="error" id="problem" role="alert">{escape(message)}</p>\n' if message else ""
    invalid = ' aria-invalid="true" aria-describedby="problem"' if message else ""
    return PAGE.format(message=note, action=escape(action), invalid=invalid).encode()


async def read_form(receive: Any, timeout: float) -> dict[str, list[str]] | None:  # noqa: ASYNC109
    """The url-encoded body; None when it is larger than a password form can be, or the client left. RequestTimeout
    (408) unless it has all arrived within `timeout` seconds."""
    try:
        body = await collect(receive, MAX_FORM, timeout)
    except PayloadTooLarge:
        return None
    return None if body is None else parse_qs(body.decode("utf-8", "replace"))


class Unlocker:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._secret = rt.secret

    def _signature(self, entry: Entry, expires: int) -> str:
        return _core.keyed_hash(self._secret, f"unlock\n{entry.link_id}\n{entry.password_hash}\n{expires}")

    @staticmethod
    def cookie_name(entry: Entry) -> str:
        return f"slu_{entry.link_id}"

    def is_unlocked(self, entry: Entry, cookie_header: bytes) -> bool:
        prefix = self.cookie_name(entry).encode() + b"="
        for part in cookie_header.split(b";"):
            part = part.strip()
            if not part.startswith(prefix):
                continue
            expires, _, signature = part[len(prefix) :].partition(b".")
            # isdigit() alone takes "²" and any length; only a plain ASCII number can be an expiry we signed.
            if not (expires.isascii() and expires.isdigit() and len(expires) <= 12) or int(expires) <= time.time():
                continue
            if hmac.compare_digest(signature, self._signature(entry, int(expires)).encode("ascii")):
                return True
        return False

    def cookie(self, entry: Entry, slug: str, secure: bool) -> bytes:
        expires = int(time.time()) + COOKIE_SECONDS
        value = f"{expires}.{self._signature(entry, expires)}"
        flags = f"Max-Age={COOKIE_SECONDS}; Path=/{slug}; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")
        return f"{self.cookie_name(entry)}={value}; {flags}".encode()

    async def form(self, receive: Any) -> dict[str, list[str]] | None:
        return await read_form(receive, self._rt.settings.body_timeout_seconds)

    async def attempt(self, entry: Entry, ip: str) -> Decision:
        return await limits.unlock_attempt(self._rt, ip, entry.link_id)

    @staticmethod
    async def check(entry: Entry, password: str) -> bool:
        if not password or not entry.password_hash:
            return False
        try:  # argon2 takes tens of milliseconds and releases the GIL: keep it off the event loop
            return await asyncio.to_thread(_core.verify_password, password, entry.password_hash)
        except _core.CoreError:
            return False
