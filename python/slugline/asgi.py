"""The ASGI entry point Granian serves: `slugline.asgi:app`."""

from slugline.app import create_app

app = create_app()
