"""Time as the service stores and shows it: always UTC, ISO 8601 with a `Z` on the way out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

SECONDS_PER_DAY = 86_400
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def isoformat(moment: datetime | None) -> str | None:
    """`2024-05-01T12:00:00Z`: whole seconds, UTC. (datetime.isoformat is C; strftime was a third of a link's JSON.)"""
    if moment is None:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds") + "Z"


def epoch_micros(moment: datetime) -> int:
    """Microseconds since 1970, exactly: stored timestamps in the order the database sorts them."""
    return (as_utc(moment) - EPOCH) // MICROSECOND


def epoch_day(unix_time: float) -> int:
    """Days since 1970-01-01 (UTC) of a unix time."""
    return int(unix_time // SECONDS_PER_DAY)
