"""Spending reports over entries ``(date 'YYYY-MM-DD', category, cents)``."""


def totals_by_category(entries):
    """Sum of the amounts of each category."""
    totals = {}
    for _, category, cents in entries:
        totals[category] = totals.get(category, 0) + cents
    return totals


def monthly_totals(entries):
    """Sum of the amounts of each month ('YYYY-MM'), months in order."""
    totals = {}
    for day, _, cents in entries:
        month = day[:7]
        totals[month] = totals.get(month, 0) + cents
    return dict(sorted(totals.items()))


def top_categories(entries, count=3):
    """The ``count`` categories with the largest totals, largest first, ties by name."""
    ranked = sorted(totals_by_category(entries).items(), key=lambda item: (-item[1], item[0]))
    return ranked[:count]


def running_balance(start, entries):
    """The balance after each entry, starting from ``start``."""
    balance = start
    out = []
    for _, _, cents in entries:
        balance += cents
        out.append(balance)
    return out


def average_entry(entries):
    """Mean amount of the entries, rounded down to whole cents; 0 for no entries."""
    if len(entries) == 0:
        return 0
    return sum(cents for _, _, cents in entries) // len(entries)
