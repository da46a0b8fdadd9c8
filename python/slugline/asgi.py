"""The ASGI entry point Granian serves: `slugline.asgi:app`."""

from slugline.api.app import create_app

app = create_app()
