"""An authorization request waiting for the owner's consent, carried in the consent page's URL and form, signed
with the server secret so that nothing about it is stored and it cannot be altered on the way."""

from __future__ import annotations

import base64
import hmac
import time
from dataclasses import asdict, dataclass

import orjson

from slugline import _core
from slugline.runtime import Runtime

LIFETIME = 600  # seconds the owner has to sign in and decide


@dataclass(frozen=True, slots=True)
class Pending:
    client_id: str
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    state: str | None
    scope: str  # the scopes the client asked for, space-separated ("" when none)
    resource: str
    issued_at: float = 0.0


def _mac(rt: Runtime, payload: str) -> str:
    return _core.keyed_hash(rt.secret, f"oauth-request:{payload}")


def sign(rt: Runtime, request: Pending) -> str:
    data = {**asdict(request), "issued_at": time.time()}
    payload = base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")
    return f"{payload}.{_mac(rt, payload)}"


def verify(rt: Runtime, signed: str) -> Pending | None:
    """The request, or None if it was altered, is malformed or is older than LIFETIME."""
    payload, _, mac = signed.partition(".")
    if len(signed) > 16_384 or not hmac.compare_digest(mac.encode(), _mac(rt, payload).encode()):
        return None
    try:
        request = Pending(**orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))
    except (ValueError, TypeError):
        return None
    return request if time.time() - request.issued_at <= LIFETIME else None
