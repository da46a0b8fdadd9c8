"""The webhook tests' receiver: a real HTTP server that verifies every delivery with `standardwebhooks`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r
