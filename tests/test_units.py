import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gpuperf.core.units import UNITS, SizeError, format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("40GiB", 40 * 1024**3),
        ("48GB", 48 * 1000**3),
        ("512MiB", 512 * 1024**2),
        ("1.5 GiB", 3 * 1024**3 // 2),
        ("  7 kib ", 7 * 1024),
        ("1024", 1024),
        ("1024B", 1024),
        (4096, 4096),
    ],
)
def test_parses_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("40 gigs", "unknown unit 'gigs'"),
        ("-1", "cannot parse size '-1'"),
        (-1, "positive"),
        (0, "positive"),
        ("0GiB", "positive"),
        ("", "cannot parse"),
        ("GiB", "cannot parse"),
        ("1.5B", "whole number of bytes"),
        (True, "got True"),
        (1.5, "got float"),
        (None, "got NoneType"),
        ("4O GiB", "cannot parse"),
    ],
)
def test_rejects_bad_sizes_with_the_value_named(bad, fragment):
    with pytest.raises(SizeError, match=None) as info:
        parse_size(bad)
    assert fragment in str(info.value)


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(sorted(UNITS)))
def test_round_trip_number_and_unit(n, unit):
    spelled = unit.upper().replace("I", "i")  # "GIB" -> "GiB"
    assert parse_size(f"{n}{spelled}") == n * UNITS[unit]
    assert parse_size(f"{n} {unit}") == n * UNITS[unit]


@given(st.integers(min_value=1, max_value=2**62))
def test_round_trip_byte_counts(n):
    assert parse_size(n) == n
    assert parse_size(str(n)) == n


@given(st.text())
def test_garbage_is_rejected_or_parsed_consistently(text):
    # Any text either parses to a positive int or raises SizeError; nothing else escapes.
    try:
        value = parse_size(text)
    except SizeError as exc:
        assert repr(text) in str(exc) or "positive" in str(exc) or "got" in str(exc)
    else:
        assert isinstance(value, int) and value > 0


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=8)
)
def test_unknown_units_are_rejected(unit):
    if unit.lower() in UNITS:
        return
    with pytest.raises(SizeError, match="unknown unit"):
        parse_size(f"12{unit}")


def test_format_size():
    assert format_size(40 * 1024**3) == "40.0 GiB"
    assert format_size(512) == "512 B"
    assert format_size(None) == "n/a"
    assert format_size(10**400) == "9.1e+387 TiB"  # no OverflowError
