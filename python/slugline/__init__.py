"""Slugline: self-hostable link management with a REST API and a remote MCP endpoint."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("slugline")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
