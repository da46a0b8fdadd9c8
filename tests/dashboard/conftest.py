"""The dashboard tests' fixture: a test client signed in through the forms."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.runtime import Runtime
from tests.dashboard.pages import sign_up


@pytest.fixture
def owner(client: TestClient, runtime: Runtime) -> TestClient:
    """The test client signed in (through the form) as an account on the developer plan."""
    sign_up(client, "ada")
    accounts.set_plan(runtime, "ada", "developer")
    return client
