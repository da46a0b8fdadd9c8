"""Rate limits and concurrency caps: token buckets, which buckets a call draws from, per-key gates."""
