"""Small MMDB files with known ranges, IPv4 and IPv6, written with `mmdb-writer` for the GeoIP tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmdb_writer import MMDBWriter
from netaddr import IPSet

# Addresses the test database places (documentation and real-looking ranges alike).
PARIS_V4, BERLIN_V4, LYON_V6, BERLIN_V6 = "81.56.1.2", "5.61.7.8", "2a01:cb00::1", "2003:e0::9"
UNKNOWN_V4 = "198.51.100.7"


def place(country: str, city: str | None = None, region: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"country": {"iso_code": country, "names": {"en": country}}}
    if city is not None:
        found["city"] = {"names": {"en": city}}
    if region is not None:
        found["subdivisions"] = [{"iso_code": "X", "names": {"en": region}}]
    return found


def write_db(path: Path, kind: str = "GeoLite2-City", ranges: dict[str, dict[str, Any]] | None = None) -> Path:
    """An MMDB file at `path` (IPv6 tree with IPv4 mapped in) holding `ranges`, by default the test places."""
    writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type=kind, languages=["en"])
    for network, data in (ranges or default_ranges()).items():
        writer.insert_network(IPSet([network]), data)
    writer.to_db_file(str(path))
    return path


def default_ranges() -> dict[str, dict[str, Any]]:
    return {
        "81.56.0.0/16": place("FR", "Paris", "Île-de-France"),
        "5.61.0.0/16": place("DE", "Berlin", "Land Berlin"),
        "2a01:cb00::/32": place("FR", "Lyon", "Auvergne-Rhône-Alpes"),
        "2003:e0::/32": place("DE", "Berlin", "Land Berlin"),
    }
