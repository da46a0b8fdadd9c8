"""Password links and the redirect hot path: `/{slug}` answered before any framework routing."""
