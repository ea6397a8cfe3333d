"""Values a browser accepts for a form field (:class:`~agentworld.domains.web.site_map.FormField`):
valid for its input type (email, number, range, date, time, month, week, url, tel, color,
...), inside its ``min``/``max`` on its ``step``, of a length within ``minlength``/
``maxlength``, matching its ``pattern`` (drawn with Hypothesis' ``from_regex``), and one of a
select's enabled options (a non-empty one when it is required)."""

from __future__ import annotations

import datetime
import functools
import random
import re
import threading

from agentworld.domains.web.site_map import FormField

WORDS = ("Ada Lovelace", "Grace Hopper", "Alan Turing", "Barbara Liskov", "Edsger Dijkstra")
TEXTS = ("Hello from the explorer", "A short note", "Testing the form", "Thank you")
_LOCK = threading.Lock()  # Hypothesis' engine is not meant to run in several threads at once


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _bounded_number(item: FormField, rng: random.Random) -> str:
    lo, hi = _number(item.attrs.get("min")), _number(item.attrs.get("max"))
    step = item.attrs.get("step", "1")
    step_n = None if step == "any" else (_number(step) or 1.0)
    if item.type == "range":
        lo, hi = (0.0 if lo is None else lo), (100.0 if hi is None else hi)
    lo = 1.0 if lo is None else lo
    hi = max(lo, lo + 99 if hi is None else hi)
    if step_n:
        value = lo + step_n * rng.randint(0, int((hi - lo) // step_n))
    else:
        value = rng.uniform(lo, hi)
    return f"{value:g}" if value == int(value) or step_n is None else f"{value:.6g}"


_DATE_FORMATS = {"date": "%Y-%m-%d", "datetime-local": "%Y-%m-%dT%H:%M", "month": "%Y-%m",
                 "time": "%H:%M", "week": "%G-W%V"}


def _parse_when(kind: str, text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    if kind == "time":
        text = "2027-01-01T" + text[:5]
        kind = "datetime-local"
    if kind == "week":
        match = re.fullmatch(r"(\d{4})-W(\d{2})", text)
        return (datetime.datetime.fromisocalendar(int(match[1]), int(match[2]), 1)
                if match else None)
    try:
        return datetime.datetime.strptime(text[:16], _DATE_FORMATS[kind])
    except ValueError:
        return None


def _bounded_when(item: FormField, rng: random.Random) -> str:
    kind = item.type
    lo = _parse_when(kind, item.attrs.get("min")) or datetime.datetime(2027, 1, 1, 8, 0)
    hi = _parse_when(kind, item.attrs.get("max")) or lo + datetime.timedelta(days=700)
    if kind == "time" and hi <= lo:
        hi = lo.replace(hour=23, minute=59)
    if kind == "month":  # the first of a month between the bounds
        months = max(0, (hi.year - lo.year) * 12 + hi.month - lo.month)
        k = lo.month - 1 + rng.randint(0, months)
        return f"{lo.year + k // 12:04d}-{k % 12 + 1:02d}"
    span = max(0, int((hi - lo).total_seconds() // 60))
    unit = {"date": 1440, "week": 7 * 1440}.get(kind, 1)
    when = lo + datetime.timedelta(minutes=unit * rng.randint(0, span // unit))
    return when.strftime(_DATE_FORMATS[kind])


@functools.lru_cache(maxsize=256)
def pattern_value(pattern: str, min_length: int = 0, max_length: int = 60) -> str | None:
    """The simplest printable ASCII string that fully matches the HTML ``pattern`` with a
    length in ``[min_length, max_length]`` (Hypothesis' ``from_regex`` and ``find``); ``None``
    when the pattern is not a Python regular expression or none is found."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import HypothesisException

    try:
        re.compile(pattern)
        strategy = st.from_regex(re.compile(f"(?:{pattern})"), fullmatch=True,
                                 alphabet=st.characters(min_codepoint=32, max_codepoint=126))
    except (re.error, HypothesisException, ValueError):
        return None
    with _LOCK:
        try:
            return find(strategy, lambda s: min_length <= len(s) <= max_length,
                        settings=settings(database=None, max_examples=500, deadline=None,
                                          phases=[Phase.generate, Phase.shrink],
                                          suppress_health_check=list(HealthCheck)))
        except (HypothesisException, ValueError, re.error):
            return None


def _sized(text: str, item: FormField) -> str:
    lo = int(_number(item.attrs.get("minlength")) or 0)
    hi = int(_number(item.attrs.get("maxlength")) or 0) or None
    while len(text) < lo:
        text += " " + text
    return text[:hi] if hi else text


def field_value(item: FormField, rng: random.Random) -> str | None:
    """A value for ``item`` that passes the browser's validation (the option text of a
    select); ``None`` for a checkbox or radio (clicked, not filled) and for a select without
    a usable option."""
    kind = item.type
    if kind in ("checkbox", "radio"):
        return None
    if kind == "select":
        usable = [(v, t) for v, t in item.options if v or not item.required]
        usable = [o for o in usable if o[0]] or usable
        if not usable:
            return None
        value, text = rng.choice(usable)
        return text or value
    pattern = item.attrs.get("pattern")
    if pattern:
        lo = int(_number(item.attrs.get("minlength")) or 0)
        hi = int(_number(item.attrs.get("maxlength")) or 0) or 60
        found = pattern_value(pattern, lo, hi)
        if found is not None:
            return found
    if kind in ("number", "range"):
        return _bounded_number(item, rng)
    if kind in _DATE_FORMATS:
        return _bounded_when(item, rng)
    name = f"{item.attrs.get('name', '')} {item.label}".lower()
    if kind == "email" or "email" in name:
        return _sized(f"{rng.choice(WORDS).split()[0].lower()}@example.com", item)
    if kind == "url":
        return "https://example.org/"
    if kind == "tel" or "phone" in name:
        return "+44 20 7946 0958"
    if kind == "color":
        return f"#{rng.randrange(0x1000000):06x}"
    if kind == "password":
        return _sized("Secret-2027", item)
    if "name" in name:
        return _sized(rng.choice(WORDS), item)
    return _sized(rng.choice(TEXTS), item)
