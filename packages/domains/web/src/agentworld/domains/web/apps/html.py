"""HTML helpers shared by the local web apps: escaping, the page frame, form bodies."""

from __future__ import annotations

from html import escape
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse


def e(text: object) -> str:
    """``text`` escaped for HTML text and attribute values."""
    return escape(str(text), quote=True)


def page(title: str, site: str, nav: list[tuple[str, str]], body: str, alert: str = "") -> HTMLResponse:
    """A whole page: ``<title>`` "TITLE - SITE", a navigation bar of ``(href, label)`` links,
    an optional ``role=alert`` message (form validation errors), then ``body``."""
    links = "".join(f'<a href="{e(h)}">{e(label)}</a> ' for h, label in nav)
    message = f'<p role="alert">{e(alert)}</p>' if alert else ""
    return HTMLResponse(
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(title)} - {e(site)}"
        f"</title></head><body><nav aria-label=\"{e(site)}\">{links}</nav><main>"
        f"<h1>{e(title)}</h1>{message}{body}</main></body></html>"
    )


async def form(request: Request) -> dict[str, str]:
    """The ``application/x-www-form-urlencoded`` body of a POST, first value per field,
    stripped (no multipart: the apps' forms post no files)."""
    raw = (await request.body()).decode("utf-8", "replace")
    return {k: v[0].strip() for k, v in parse_qs(raw, keep_blank_values=True).items()}


def redirect(path: str) -> RedirectResponse:
    """A 303 redirect after a POST (post/redirect/get)."""
    return RedirectResponse(path, status_code=303)


def options(name: str, label: str, values: list[str], selected: str = "") -> str:
    """A labelled ``<select>``."""
    items = "".join(f'<option{" selected" if v == selected else ""}>{e(v)}</option>'
                    for v in values)
    return f'<label>{e(label)} <select name="{e(name)}">{items}</select></label>'
