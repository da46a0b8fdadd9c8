"""The GeoIP database: read from an MMDB file (IPv4 and IPv6, Country or City), read again when the file changes,
a broken file keeps the database loaded; CDN country headers reduced to ISO codes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slugline import _core
from slugline.clicks.geo import GeoIp, country_code, header_names
from tests.support.geodb import BERLIN_V6, LYON_V6, PARIS_V4, UNKNOWN_V4, place, write_db


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_places_of_ipv4_and_ipv6_addresses(tmp_path: Path) -> None:
    geo = GeoIp(str(write_db(tmp_path / "city.mmdb")))
    assert geo.db is not None and geo.db.has_cities and geo.db.kind == "GeoLite2-City"
    assert geo.place(PARIS_V4) == ("FR", "Île-de-France", "Paris")
    assert geo.place(LYON_V6) == ("FR", "Auvergne-Rhône-Alpes", "Lyon")
    assert geo.country(BERLIN_V6) == "DE"
    assert geo.country(UNKNOWN_V4) is None and geo.country("not an address") is None
    assert geo.country(f"[{LYON_V6}]") == "FR" and geo.country("::ffff:81.56.1.2") in ("FR", None)


def test_a_country_database_has_no_cities(tmp_path: Path) -> None:
    ranges = {"81.56.0.0/16": place("FR")}
    geo = GeoIp(str(write_db(tmp_path / "country.mmdb", "DBIP-Country-Lite", ranges)))
    assert geo.db is not None and not geo.db.has_cities
    assert geo.place(PARIS_V4) == ("FR", None, None)


def test_the_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = write_db(tmp_path / "geo.mmdb", ranges={"81.56.0.0/16": place("FR")})
    clock = Clock()
    geo = GeoIp(str(path), clock=clock)
    assert geo.country(PARIS_V4) == "FR"
    write_db(tmp_path / "next.mmdb", ranges={"81.56.0.0/16": place("BE")}).replace(path)
    os.utime(path, ns=(1, 10**18))  # a different modification time whatever the file system's resolution
    assert geo.country(PARIS_V4) == "FR", "not looked at again before RECHECK seconds"
    clock.now += 5
    assert geo.country(PARIS_V4) == "BE"
    broken = tmp_path / "broken.mmdb"
    broken.write_bytes(b"not an mmdb file")
    broken.replace(path)
    clock.now += 5
    assert geo.country(PARIS_V4) == "BE", "a broken file put in its place keeps the database loaded"
    path.unlink()
    clock.now += 5
    assert geo.country(PARIS_V4) == "BE"


def test_the_file_is_mapped_and_a_rewrite_in_place_is_not_read_through_the_old_map(tmp_path: Path) -> None:
    path = write_db(tmp_path / "geo.mmdb", ranges={"81.56.0.0/16": place("FR")})
    clock = Clock()
    geo = GeoIp(str(path), clock=clock)
    assert geo.db is not None and geo.db.mapped and geo.country(PARIS_V4) == "FR"
    assert not _core.GeoDb(path.read_bytes()).mapped
    path.write_bytes(write_db(tmp_path / "next.mmdb", ranges={"81.56.0.0/16": place("BE")}).read_bytes())
    os.utime(path, ns=(1, 10**18))
    clock.now += 5
    assert geo.country(PARIS_V4) == "BE", "rewritten in place: opened again"
    path.write_bytes(b"not an mmdb file")
    os.utime(path, ns=(2, 10**18))
    clock.now += 5
    assert geo.db is None and geo.country(PARIS_V4) is None, "its map would read the broken file: dropped"


def test_no_file_no_database(tmp_path: Path) -> None:
    geo = GeoIp(str(tmp_path / "missing.mmdb"))
    assert geo.db is None and geo.country(PARIS_V4) is None and geo.place(PARIS_V4) == (None, None, None)
    with pytest.raises(_core.CoreError):
        _core.GeoDb(b"\x00" * 100)


def test_country_headers() -> None:
    assert [country_code(v) for v in (b"fr", "DE ", b"XX", b"T1", b"FRA", b"", None, b"\xe9\xe9")] == [
        "FR",
        "DE",
        None,
        None,
        None,
        None,
        None,
        None,
    ]
    assert header_names("X-Geo")[:2] == (b"x-geo", b"cf-ipcountry")
    assert header_names(None)[0] == b"cf-ipcountry"
