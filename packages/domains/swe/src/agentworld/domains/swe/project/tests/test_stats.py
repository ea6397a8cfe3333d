import unittest

from textkit import stats


class MeanTests(unittest.TestCase):
    def test_mean(self):
        """mean([1, 2, 3, 6]) is 3."""
        self.assertEqual(stats.mean([1, 2, 3, 6]), 3)

    def test_mean_empty(self):
        """mean([]) raises ValueError."""
        with self.assertRaises(ValueError):
            stats.mean([])


class MedianTests(unittest.TestCase):
    def test_median_odd(self):
        """median([5, 1, 3]) is 3."""
        self.assertEqual(stats.median([5, 1, 3]), 3)

    def test_median_even(self):
        """median([4, 1, 3, 2]) is 2.5."""
        self.assertEqual(stats.median([4, 1, 3, 2]), 2.5)


class SpreadTests(unittest.TestCase):
    def test_sample_variance(self):
        """The sample variance of [2, 4, 4, 4, 5, 5, 7, 9] is 32/7."""
        self.assertAlmostEqual(stats.variance([2, 4, 4, 4, 5, 5, 7, 9]), 32 / 7)

    def test_population_variance(self):
        """The population variance of [2, 4, 4, 4, 5, 5, 7, 9] is 4."""
        self.assertEqual(stats.variance([2, 4, 4, 4, 5, 5, 7, 9], sample=False), 4)

    def test_variance_needs_two(self):
        """variance([1]) raises ValueError."""
        with self.assertRaises(ValueError):
            stats.variance([1])

    def test_clamp(self):
        """clamp keeps values inside [low, high]."""
        self.assertEqual(stats.clamp(5, 0, 10), 5)
        self.assertEqual(stats.clamp(-3, 0, 10), 0)
        self.assertEqual(stats.clamp(12, 0, 10), 10)

    def test_clamp_bad_interval(self):
        """clamp(1, 5, 0) raises ValueError."""
        with self.assertRaises(ValueError):
            stats.clamp(1, 5, 0)


class SeriesTests(unittest.TestCase):
    def test_moving_average(self):
        """moving_average([1, 2, 3, 4, 5], 2) is [1.5, 2.5, 3.5, 4.5]."""
        self.assertEqual(stats.moving_average([1, 2, 3, 4, 5], 2), [1.5, 2.5, 3.5, 4.5])

    def test_moving_average_full_window(self):
        """A window as long as the list gives one mean."""
        self.assertEqual(stats.moving_average([2, 4, 6], 3), [4.0])

    def test_percentile(self):
        """percentile([1, 2, 3, 4, 5], 0.25) is 2 and the 0.9 percentile of [10, 20] is 19."""
        self.assertEqual(stats.percentile([5, 1, 4, 2, 3], 0.25), 2)
        self.assertAlmostEqual(stats.percentile([10, 20], 0.9), 19)
        self.assertEqual(stats.percentile([3, 1, 2], 1), 3)

    def test_histogram(self):
        """histogram([0, 1, 1.5, 2, 3.9, 4], 4, 0, 4) is [1, 2, 1, 1]."""
        self.assertEqual(stats.histogram([0, 1, 1.5, 2, 3.9, 4], 4, 0, 4), [1, 2, 1, 1])


if __name__ == "__main__":
    unittest.main()
