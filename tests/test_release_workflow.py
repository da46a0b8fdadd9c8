"""`.github/workflows/release.yml` is a valid GitHub workflow (check-jsonschema ships the schema: no network) and
builds every platform that `make wheel` cannot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "release.yml"
# the sdist, Linux aarch64 (glibc and musl), macOS Intel and Apple silicon, Windows x64, and the upload
NEEDED = ("command: sdist", "target: aarch64", "musllinux_1_2", "macos-15-intel", "macos-latest", "windows-latest")


def test_release_workflow_matches_the_github_schema() -> None:
    args = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)]
    res = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_release_workflow_builds_the_platforms_made_elsewhere() -> None:
    text = WORKFLOW.read_text()
    assert [needed for needed in NEEDED if needed not in text] == []
