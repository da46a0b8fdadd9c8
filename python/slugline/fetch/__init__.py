"""Fetching a page's metadata without reaching private addresses, and `/analyze` on top of it."""
