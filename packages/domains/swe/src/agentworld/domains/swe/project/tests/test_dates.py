import unittest

from textkit import dates


class LeapTests(unittest.TestCase):
    def test_leap_years(self):
        """2024 and 2000 are leap years; 2023 and 1900 are not."""
        self.assertTrue(dates.is_leap_year(2024))
        self.assertTrue(dates.is_leap_year(2000))
        self.assertFalse(dates.is_leap_year(2023))
        self.assertFalse(dates.is_leap_year(1900))

    def test_days_in_month(self):
        """February has 29 days in 2024 and 28 in 2023; April has 30, December 31."""
        self.assertEqual(dates.days_in_month(2024, 2), 29)
        self.assertEqual(dates.days_in_month(2023, 2), 28)
        self.assertEqual(dates.days_in_month(2023, 4), 30)
        self.assertEqual(dates.days_in_month(2023, 12), 31)

    def test_bad_month(self):
        """Month 13 raises ValueError."""
        with self.assertRaises(ValueError):
            dates.days_in_month(2023, 13)


class OrdinalTests(unittest.TestCase):
    def test_day_of_year(self):
        """March 1st is day 61 of 2024 and day 60 of 2023; December 31st is day 365 of 2023."""
        self.assertEqual(dates.day_of_year(2024, 3, 1), 61)
        self.assertEqual(dates.day_of_year(2023, 3, 1), 60)
        self.assertEqual(dates.day_of_year(2023, 12, 31), 365)
        self.assertEqual(dates.day_of_year(2023, 1, 1), 1)

    def test_add_days(self):
        """Ten days after 2023-12-25 is 2024-01-04; one day after 2024-02-28 is 2024-02-29."""
        self.assertEqual(dates.add_days(2023, 12, 25, 10), (2024, 1, 4))
        self.assertEqual(dates.add_days(2024, 2, 28, 1), (2024, 2, 29))
        self.assertEqual(dates.add_days(2023, 1, 31, 0), (2023, 1, 31))

    def test_add_days_month_end(self):
        """One day after 2023-01-31 is 2023-02-01."""
        self.assertEqual(dates.add_days(2023, 1, 31, 1), (2023, 2, 1))


class IsoTests(unittest.TestCase):
    def test_parse_iso(self):
        """parse_iso("2024-02-29") is (2024, 2, 29); "2023-02-29" raises ValueError."""
        self.assertEqual(dates.parse_iso("2024-02-29"), (2024, 2, 29))
        with self.assertRaises(ValueError):
            dates.parse_iso("2023-02-29")
        with self.assertRaises(ValueError):
            dates.parse_iso("24-02-01")

    def test_format_iso(self):
        """format_iso(987, 6, 5) is "0987-06-05"."""
        self.assertEqual(dates.format_iso(987, 6, 5), "0987-06-05")

    def test_weekday(self):
        """2024-01-01 was a Monday (0), 2023-12-31 a Sunday (6), 2000-02-29 a Tuesday (1)."""
        self.assertEqual(dates.weekday(2024, 1, 1), 0)
        self.assertEqual(dates.weekday(2023, 12, 31), 6)
        self.assertEqual(dates.weekday(2000, 2, 29), 1)


if __name__ == "__main__":
    unittest.main()
