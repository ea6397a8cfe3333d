"""String helpers."""


def slugify(text, separator="-"):
    """Lower-case words of ``text`` joined by ``separator``; other characters dropped."""
    words = []
    current = ""
    for char in text.lower():
        if char.isalnum():
            current += char
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return separator.join(words)


def truncate(text, width, suffix="..."):
    """``text`` cut to at most ``width`` characters, ending with ``suffix`` when cut."""
    if len(text) <= width:
        return text
    if width < len(suffix):
        raise ValueError("width is shorter than the suffix")
    return text[:width - len(suffix)] + suffix


def wrap(text, width):
    """Greedy word wrap into lines of at most ``width`` characters (long words kept whole)."""
    lines = []
    line = ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line = line + " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def count_words(text):
    """Occurrences of each lower-cased word, most frequent first, ties by first appearance."""
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?\"'()")
        if word:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])


def is_palindrome(text):
    """True when the letters and digits of ``text`` read the same backwards (case ignored)."""
    chars = [c.lower() for c in text if c.isalnum()]
    return chars == chars[::-1]


def pad_left(text, width, fill=" "):
    """``text`` right-aligned in ``width`` characters, padded with ``fill``."""
    missing = width - len(text)
    if missing <= 0:
        return text
    return fill * missing + text


def common_prefix(words):
    """Longest prefix shared by all ``words`` ("" for an empty list)."""
    if not words:
        return ""
    prefix = words[0]
    for word in words[1:]:
        size = 0
        while size < min(len(prefix), len(word)) and prefix[size] == word[size]:
            size += 1
        prefix = prefix[:size]
    return prefix
