"""Calendar helpers on (year, month, day) tuples of the Gregorian calendar."""

MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap_year(year):
    """Divisible by 4, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """Number of days of ``month`` (1-12) in ``year``."""
    if not 1 <= month <= 12:
        raise ValueError("month must be within 1..12")
    if month == 2 and is_leap_year(year):
        return 29
    return MONTH_DAYS[month - 1]


def day_of_year(year, month, day):
    """1-based ordinal of the date within its year."""
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError("day out of range for month")
    total = day
    for earlier in range(1, month):
        total += days_in_month(year, earlier)
    return total


def add_days(year, month, day, days):
    """The date ``days`` (>= 0) after the given one."""
    if days < 0:
        raise ValueError("days must not be negative")
    while days > 0:
        left = days_in_month(year, month) - day
        if days <= left:
            return (year, month, day + days)
        days -= left + 1
        day = 1
        month += 1
        if month > 12:
            month = 1
            year += 1
    return (year, month, day)


def parse_iso(text):
    """``(year, month, day)`` of an ISO date ``YYYY-MM-DD``; raises ValueError otherwise."""
    parts = text.split("-")
    if len(parts) != 3 or len(parts[0]) != 4:
        raise ValueError("expected YYYY-MM-DD")
    year, month, day = (int(p) for p in parts)
    day_of_year(year, month, day)
    return (year, month, day)


def format_iso(year, month, day):
    """The ISO text ``YYYY-MM-DD`` of a date."""
    return f"{year:04d}-{month:02d}-{day:02d}"


def weekday(year, month, day):
    """Day of the week, 0 = Monday ... 6 = Sunday (Zeller's congruence)."""
    if month < 3:
        month += 12
        year -= 1
    k = year % 100
    j = year // 100
    h = (day + 13 * (month + 1) // 5 + k + k // 4 + j // 4 + 5 * j) % 7
    return (h + 5) % 7
