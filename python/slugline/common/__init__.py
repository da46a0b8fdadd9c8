"""Building blocks every layer shares: models, input and output schemas, bounds, patterns, visibility, errors, time."""
