"""common/months.py: the month names every package parses, and their calendar steps."""
import pytest

from bgp_congruency.common.months import parse_month, parse_month_range, previous_month


def test_parse_month():
    assert parse_month("2026-07") == (2026, 7)
    for bad in ("2026-13", "2026-00", "2026-7", "26-07", "", None):
        with pytest.raises(ValueError, match="--month: expected YYYY-MM"):
            parse_month(bad)
    with pytest.raises(ValueError, match="^--since: "):
        parse_month("x", "--since")


def test_ranges_cross_years_and_name_the_flag():
    assert parse_month_range("2025-11..2026-02") == ["2025-11", "2025-12", "2026-01", "2026-02"]
    assert parse_month_range("2026-07") == ["2026-07"]
    with pytest.raises(ValueError, match="--months: 2026-01 is before 2026-02"):
        parse_month_range("2026-02..2026-01")
    with pytest.raises(ValueError, match=r"^month: expected YYYY-MM, got '2026-1'$"):
        parse_month_range("2026-1", "month")


def test_previous_month():
    assert [previous_month(m) for m in ("2026-01", "2026-07", "2026-12")] == ["2025-12", "2026-06", "2026-11"]


def test_months_listed_in_messages():
    from bgp_congruency.common.months import listed

    assert listed([]) == "none" and listed(["2026-07"]) == "2026-07"
    assert listed(["2026-02", "2026-01", "2026-03"]) == "2026-01..2026-03"
    assert listed(["2026-01", "2026-03"]) == "2026-01, 2026-03"
    assert listed([f"2026-{m:02d}" for m in (1, 3, 5, 7, 9)]) == "5 months from 2026-01 to 2026-09"
