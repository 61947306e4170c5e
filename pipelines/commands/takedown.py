"""``newsroom takedown``: remove an article or a story from everything the public sees, or undo it.

    newsroom takedown --article 3f0c6a1e9b2d4c8f7a6e5d4c3b2a1908 --reason "court order 2026-114" [--who alice]
    newsroom takedown --url https://www.example-news.com/world/2026/01/01/x --reason "publisher request"
    newsroom takedown --story 7300000000000000000 --reason "defamation claim"
    newsroom takedown --article ID --undo --reason "order lifted"
    newsroom takedown --list          # who and why shown with control characters escaped (\\n, \\x1b)

What happens, in this order (a refused command writes nothing and says why; status 2 for a bad flag, 1 for
something the stores refuse):

1. the target is resolved: ``--url`` is cleaned the way the article stage cleans URLs (courlan-based,
   transforms/articles/urls.py: tracking parameters, fragment, AMP and redirect wrappers removed) and hashed to
   the article id; ``--story`` follows a merge to its survivor. An unknown id is refused: an article must be in
   the article store or on a live page, a story in the story store or have a story pointer;
   Ids are ASCII decimal or hex within their range (a story id fits 63 bits), else status 2 before any store is
   read;
2. the tombstone is written (stores/takedowns.py). From then on the origin filters the article or story out of
   every page it holds on its next poll (serving/state/watcher.py, a few seconds), the editions stage omits it from
   the next snapshots (transforms/editions/overlays/takedowns.py) and the backfill skips the article;
3. the audit entry is appended (stores/audit.py: action ``takedown`` or ``takedown-undo``, target
   ``article:{id}`` or ``story:{id}``, who = ``--who``, else $NEWSROOM_OPERATOR, else user@host, why =
   ``--reason``, detail = the tombstone and the pages purged);
4. one CDN purge is requested for the pages that show it now: every live edition page whose entries name the
   story or the article, and the story pages of the stories found there (stories/cdn.py ``open_purger``). A story
   page reached by no live page is not purged: the origin already serves it filtered, and its 30 s TTL bounds
   the edge's copy.

``--undo`` deletes the tombstone (the same steps, with action ``takedown-undo``): the origin serves the article
again on its next poll and the next snapshots include it again. Store flags are the same as
pipelines/options.py ``StoreOptions`` plus ``--project``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict

from pipelines.command_errors import utc_text
from pipelines.commands.control import (
    CommandError,
    add_operator_arguments,
    decimal_id,
    purge,
    refused,
    require_reason,
    shown,
)

_ARTICLE_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def add_arguments(parser) -> None:
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--article", help="Article id (32 hex digits) to take down.")
    what.add_argument("--url", help="Article URL to take down (cleaned and hashed to its article id).")
    what.add_argument("--story", help="Story id (decimal) to take down: the whole story and its page.")
    what.add_argument("--list", action="store_true", help="List the tombstones in force.")
    parser.add_argument("--undo", action="store_true", help="Lift the takedown: the content is served again.")
    add_operator_arguments(parser, "Why (kept in the audit trail). Required.", editions=False)


def target(args) -> tuple[str, str, str]:
    """(kind, id, url) the flags name; CommandError (status 2) for a malformed one."""
    if args.url is not None:
        from transforms.articles.urls import article_id, clean
        from transforms.common import MAX_URL_CHARS, url_too_long

        if url_too_long(args.url):
            raise CommandError(f"--url: longer than {MAX_URL_CHARS} characters ({len(args.url)}); nothing written")
        url = clean(args.url)
        if url is None:
            raise CommandError(f"--url: {args.url!r} is not an http(s) URL")
        return "article", article_id(url), url
    if args.article is not None:
        aid = args.article.strip()
        if not _ARTICLE_ID.fullmatch(aid):
            raise CommandError(f"--article: {args.article!r} is not an article id (e.g. 32 hex digits)")
        return "article", aid, ""
    return "story", str(decimal_id(args.story, "--story")), ""


def live_documents(stores):
    """(pointer, document) of every live edition page, candidate pool and pre-built topic page."""
    from schemas.pages import page_path, pool_path, topic_path
    from stores import NotFound

    for name, version in sorted(stores.pointers.versions("").items()):
        head, _, rest = name.partition("/")
        if head == "topic" and rest.count("/") >= 1:
            edition, _, topic = rest.partition("/")
            path = topic_path(edition, topic, version)
        elif head in ("story", "topic") or not rest or "/" in rest:
            continue
        else:
            path = pool_path(rest, version) if head == "pool" else page_path(head, rest, version)
        try:
            yield name, json.loads(stores.snapshots.get(path))
        except NotFound:
            continue


def affected_pointers(stores, kind: str, id_: str) -> tuple[list[str], set[str]]:
    """The pointers whose live pages show ``kind:id_`` (edition and topic pages, then story pages), and the story
    ids of the entries found (a story is shown by its page entries' cards)."""
    pages: list[str] = []
    stories: set[str] = set()
    for name, doc in live_documents(stores):
        for entry in doc.get("stories") or ():
            cards = [entry.get("representative") or {}, *(entry.get("supporting") or ())]
            sid = str(entry.get("story_id"))
            if (kind == "story" and sid == id_) or (
                kind == "article" and any(c.get("article_id") == id_ for c in cards)
            ):
                stories.add(sid)
                if not name.startswith("pool/") and name not in pages:
                    pages.append(name)
    if kind == "story":
        stories.add(id_)
    listed = stores.pointers.versions("story/")
    return pages + [f"story/{s}" for s in sorted(stories) if f"story/{s}" in listed], stories


def _known(stores, kind: str, id_: str, found: set[str]) -> str:
    """The id to tombstone (a merged story's survivor); CommandError (status 1) when the stores know no such
    thing."""
    if kind == "article":
        if found or stores.articles.get(id_) is not None:
            return id_
        raise CommandError(f"no article {id_} in the article store or on a live page; nothing taken down", 1)
    survivor = stores.stories.resolve(int(id_))
    if survivor != int(id_):
        print(f"story {id_} was merged into {survivor}: taking down {survivor}")
    sid = str(survivor)
    if stores.stories.get_story(survivor) is None and stores.pointers.get(f"story/{sid}") is None:
        raise CommandError(f"no story {sid} in the story store or the pointers; nothing taken down", 1)
    return sid


def main(args) -> int:
    return refused(lambda: _main(args))


def _main(args) -> int:
    from stores import config_from_args

    store_config = config_from_args(args)
    if args.list:
        return _list(store_config)
    kind, id_, url = target(args)
    require_reason(args)
    return _run(args, store_config, kind, id_, url)


def _run(args, store_config, kind: str, id_: str, url: str) -> int:
    from stores import open_stores
    from stores.audit import open_audit_log, operator
    from stores.takedowns import Tombstone, open_takedown_store

    stores, takedowns, audit = (
        open_stores(store_config),
        open_takedown_store(store_config),
        open_audit_log(store_config),
    )
    reason = args.reason.strip()
    if args.undo:
        removed = takedowns.clear(kind, id_)
        if removed is None and kind == "story":
            sid = str(stores.stories.resolve(int(id_)))
            removed = takedowns.clear(kind, sid) if sid != id_ else None
        if removed is None:
            raise CommandError(f"{kind} {id_} is not taken down; nothing undone", 1)
        pointers, _ = affected_pointers(stores, kind, removed.id)
        record, action = removed, "takedown-undo"
    else:
        if kind == "story":  # the survivor of a merge, then the pages that show it
            id_ = _known(stores, kind, id_, set())
            pointers, _ = affected_pointers(stores, kind, id_)
        else:  # an article is known when a live page shows it, else when it is stored
            pointers, stories = affected_pointers(stores, kind, id_)
            _known(stores, kind, id_, stories)
        record = Tombstone(kind, id_, reason, operator(args.who), int(time.time() * 1000), url=url)
        takedowns.set(record)
        action = "takedown"
    audit.record(action, record.target, reason, who=args.who, detail=dict(asdict(record), pointers=pointers))
    verb = "taken down" if action == "takedown" else "served again"
    print(f"{record.target}: {verb} ({shown(reason)}); pages: {' '.join(pointers) or 'none live'}")
    if pointers:
        purge(store_config, args.cdn, pointers, f"{action} {record.target}: {reason}", url_map=args.cdn_url_map)
    return 0


def _list(store_config) -> int:
    from stores.takedowns import open_takedown_store

    for t in open_takedown_store(store_config).all():
        when = utc_text(t.at)
        print(f"{shown(t.target)}  {when} by {shown(t.who)}: {shown(t.reason)}{'  ' + shown(t.url) if t.url else ''}")
    return 0
