"""The click pipeline: the in-memory buffer the redirects feed, and the batch writer behind it."""
