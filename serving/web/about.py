"""``GET /about/crawler``: the page the ingest job's User-Agent names (transforms/ingest/fetcher.py
``user_agent_for``: ``NewsroomBot/0.1 (+{origin}/about/crawler; ...)``), so a publisher who finds the bot in a log
reaches the operator's own address and reads what it fetches, how politely, and how to keep it out. The same bytes
for everyone, cached a day."""

from __future__ import annotations

from serving.web.shell import bp, etag_of, shared

CRAWLER_CACHE_CONTROL = "public, max-age=86400"
CRAWLER_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>NewsroomBot</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main>
<h1>NewsroomBot</h1>
<p>NewsroomBot is the crawler of this news aggregator. It reads the RSS, Atom and news sitemap feeds publishers
list, and the article pages those feeds name, to show each story's headline, source and link back to the
publisher's own page.</p>
<ul>
<li>It obeys <code>robots.txt</code> (user agent <code>NewsroomBot</code>), including <code>Crawl-delay</code>.</li>
<li>It waits between requests to one host, sends conditional requests (ETag, Last-Modified) and polls a feed that
keeps failing less and less often.</li>
<li>It follows at most five redirects and refuses bodies over 5 MiB.</li>
</ul>
<p>To keep it out, disallow <code>NewsroomBot</code> in your <code>robots.txt</code>; the change applies within the
hour.</p>
</main></body></html>
"""


@bp.get("/about/crawler")
def crawler_page():
    body = CRAWLER_PAGE.encode()
    return shared(body, etag_of(body), CRAWLER_CACHE_CONTROL)
