"""The shop (``http://shop.test``): catalog, product pages, a cart and a checkout form.

Routes: ``/`` catalog, ``/product/{id}`` (quantity select, "Add to cart"), ``/cart`` (rows,
"Remove NAME" buttons, total), ``/checkout`` (name, address, shipping; validated on the
server), ``/order/{n}`` (the confirmation). Adding more than the stock is refused with an alert.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.routing import Route

from agentworld.domains.web.apps.html import e, form, options, page, redirect
from agentworld.domains.web.apps.world import SHIPPING, World, price

SITE = "Shop"


def _nav(world: World) -> list[tuple[str, str]]:
    return [("/", "Catalog"), ("/cart", f"Cart ({sum(world.cart.values())})")]


def routes(world_of: Callable[[], World]) -> list[Route]:
    """The shop's routes over the episode's world (``world_of()`` at each request)."""

    async def catalog(request: Request):
        w = world_of()
        rows = "".join(f'<li><a href="/product/{p.id}">{e(p.name)}</a> {price(p.price_cents)}</li>'
                       for p in w.products)
        return page("Catalog", SITE, _nav(w), f'<ul aria-label="Products">{rows}</ul>')

    async def product(request: Request):
        w = world_of()
        p = w.product(int(request.path_params["pid"]))
        if p is None:
            return page("Not found", SITE, _nav(w), "<p>No such product.</p>")
        alert = request.query_params.get("error", "")
        body = (f"<p>Price: {price(p.price_cents)}</p><p>In stock: {p.stock}</p>"
                f'<form method=post action="/cart/add"><input type=hidden name=pid value="{p.id}">'
                f"{options('qty', 'Quantity', [str(i) for i in range(1, 6)])}"
                f"<button>Add to cart</button></form>")
        return page(p.name, SITE, _nav(w), body, alert)

    async def add(request: Request):
        w = world_of()
        data = await form(request)
        p = w.product(int(data.get("pid", "0") or 0))
        qty = int(data.get("qty", "1") or 1) if data.get("qty", "1").isdigit() else 0
        if p is None or qty < 1:
            return redirect("/")
        if w.cart.get(p.id, 0) + qty > p.stock:
            return redirect(f"/product/{p.id}?error=Only {p.stock} in stock")
        w.cart[p.id] = w.cart.get(p.id, 0) + qty
        return redirect("/cart")

    async def cart(request: Request):
        w = world_of()
        if not w.cart:
            return page("Cart", SITE, _nav(w), "<p>Your cart is empty.</p>")
        rows, total = "", 0
        for pid, qty in w.cart.items():
            p = w.product(pid)
            total += p.price_cents * qty
            rows += (f"<tr><td>{e(p.name)}</td><td>{qty}</td><td>{price(p.price_cents * qty)}</td>"
                     f'<td><form method=post action="/cart/remove"><input type=hidden name=pid '
                     f'value="{pid}"><button aria-label="Remove {e(p.name)}">Remove</button>'
                     f"</form></td></tr>")
        body = (f"<table><tr><th>Item</th><th>Qty</th><th>Subtotal</th><th></th></tr>{rows}"
                f"</table><p>Total: {price(total)}</p><a href=\"/checkout\">Checkout</a>")
        return page("Cart", SITE, _nav(w), body)

    async def remove(request: Request):
        w = world_of()
        data = await form(request)
        w.cart.pop(int(data.get("pid", "0") or 0), None)
        return redirect("/cart")

    async def checkout(request: Request):
        w = world_of()
        alert, data = "", {}
        if request.method == "POST":
            data = await form(request)
            if not w.cart:
                alert = "Your cart is empty"
            elif len(data.get("name", "")) < 2:
                alert = "Name must have at least 2 characters"
            elif len(data.get("address", "")) < 5:
                alert = "Address must have at least 5 characters"
            elif data.get("shipping") not in SHIPPING:
                alert = "Choose a shipping method"
            else:
                number = len(w.orders) + 1
                for pid, qty in w.cart.items():
                    w.product(pid).stock -= qty
                w.orders.append({"number": number, "items": {str(k): v for k, v in w.cart.items()},
                                 "name": data["name"], "address": data["address"],
                                 "shipping": data["shipping"]})
                w.cart.clear()
                return redirect(f"/order/{number}")
        body = ('<form method=post action="/checkout">'
                f'<label>Full name <input name=name value="{e(data.get("name", ""))}"></label>'
                f'<label>Address <input name=address value="{e(data.get("address", ""))}"></label>'
                f"{options('shipping', 'Shipping', SHIPPING, data.get('shipping', ''))}"
                "<button>Place order</button></form>")
        return page("Checkout", SITE, _nav(w), body, alert)

    async def order(request: Request):
        w = world_of()
        n = int(request.path_params["n"])
        if not 1 <= n <= len(w.orders):
            return page("Not found", SITE, _nav(w), "<p>No such order.</p>")
        o = w.orders[n - 1]
        items = "".join(f"<li>{e(w.product(int(k)).name)} x {v}</li>" for k, v in o["items"].items())
        body = (f"<p>Order #{n} confirmed for {e(o['name'])}, shipping: {e(o['shipping'])}.</p>"
                f'<ul aria-label="Ordered items">{items}</ul>')
        return page(f"Order {n}", SITE, _nav(w), body)

    return [Route("/", catalog), Route("/product/{pid:int}", product),
            Route("/cart/add", add, methods=["POST"]), Route("/cart", cart),
            Route("/cart/remove", remove, methods=["POST"]),
            Route("/checkout", checkout, methods=["GET", "POST"]), Route("/order/{n:int}", order)]
