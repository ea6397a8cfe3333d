"""The forum (``http://forum.test``): posts with replies, a reply form, a new-post form.

Routes: ``/`` the posts (title links with reply counts), ``/post/{id}`` (body, replies, the
"Reply" text area and "Post reply"), ``/new`` (title, category, body; validated on the server).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.routing import Route

from agentworld.domains.web.apps.html import e, form, options, page, redirect
from agentworld.domains.web.apps.world import CATEGORIES, Post, World

SITE = "Forum"
NAV = [("/", "All posts"), ("/new", "New post")]


def routes(world_of: Callable[[], World]) -> list[Route]:
    """The forum's routes over the episode's world."""

    async def index(request: Request):
        w = world_of()
        rows = "".join(f'<li><a href="/post/{p.id}">{e(p.title)}</a> ({len(p.replies)} replies, '
                       f"{e(p.category)})</li>" for p in w.posts)
        return page("All posts", SITE, NAV, f'<ul aria-label="Posts">{rows}</ul>')

    async def show(request: Request):
        w = world_of()
        p = w.post(int(request.path_params["pid"]))
        if p is None:
            return page("Not found", SITE, NAV, "<p>No such post.</p>")
        alert = ""
        if request.method == "POST":
            text = (await form(request)).get("reply", "")
            if not text:
                alert = "A reply cannot be empty"
            elif len(text) > 200:
                alert = "A reply has at most 200 characters"
            else:
                p.replies.append(f"you: {text}")
                return redirect(f"/post/{p.id}")
        replies = "".join(f"<li>{e(r)}</li>" for r in p.replies) or "<li>No replies yet.</li>"
        body = (f"<p>by {e(p.author)} in {e(p.category)}</p><p>{e(p.body)}</p>"
                f'<ul aria-label="Replies">{replies}</ul>'
                f'<form method=post action="/post/{p.id}"><label>Reply <textarea name=reply>'
                "</textarea></label><button>Post reply</button></form>")
        return page(p.title, SITE, NAV, body, alert)

    async def new(request: Request):
        w = world_of()
        alert, data = "", {}
        if request.method == "POST":
            data = await form(request)
            if not 3 <= len(data.get("title", "")) <= 80:
                alert = "A title has 3 to 80 characters"
            elif data.get("category") not in CATEGORIES:
                alert = "Choose a category"
            elif not data.get("body"):
                alert = "A post needs a body"
            else:
                post = Post(len(w.posts) + 1, data["title"], "you", data["category"], data["body"])
                w.posts.append(post)
                return redirect(f"/post/{post.id}")
        body = ('<form method=post action="/new">'
                f'<label>Title <input name=title value="{e(data.get("title", ""))}"></label>'
                f"{options('category', 'Category', CATEGORIES, data.get('category', ''))}"
                f'<label>Body <textarea name=body>{e(data.get("body", ""))}</textarea></label>'
                "<button>Publish</button></form>")
        return page("New post", SITE, NAV, body, alert)

    return [Route("/", index), Route("/post/{pid:int}", show, methods=["GET", "POST"]),
            Route("/new", new, methods=["GET", "POST"])]
