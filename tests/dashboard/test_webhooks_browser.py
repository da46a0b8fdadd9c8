"""The Webhooks page in a real Chromium against a real `slugline serve`: an endpoint added through the form, its
secret copied from the page verifies the delivery of a link made in the dashboard, the log shows it, and "Send
again" delivers the same message id once more."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.browser import create_link, served, sign_up_developer, until
from tests.support.receiver import Receiver

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from tests.support.server import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    env = {
        "SLUGLINE_WEBHOOKS_ALLOW_PRIVATE": "true",
        "SLUGLINE_WEBHOOKS_POLL_SECONDS": "0.2",
        "SLUGLINE_RATE_LIMIT_ANONYMOUS": "100000",
    }
    with served(tmp_path, **env) as running:
        yield running


def test_an_endpoint_made_in_the_dashboard_hears_a_link_and_sends_it_again(page: Page, server: Server) -> None:
    sign_up_developer(page, server)
    with Receiver() as rx:
        page.get_by_role("link", name="Webhooks").click()
        page.get_by_label("URL").fill(rx.url)
        for kind in ("link.updated", "link.deleted", "link.expired", "link.clicked"):
            page.get_by_label(kind).uncheck()
        page.get_by_role("button", name="Add endpoint").click()
        rx.secret = page.get_by_label(re.compile("Signing secret")).input_value()
        assert rx.secret.startswith("whsec_")
        link_id = create_link(page, server, **{"Destination URL": "https://example.com/hooked"})
        rx.wait_for(lambda events: len(events) == 1)
        [event] = rx.events.values()
        assert event["type"] == "link.created" and event["data"]["id"] == link_id
        page.get_by_role("link", name="Webhooks").click()
        page.get_by_role("link", name=rx.url).click()
        until(lambda: page.reload() or page.get_by_role("cell", name="200").count(), "the delivery in the log")
        page.get_by_role("button", name="Send again").first.click()
        assert "is queued to be sent again" in page.get_by_role("status").inner_text()
        until(lambda: len(rx.arrivals) == 2, "the message sent again")
        assert rx.arrivals[0][0] == rx.arrivals[1][0]
