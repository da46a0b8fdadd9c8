"""Search: the per-account indexes behind `q` and `/search`, their change feed, and ranked search."""
