"""Spellings of status times as the API server admits them (``hooks.core.apitime``), shared by the
decision's tests (tests/core/test_status_times.py), the type fuzz (tests/server/test_fuzz_types.py,
tests/e2e/fuzz.py) and the real API server's check (tests/cluster/test_status_times.py).

``READABLE`` spells one instant, ``INSTANT``, each way the API server admits; ``UNREADABLE`` are
texts it admits that name no instant; ``REFUSED`` are texts it refuses, which no real Job's status
carries.
"""

from __future__ import annotations

INSTANT = "2025-12-31T23:31:00Z"

READABLE = {
    "lower-case": "2025-12-31t23:31:00z",
    "fraction": "2025-12-31T23:31:00.123456789Z",
    "comma-fraction": "2025-12-31T23:31:00,5Z",
    "offset": "2026-01-01T01:01:00+01:30",
    "lower-case-offset": "2025-12-31t18:31:00-05:00",
}
"""``INSTANT`` spelled as the API server also admits it (give or take the fraction)."""

UNREADABLE = {
    "year-0000": "0000-01-01T00:00:00Z",
    "offset-24h": "2025-12-31T23:31:00+24:00",
    "second-t": "2025-12-31T23:31:00Zt00:00:00Z",
    "odd-fraction": "2025-12-31T23:31:00x5Z",
    "out-of-range": "0001-01-01T00:00:00+23:59",
}
"""Admitted, naming no instant (``hooks.core.apitime.Unreadable``)."""

ADMITTED = {**READABLE, **UNREADABLE}

REFUSED = {"feb-30": "2025-02-30T00:00:00Z", "hour-24": "2025-12-31T24:00:00Z", "no-offset": "2025-12-31T23:31:00",
           "space": "2025-12-31 23:31:00Z"}
"""Refused by the API server (``format: date-time``)."""
