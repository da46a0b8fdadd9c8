"""Prometheus metrics: `GET /metrics` with `SLUGLINE_METRICS_TOKEN`, or a separate address with `SLUGLINE_METRICS_BIND`.

- `families`: every family, named `slugline_...` with its unit.
- `fold`: what each worker counts, brought into the families. Requests of the API, dashboard and MCP are observed as
  they are answered; everything else (redirects, clicks, caches, the pool, refusals, fetches, grants) is counted in
  plain ints where it happens and added to the families once a second, and when this worker is scraped, so that a
  redirect pays no shared-memory write.
- `exposition`: the text format, the token check, the multiprocess directory of `slugline serve` and the scrape
  server of `SLUGLINE_METRICS_BIND`.

Across Granian workers the values live in prometheus-client's multiprocess files: `slugline serve` points
`PROMETHEUS_MULTIPROC_DIR` at a fresh private directory before the workers start, each worker writes its own files,
and a scrape sums them, dropping the live gauges of workers that have died.
"""
