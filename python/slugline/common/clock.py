"""Time as the service stores and shows it: always UTC, ISO 8601 with a `Z` on the way out."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

SECONDS_PER_DAY = 86_400
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DAY_ZERO = date(1970, 1, 1)
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


# Clicks are counted by UTC day and month, each a number: days since 1970-01-01 ("epoch days", the cubes' buckets)
# and months since 1970-01.


def day_number(day: date) -> int:
    return (day - DAY_ZERO).days


def day_date(number: int) -> date:
    return DAY_ZERO + timedelta(days=number)


def month_number(day: date) -> int:
    return (day.year - 1970) * 12 + day.month - 1


def month_start(month: int) -> date:
    return date(1970 + month // 12, month % 12 + 1, 1)


def month_of_day(number: int) -> int:
    """The month of an epoch day."""
    return month_number(day_date(number))


def month_days(month: int) -> tuple[int, int]:
    """The first and last epoch days of a month."""
    return day_number(month_start(month)), day_number(month_start(month + 1)) - 1
