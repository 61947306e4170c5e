"""The storyline page of the reader web front end: ``GET /storylines/{language}/{storyline_id}``.

A timeline of one subject: its episodes (stories) newest first, each with its date, headline (a link to the
story's Full Coverage page) and source count, from the storyline document the JSON API serves
(serving/api/storylines.py, loaded on demand from the snapshot store). Shared like the story page: the same bytes for
every reader, the story page's cache headers. Routes on :data:`serving.web.pages.bp` (imported by ``create_app``
before the blueprint is registered). A story page links its storyline (``web/story.html``) and a topic page the
storylines of its stories (:func:`topic_storylines`).
"""

from __future__ import annotations

import orjson

from serving.api.storylines import LANGUAGE, STORYLINE_ID, storyline_doc
from serving.state.context import services
from serving.web.shell import bp, cached, live_editions, not_found, not_ready, render, shared, when
from stores.base import StoreError

MAX_EPISODES = 100  # shown in HTML; the JSON API pages through all of them


@bp.get("/storylines/<language>/<storyline_id>")
def storyline_page(language: str, storyline_id: str):
    from flask import Response

    ext = services()
    cat = ext.holder.current
    if not LANGUAGE.match(language) or not STORYLINE_ID.match(storyline_id):
        return not_found("There is no such storyline.")
    try:
        sl = storyline_doc(ext, cat, language, storyline_id)
    except StoreError:
        return not_ready()
    if sl is None:
        return not_ready() if not cat.ready else not_found("There is no such storyline.")
    if sl.merged_into is not None:
        resp = Response(status=301)
        resp.headers["Location"] = f"/storylines/{language}/{sl.merged_into}"
        resp.headers["Cache-Control"] = ext.story_cache_control
        return resp

    def page_html() -> str:
        episodes = []
        for raw in sl.episodes[:MAX_EPISODES]:
            e = orjson.loads(raw)
            episodes.append(dict(e, first=when(e["first_at"]), day=e["first_at"][:10]))
        return render(
            "web/storyline.html",
            lang=language,
            title=sl.title,
            storyline=sl,
            episodes=episodes,
            more=len(sl.episodes) > MAX_EPISODES,
            json_url=f"/v1/storylines/{language}/{storyline_id}",
            editions=live_editions(cat),
            feed_path=f"/storylines/{language}/{storyline_id}",
            follow=("storyline", f"{language}/{storyline_id}", sl.title),  # reader.js: its feed in the OPML export
        )

    body, etag = cached(cat, ("storyline", language, storyline_id, sl.etag_base), page_html)
    return shared(body, etag, ext.story_cache_control)


@bp.app_template_global("storylines_of")
def storylines_of(stories: list[dict], archive=()) -> list[dict]:
    """The storylines of a topic page (``web/topic.html``): its stories' (:func:`topic_storylines` on the catalog),
    then those of its entity from the storyline index that the JSON page lists (``archive``: its ``storylines``,
    live or long out of the live pool), each once."""
    out = topic_storylines(services().holder.current, stories)
    seen = {s["href"] for s in out}
    for x in archive:
        href = f"/storylines/{x['language']}/{x['storyline_id']}"
        if href not in seen:
            seen.add(href)
            out.append({"href": href, "title": x["title"]})
    return out


def topic_storylines(cat, stories: list[dict]) -> list[dict]:
    """The storylines of a topic page's stories that have a page (their coverage names one), in the order of
    their first story on the topic page: ``{"href", "title"}`` (the title of that story)."""
    out, seen = [], set()
    for s in stories:
        entry = cat.stories.get(str(s["story_id"]))
        story = entry.current if entry is not None else None
        if story is None or story.storyline_id is None or story.storyline_id in seen:
            continue
        seen.add(story.storyline_id)
        out.append({"href": f"/storylines/{story.language}/{story.storyline_id}", "title": story.title})
    return out
