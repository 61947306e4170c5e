"""What a reader's browser can open of the sample world (devtools/world/server.py).

The world's publishers live on ``*.test`` virtual hosts that only the ingest job (with its host overrides) can
reach. For a person clicking through ``newsroom run`` the same server also answers by path on its own address:

- ``http://127.0.0.1:PORT/``: an index of the world's publishers (the URL ``newsroom run`` prints);
- ``http://127.0.0.1:PORT/world/{host}/{path}``: the page ``http://{host}/{path}`` (article, image, feed, home),
  its links to the world's hosts rewritten to the same path form, so a reader can go on clicking;
- ``/img/{id}.svg`` on each host: the article's picture, a generated SVG (its ``og:image``, so the normaliser puts
  it on the card).

The origin applies the same rewrite to card links and images in local mode only (``NEWSROOM_WORLD_URL``,
serving/web/shell.py ``local_link``): the published pages and the snapshots keep the publishers' real URLs.
"""

from __future__ import annotations

import hashlib
import html
import re
import urllib.parse

IMAGE_W, IMAGE_H = 1200, 630
PREFIX = "/world/"
WORLD_SUFFIX = ".test"  # the world's hosts; nothing else is rewritten
_ABS = re.compile(r'(href|src|content)="http://([a-z0-9.-]+\.test)(?=[/"])')
_ROOTED = re.compile(r'href="/(?!/)')


def image_url(a: dict) -> str:
    return f"http://{a['host']}/img/{a['id']}.svg"


def article_image(a: dict, title: str, publisher: str) -> bytes:
    """A 1200x630 picture for article ``a``: a colour of its own (from its id), its publisher and headline."""
    digest = hashlib.sha1(a["id"].encode()).digest()
    hue = digest[0] * 360 // 256
    words, lines, line = title.split(), [], ""
    for w in words:
        if len(line) + len(w) > 34 and line:
            lines.append(line)
            line = ""
        line = f"{line} {w}".strip()
    lines = [*lines, line][:4]
    text = "".join(
        f'<text x="60" y="{260 + 70 * i}" font-size="56" fill="#fff">{html.escape(t)}</text>'
        for i, t in enumerate(lines)
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{IMAGE_W}" height="{IMAGE_H}" '
        f'viewBox="0 0 {IMAGE_W} {IMAGE_H}" font-family="sans-serif">'
        f'<rect width="100%" height="100%" fill="hsl({hue},45%,35%)"/>'
        f'<circle cx="1050" cy="120" r="220" fill="hsl({(hue + 40) % 360},55%,50%)" opacity=".5"/>'
        f'<text x="60" y="120" font-size="36" fill="#eee">{html.escape(publisher)}</text>{text}</svg>'
    )
    return svg.encode("utf-8")


def split_path(path: str) -> tuple[str, str] | None:
    """``/world/{host}/{rest}`` -> (host, ``/{rest}``); None for any other path."""
    if not path.startswith(PREFIX):
        return None
    host, _, rest = path[len(PREFIX) :].partition("/")
    host = host.lower()
    if not host.endswith(WORLD_SUFFIX):
        return None
    return host, "/" + rest


def rewrite_body(body: bytes, host: str) -> bytes:
    """An HTML page of ``host`` as served by path: links to the world's hosts (absolute, or rooted on ``host``)
    go to their ``/world/...`` form on the same server."""
    text = body.decode("utf-8", "replace")
    text = _ABS.sub(lambda m: f'{m.group(1)}="{PREFIX}{m.group(2)}', text)
    text = _ROOTED.sub(f'href="{PREFIX}{host}/', text)
    return text.encode("utf-8")


def index_page(registry) -> bytes:
    items = "".join(
        f'<li><a href="{PREFIX}{urllib.parse.quote(p.hosts[0])}/">{html.escape(p.name)}</a> '
        f"<small>({html.escape(p.language)})</small></li>"
        for p in sorted(registry, key=lambda p: p.name)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sample world</title></head><body>'
        "<h1>Sample world</h1><p>The publishers <code>newsroom run</code> ingests, served on this machine. "
        f"Each site is also reachable by path: <code>{PREFIX}{{host}}/{{path}}</code>.</p><ul>{items}</ul>"
        "</body></html>"
    ).encode()


def path_form(url: str) -> str | None:
    """``http://{host}.test/path?q`` -> ``/world/{host}.test/path?q`` (the same server, by path); None for any other
    URL. serving/web/shell.py ``local_link`` is the origin's copy of this rule (serving does not import devtools)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not (parts.hostname or "").endswith(WORLD_SUFFIX):
        return None
    query = f"?{parts.query}" if parts.query else ""
    return f"{PREFIX}{parts.hostname}{parts.path or '/'}{query}"
