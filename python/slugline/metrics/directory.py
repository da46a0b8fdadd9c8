"""The directory the workers of `slugline serve` share their metric files in.

Apart from the rest of `slugline.metrics` because prometheus-client decides at import whether values go to files
(`PROMETHEUS_MULTIPROC_DIR` set) or stay in the process: `slugline serve` must set it before anything imports the
client, in its own process as in the workers it starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def private_dir() -> Iterator[str]:
    """A fresh directory only this user can read, set as `PROMETHEUS_MULTIPROC_DIR` for the workers to inherit, and
    removed with what is in it when `slugline serve` ends: every run starts from zero."""
    path = tempfile.mkdtemp(prefix="slugline-metrics-")
    os.environ[MULTIPROC_ENV] = path
    try:
        yield path
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)
