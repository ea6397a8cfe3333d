"""The local web apps of the web domain (shop, forum, to-do) and the server that hosts them."""
