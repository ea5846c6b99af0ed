"""Memory sizes: parsing "40GiB" / "48GB" / "512MiB" / byte counts, and formatting.

Pure functions, no I/O. Decimal units (kB, MB, GB, TB) are powers of 1000, binary units
(KiB, MiB, GiB, TiB) powers of 1024, as in the IEC standard and in NVIDIA's data sheets
("40 GB" on an A100 is in fact 40 GiB of HBM; write what you mean).
"""

from __future__ import annotations

import re

UNITS: dict[str, int] = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}

_SIZE_RE = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>[A-Za-z]+)?\s*$")


class SizeError(ValueError):
    """A size that cannot be understood; the message says why."""


def parse_size(value: object) -> int:
    """Return a positive number of bytes from an int or a string such as "40GiB".

    Raises SizeError naming the bad value. Zero, negative sizes, booleans, unknown units
    and sizes that are not a whole number of bytes are rejected.
    """
    if isinstance(value, bool):
        raise SizeError(f"expected a size such as '40GiB' or a byte count, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise SizeError(f"size must be a positive number of bytes, got {value!r}")
        return value
    if not isinstance(value, str):
        raise SizeError(
            f"expected a size such as '40GiB' or a byte count, got {type(value).__name__} {value!r}"
        )
    match = _SIZE_RE.match(value)
    if match is None:
        raise SizeError(
            f"cannot parse size {value!r}: expected a number and a unit "
            f"({', '.join(_unit_names())}), e.g. '40GiB'"
        )
    from decimal import Decimal, InvalidOperation  # lazily: keeps plugin import cheap

    unit = (match.group("unit") or "B").lower()
    if unit not in UNITS:
        raise SizeError(
            f"unknown unit {match.group('unit')!r} in size {value!r}: use one of "
            f"{', '.join(_unit_names())}"
        )
    try:
        number = Decimal(match.group("num"))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise SizeError(f"cannot parse size {value!r}") from exc
    total = number * UNITS[unit]
    if total != total.to_integral_value():
        raise SizeError(f"size {value!r} is not a whole number of bytes")
    if total <= 0:
        raise SizeError(f"size must be positive, got {value!r}")
    return int(total)


def _unit_names() -> list[str]:
    return ["B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"]


def format_size(num_bytes: float | None) -> str:
    """Human-readable binary size, e.g. 42949672960 -> '40.0 GiB'. A whole number beyond a
    float's range (10**400) is shown in TiB with an exponent, not refused."""
    if num_bytes is None:
        return "n/a"
    try:
        value = float(num_bytes)
    except OverflowError:  # an int too large for a float: only TiB can hold it
        from decimal import Decimal

        return f"{Decimal(int(num_bytes)) / 1024**4:.1e} TiB"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
