"""Amounts of money as integer cents: parsing, formatting, splitting and percentages."""


def parse_amount(text):
    """Cents of a decimal amount such as '12.34', '-0.5' or '7'; raises ValueError otherwise."""
    text = text.strip()
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    whole, _, frac = text.partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or len(frac) > 2:
        raise ValueError(f"not an amount: {text!r}")
    cents = int(whole) * 100 + int(frac.ljust(2, "0") if frac else 0)
    return -cents if negative else cents


def format_amount(cents, symbol="$"):
    """Text such as '$1,234.50' of an amount in cents; a negative amount starts with '-'."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{frac:02d}"


def split_evenly(cents, parts):
    """Shares of an amount that differ by at most one cent, the larger ones first."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    share, rest = divmod(cents, parts)
    return [share + 1 if index < rest else share for index in range(parts)]


def percent_of(cents, percent):
    """``percent`` percent of an amount, rounded half up to whole cents."""
    return (cents * percent + 50) // 100


def apply_discount(cents, percent):
    """The amount less ``percent`` percent; ``percent`` must be between 0 and 100."""
    if percent < 0 or percent > 100:
        raise ValueError("percent must be between 0 and 100")
    return cents - percent_of(cents, percent)
