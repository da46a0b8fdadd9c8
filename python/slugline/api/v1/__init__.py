"""REST API v1: one router per resource, each a thin translation of the concepts' operations."""
