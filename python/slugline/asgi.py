"""The ASGI entry point Granian serves: `slugline.asgi:app`.

Logging is configured here, before the app is built, so that the MCP SDK's own `logging.basicConfig` (a rich
handler with rich tracebacks) finds the root logger taken and does nothing: rendering one rich traceback of a
database error took ~1 s of a worker's event loop, and the click flusher logs one every second while the disk is
full, so every redirect not already cached waited that long. The format is `SLUGLINE_LOG_FORMAT`'s (see
`slugline.web.logs`)."""

from slugline.app import create_app
from slugline.settings import get_settings
from slugline.web import logs

logs.configure(get_settings())
app = create_app()
