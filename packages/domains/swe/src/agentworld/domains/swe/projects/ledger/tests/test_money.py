import unittest

from ledger.money import apply_discount, format_amount, parse_amount, percent_of, split_evenly


class ParseTests(unittest.TestCase):
    def test_parse_whole_and_cents(self):
        """parse_amount reads whole amounts and two decimals as cents."""
        self.assertEqual(parse_amount("12.34"), 1234)
        self.assertEqual(parse_amount("7"), 700)

    def test_parse_one_decimal(self):
        """parse_amount reads one decimal as tens of cents."""
        self.assertEqual(parse_amount("0.5"), 50)

    def test_parse_negative(self):
        """parse_amount keeps the sign of a negative amount."""
        self.assertEqual(parse_amount(" -3.05 "), -305)

    def test_parse_rejects_bad_text(self):
        """parse_amount rejects text that is no amount."""
        for text in ("abc", "1.234", "1.x", ""):
            with self.assertRaises(ValueError):
                parse_amount(text)


class FormatTests(unittest.TestCase):
    def test_format_thousands(self):
        """format_amount groups thousands and shows two decimals."""
        self.assertEqual(format_amount(123450), "$1,234.50")

    def test_format_negative_and_symbol(self):
        """format_amount puts the sign before the symbol."""
        self.assertEqual(format_amount(-5, symbol="€"), "-€0.05")


class SplitTests(unittest.TestCase):
    def test_split_evenly(self):
        """split_evenly gives the extra cents to the first shares."""
        self.assertEqual(split_evenly(1000, 3), [334, 333, 333])
        self.assertEqual(split_evenly(900, 3), [300, 300, 300])

    def test_split_needs_a_part(self):
        """split_evenly needs at least one part."""
        with self.assertRaises(ValueError):
            split_evenly(100, 0)


class PercentTests(unittest.TestCase):
    def test_percent_rounds_half_up(self):
        """percent_of rounds half a cent up."""
        self.assertEqual(percent_of(250, 10), 25)
        self.assertEqual(percent_of(5, 10), 1)
        self.assertEqual(percent_of(4, 10), 0)

    def test_discount(self):
        """apply_discount takes the percentage off the amount."""
        self.assertEqual(apply_discount(2000, 15), 1700)
        self.assertEqual(apply_discount(2000, 100), 0)

    def test_discount_range(self):
        """apply_discount rejects a percentage outside 0-100."""
        for percent in (-1, 101):
            with self.assertRaises(ValueError):
                apply_discount(100, percent)


if __name__ == "__main__":
    unittest.main()
