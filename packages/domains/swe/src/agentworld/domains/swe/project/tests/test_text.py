import unittest

from textkit import text


class SlugTests(unittest.TestCase):
    def test_slugify(self):
        """slugify("Hello, World!") is "hello-world"."""
        self.assertEqual(text.slugify("Hello, World!"), "hello-world")

    def test_slugify_separator(self):
        """slugify("A  b C", "_") is "a_b_c"."""
        self.assertEqual(text.slugify("A  b C", "_"), "a_b_c")


class TruncateTests(unittest.TestCase):
    def test_truncate_short(self):
        """A text that fits is returned unchanged."""
        self.assertEqual(text.truncate("short", 5), "short")

    def test_truncate_long(self):
        """truncate("abcdefghij", 6) is "abc..."."""
        self.assertEqual(text.truncate("abcdefghij", 6), "abc...")


class WrapTests(unittest.TestCase):
    def test_wrap(self):
        """wrap("the quick brown fox jumps", 10) gives three lines."""
        self.assertEqual(text.wrap("the quick brown fox jumps", 10),
                         ["the quick", "brown fox", "jumps"])

    def test_wrap_exact_width(self):
        """A line exactly ``width`` long is kept together."""
        self.assertEqual(text.wrap("ab cd ef", 5), ["ab cd", "ef"])


class WordTests(unittest.TestCase):
    def test_count_words(self):
        """count_words lists the most frequent word first."""
        self.assertEqual(text.count_words("b a b. C, a b"), [("b", 3), ("a", 2), ("c", 1)])

    def test_palindrome(self):
        """"A man, a plan, a canal: Panama" is a palindrome, "abca" is not."""
        self.assertTrue(text.is_palindrome("A man, a plan, a canal: Panama"))
        self.assertFalse(text.is_palindrome("abca"))

    def test_pad_left(self):
        """pad_left("7", 3, "0") is "007"; a longer text is unchanged."""
        self.assertEqual(text.pad_left("7", 3, "0"), "007")
        self.assertEqual(text.pad_left("1234", 3), "1234")

    def test_common_prefix(self):
        """common_prefix(["interview", "internet", "interval"]) is "inter"."""
        self.assertEqual(text.common_prefix(["interview", "internet", "interval"]), "inter")
        self.assertEqual(text.common_prefix([]), "")
        self.assertEqual(text.common_prefix(["abc", "xyz"]), "")


if __name__ == "__main__":
    unittest.main()
