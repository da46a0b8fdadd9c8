"""Standard Webhooks signatures: `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,` and the base64
HMAC-SHA256 of `id.timestamp.body` under the endpoint's secret, the bytes the `whsec_` string encodes).

An endpoint's secret is never stored: it is an HMAC of the server secret over the endpoint's random salt, so the
database alone cannot sign (or forge) a delivery, and the secret is shown once, when it is made. Changing the
server secret changes every endpoint's secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
_CONTEXT = b"slugline webhook signing secret\x00"


def new_salt() -> str:
    return secrets.token_hex(16)


def key(server_secret: bytes, salt: str) -> bytes:
    """The endpoint's signing key (32 bytes)."""
    return hmac.new(server_secret, _CONTEXT + salt.encode(), hashlib.sha256).digest()


def secret_text(server_secret: bytes, salt: str) -> str:
    """The secret as the account is given it: `whsec_` and the key in base64."""
    return PREFIX + base64.b64encode(key(server_secret, salt)).decode()


def headers(signing_key: bytes, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers that sign `body` as message `message_id` sent at `timestamp` (seconds)."""
    mac = hmac.new(signing_key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
    }
