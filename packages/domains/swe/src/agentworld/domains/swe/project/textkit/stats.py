"""Descriptive statistics of plain lists of numbers."""


def mean(values):
    """Arithmetic mean; raises ValueError for an empty list."""
    if len(values) == 0:
        raise ValueError("mean of an empty list")
    return sum(values) / len(values)


def median(values):
    """Middle value of the sorted values (mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def variance(values, sample=True):
    """Variance; the sample variance divides by n - 1, the population variance by n."""
    count = len(values)
    if count < 2:
        raise ValueError("variance needs at least two values")
    centre = mean(values)
    total = sum((x - centre) ** 2 for x in values)
    return total / (count - 1) if sample else total / count


def clamp(value, low, high):
    """``value`` limited to the closed interval [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(value, high))


def moving_average(values, window):
    """Means of each run of ``window`` consecutive values."""
    if window <= 0:
        raise ValueError("window must be positive")
    out = []
    for start in range(len(values) - window + 1):
        chunk = values[start:start + window]
        out.append(sum(chunk) / window)
    return out


def percentile(values, fraction):
    """Linear-interpolated percentile, ``fraction`` in [0, 1]."""
    if not 0 <= fraction <= 1:
        raise ValueError("fraction must be within [0, 1]")
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    weight = position - lower
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def histogram(values, bins, low, high):
    """Counts of values in ``bins`` equal-width bins over [low, high)."""
    counts = [0] * bins
    width = (high - low) / bins
    for x in values:
        if low <= x < high:
            counts[int((x - low) / width)] += 1
    return counts
