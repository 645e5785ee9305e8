"""Times as people say them: "3 minutes ago", "Dec 4, 15:31", "took 0.4 s".

The store keeps ISO 8601 UTC (``2026-12-04T15:31:02.417Z``); a page shows them
in the reader's time zone (the browser's, which Streamlit reports as
``st.context.timezone``; UTC when it is not known or not a zone this machine
has), relative within the hour, else as a day and a time — with the year only
when it is not this one.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["at", "duration_text", "parse", "when_text", "zone"]


def zone(name: str | None) -> tzinfo:
    """The time zone called ``name`` (an IANA name such as ``Europe/Berlin``), UTC when there is none or
    this machine does not know it.

    >>> zone("Europe/Berlin").key, zone(None), zone("Mars/Olympus"), zone("../etc/passwd")
    ('Europe/Berlin', datetime.timezone.utc, datetime.timezone.utc, datetime.timezone.utc)
    """
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return UTC


def parse(stamp: str | None) -> datetime | None:
    """A stored time (ISO 8601, ``Z`` or an offset; a naive one is UTC), or ``None`` when it is none.

    >>> parse("2026-12-04T15:31:02.417Z"), parse(""), parse("not a time")
    (datetime.datetime(2026, 12, 4, 15, 31, 2, 417000, tzinfo=datetime.timezone.utc), None, None)
    """
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def at(moment: datetime, now: datetime, where: tzinfo = UTC) -> str:
    """A day and a time in ``where``: "Dec 4, 15:31" (the year too when it is not ``now``'s; the zone's
    name when it is UTC, so nobody reads it as their own).

    >>> now = datetime(2026, 12, 4, 16, 0, tzinfo=UTC)
    >>> at(datetime(2026, 12, 4, 15, 31, tzinfo=UTC), now, zone("Europe/Berlin"))
    'Dec 4, 16:31'
    >>> at(datetime(2025, 1, 9, 8, 5, tzinfo=UTC), now)
    'Jan 9 2025, 08:05 UTC'
    """
    local = moment.astimezone(where)
    day = f"{local:%b} {local.day}" + ("" if local.year == now.astimezone(where).year else f" {local.year}")
    return f"{day}, {local:%H:%M}" + (" UTC" if local.tzname() == "UTC" else "")


def when_text(stamp: str | None, now: datetime, where: tzinfo = UTC) -> str:
    """When something happened, as people say it: "just now", "3 minutes ago" within the hour, else
    :func:`at`; "—" for no time.

    >>> now = datetime(2026, 12, 4, 15, 34, 30, tzinfo=UTC)
    >>> [when_text(s, now) for s in ("2026-12-04T15:34:10Z", "2026-12-04T15:31:02Z", "2026-12-04T15:33:00Z",
    ...                              "2026-12-04T13:02:00Z", None)]
    ['just now', '3 minutes ago', 'a minute ago', 'Dec 4, 13:02 UTC', '—']
    >>> when_text("2026-12-04T15:37:00Z", now)  # a clock a little ahead
    'just now'
    """
    moment = parse(stamp)
    if moment is None:
        return "—"
    seconds = (now - moment).total_seconds()
    if seconds < 60 and seconds > -300:
        return "just now"
    if 0 < seconds < 3600:
        minutes = int(seconds // 60)
        return "a minute ago" if minutes == 1 else f"{minutes} minutes ago"
    return at(moment, now, where)


def duration_text(start: str | None, end: str | None) -> str | None:
    """How long from ``start`` to ``end``: "took under 0.1 s", "took 0.4 s", "took 12 s", "took 3 min"; ``None``
    when either is missing.

    >>> duration_text("2026-12-04T15:31:02.417Z", "2026-12-04T15:31:02.900Z"), duration_text("2026-12-04T15:31:00Z", None)
    ('took 0.5 s', None)
    >>> duration_text("2026-12-04T15:31:00Z", "2026-12-04T15:31:12Z"), duration_text("2026-12-04T15:31:00Z", "2026-12-04T15:34:40Z")
    ('took 12 s', 'took 4 min')
    >>> duration_text("2026-12-04T15:31:00.000Z", "2026-12-04T15:31:00.012Z")
    'took under 0.1 s'
    """
    first, last = parse(start), parse(end)
    if first is None or last is None:
        return None
    seconds = max((last - first).total_seconds(), 0.0)
    if seconds < 0.05:  # "took 0.0 s" read as if nothing ran
        return "took under 0.1 s"
    if seconds < 10:
        return f"took {seconds:.1f} s"
    if seconds < 90:
        return f"took {seconds:.0f} s"
    return f"took {seconds / 60:.0f} min"
