import unittest

from ledger.report import (average_entry, monthly_totals, running_balance, top_categories,
                           totals_by_category)

ENTRIES = [
    ("2024-01-03", "food", 1200),
    ("2024-01-09", "rent", 50000),
    ("2024-01-20", "food", 800),
    ("2024-02-02", "travel", 7000),
    ("2024-02-14", "food", 2500),
    ("2024-03-01", "books", 7000),
]


class ReportTests(unittest.TestCase):
    def test_totals_by_category(self):
        """totals_by_category sums each category."""
        self.assertEqual(totals_by_category(ENTRIES),
                         {"food": 4500, "rent": 50000, "travel": 7000, "books": 7000})

    def test_monthly_totals(self):
        """monthly_totals sums each month, in order."""
        self.assertEqual(monthly_totals(ENTRIES[::-1]),
                         {"2024-01": 52000, "2024-02": 9500, "2024-03": 7000})

    def test_top_categories(self):
        """top_categories ranks by total, ties by name."""
        self.assertEqual(top_categories(ENTRIES),
                         [("rent", 50000), ("books", 7000), ("travel", 7000)])
        self.assertEqual(top_categories(ENTRIES, count=1), [("rent", 50000)])

    def test_running_balance(self):
        """running_balance lists the balance after each entry."""
        self.assertEqual(running_balance(100, ENTRIES[:3]), [1300, 51300, 52100])

    def test_average_entry(self):
        """average_entry is the mean amount rounded down."""
        self.assertEqual(average_entry(ENTRIES[:3]), 17333)
        self.assertEqual(average_entry([]), 0)


if __name__ == "__main__":
    unittest.main()
