"""The storage layer: the engine, migrations, and the event-loop reader and writer (see README.md here)."""
