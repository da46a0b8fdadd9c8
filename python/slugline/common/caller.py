"""Who is calling: the account and token scope behind a request, as every service function receives it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

TokenScope = Literal["full", "public", "session"]


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated account behind a request, and the base of the short URLs it should see."""

    account_id: int
    username: str
    plan: str
    scope: TokenScope
    created_at: datetime
    base_url: str = "http://localhost"

    @property
    def public_only(self) -> bool:
        return self.scope == "public"
