"""Every metric family Slugline exposes. Counters end in `_total`, durations in `_seconds`, sizes in `_bytes`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from slugline.fetch.fetcher import FETCH_OUTCOMES
from slugline.limits.buckets import RULES
from slugline.oauth.tokens import SCOPES
from slugline.webhooks.outbox import OUTCOMES as DELIVERY_OUTCOMES

# As `redirects.layer` counts them: `hit` and `miss` are redirects answered from the link cache or after reading the
# database; the password outcomes are those of password links; `gone` an expired or used-up link's end, `card` the
# preview page a link-preview crawler gets.
REDIRECT_OUTCOMES = (
    "hit",
    "miss",
    "not_found",
    "gone",
    "card",
    "password_form",
    "unlocked",
    "wrong_password",
    "password_limited",
    "password_timeout",
    "method_not_allowed",
    "error",
)
CACHES = ("redirect", "token", "search", "analytics")
BYTE_COUNTED = ("redirect", "search", "analytics")
FLUSH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# From an event to its delivery: a second or so while receivers answer (clicks wait for their endpoint's turn), up
# to the 24 h of back-off of a receiver that was down.
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0)


class Families:
    """Made once per worker. `registry` is None in multiprocess mode: the values go to the worker's files, and a
    scrape reads every worker's files instead (`exposition.render`)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
            # The sum over the workers alive: a dead worker's buffer or cache is gone with it.
            return Gauge(name, doc, labels, registry=registry, multiprocess_mode="livesum")

        self.requests = Histogram(
            "slugline_http_request_duration_seconds",
            "API, dashboard and MCP requests by method, route template and status, and how long they took",
            ("method", "route", "status"),
            registry=registry,
        )
        self.redirects = counter("slugline_redirects_total", "Redirect requests (/{slug}) by outcome", ("outcome",))
        self.clicks_recorded = counter("slugline_clicks_recorded_total", "Clicks written to the database")
        self.clicks_dropped = counter("slugline_clicks_dropped_total", "Clicks dropped: buffer full, or refused rows")
        self.clicks_pending = gauge("slugline_clicks_pending", "Clicks buffered, not yet written")
        self.click_flush = Histogram(
            "slugline_click_flush_seconds",
            "Time to write one batch of clicks",
            registry=registry,
            buckets=FLUSH_BUCKETS,
        )
        self.cache_hits = counter("slugline_cache_hits_total", "Cache lookups answered from the cache", ("cache",))
        self.cache_misses = counter("slugline_cache_misses_total", "Cache lookups that had to read", ("cache",))
        self.cache_evictions = counter("slugline_cache_evictions_total", "Entries pushed out for room", ("cache",))
        self.cache_bytes = gauge("slugline_cache_bytes", "Bytes a cache holds (search: the search indexes)", ("cache",))
        self.cache_entries = gauge("slugline_cache_entries", "Entries a cache holds", ("cache",))
        self.db_pool_in_use = gauge("slugline_db_pool_connections_in_use", "Database connections checked out")
        self.db_pool_size = gauge("slugline_db_pool_connections", "Database connections open (in use or idle)")
        self.refusals = counter(
            "slugline_rate_limit_refusals_total", "Calls refused by a rate limit, by rule", ("rule",)
        )
        self.fetches = counter("slugline_fetches_total", "URL metadata fetches by outcome", ("outcome",))
        self.oauth_grants = counter("slugline_oauth_grants_total", "OAuth grants approved, by scope", ("scope",))
        self.webhook_deliveries = counter(
            "slugline_webhook_deliveries_total",
            "Webhook delivery attempts by outcome: delivered, retried, disabled (the endpoint), failed",
            ("outcome",),
        )
        # The same count of the shared outbox, read by every worker: the one read last is shown, not their sum.
        self.webhook_pending = Gauge(
            "slugline_webhook_messages_pending",
            "Webhook messages waiting in the outbox (due, under way, or after a back-off)",
            registry=registry,
            multiprocess_mode="livemostrecent",
        )
        self.webhook_attempt = Histogram(
            "slugline_webhook_attempt_seconds",
            "Time of one delivery attempt, from resolving the endpoint to its answer",
            registry=registry,
            buckets=FLUSH_BUCKETS,
        )
        self.webhook_lag = Histogram(
            "slugline_webhook_delivery_lag_seconds",
            "Time from an event (a link change, a click batch written) to its delivery",
            registry=registry,
            buckets=LAG_BUCKETS,
        )
        self._known_labels()

    def _known_labels(self) -> None:
        """Every label value known in advance is shown from the start, at 0: a rate() needs the series before the
        first event, and a family with no series at all would be missing from the scrape."""
        for counter, values in (
            (self.redirects, REDIRECT_OUTCOMES),
            (self.refusals, sorted(set(RULES.values()))),
            (self.fetches, FETCH_OUTCOMES),
            (self.oauth_grants, SCOPES),
            (self.webhook_deliveries, DELIVERY_OUTCOMES),
            (self.cache_hits, CACHES),
            (self.cache_misses, CACHES),
            (self.cache_evictions, CACHES),
        ):
            for value in values:
                counter.labels(value)
        for cache in CACHES:
            self.cache_entries.labels(cache)
        for cache in BYTE_COUNTED:
            self.cache_bytes.labels(cache)
