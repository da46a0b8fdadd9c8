"""The Grafana dashboard in docs/ queries only series a scrape has: a renamed family would leave a panel empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.helpers import SQLITE_ONLY, ClientFactory

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "slugline.json"
SERIES = re.compile(r"\bslugline_[a-z_]+")
TOKEN = "grafana-token-" + "g" * 24


@SQLITE_ONLY
def test_every_panel_queries_series_a_scrape_has(make_client: ClientFactory) -> None:
    client, _ = make_client(metrics_token=TOKEN)
    client.get("/api/v1/health")  # a request, so that the request histogram has a series
    text = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    scraped = {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}
    dashboard = json.loads(DASHBOARD.read_text())
    queried = {
        name for panel in dashboard["panels"] for target in panel["targets"] for name in SERIES.findall(target["expr"])
    }
    assert queried, "no queries found"
    assert queried <= scraped, queried - scraped
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])
