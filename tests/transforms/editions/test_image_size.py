"""The card image's stated size reaches every card the editions stage writes (section pages, the pool's
representative, Full Coverage), in the vectorised cycle and the loop reference alike, and only when both sides are
stated: a card of an article without a size has no size fields (the same bytes as before they existed)."""

from __future__ import annotations

import orjson

from schemas import pages as page_schemas

IMG = "https://dailyherald.test/img/lead.jpg"


def cards_of(out, story_id: int) -> list[dict]:
    sid = str(story_id)
    found = [
        c
        for page in out.pages.values()
        for s in page["stories"]
        if s["story_id"] == sid
        for c in [s["representative"], *s.get("supporting", [])]
    ]
    found += [a for cov in out.coverage if cov["story_id"] == sid for a in cov["articles"]]
    return found


def test_the_stated_size_is_on_every_card_and_absent_otherwise(world, make_ranker):
    sized = world.article("daily-herald", world.T0 - 10 * world.MIN, title="Council approves the transit budget")
    sized.update(image_url=IMG, image_width=1200, image_height=675)
    world.add(1, sized)
    unsized = world.article("pacific-times", world.T0 - 9 * world.MIN, title="Storm closes the harbour road")
    unsized.update(image_url=IMG, image_width=1200, image_height=None)  # one side only: no size
    world.add(2, unsized)
    out = make_ranker(world).cycle(world.T0)
    with_size, without = cards_of(out, 1), cards_of(out, 2)
    assert with_size and without
    assert all((c["image_width"], c["image_height"]) == (1200, 675) for c in with_size)
    assert all("image_width" not in c and "image_height" not in c for c in without)
    for page in out.pages.values():
        page_schemas.validate_page("edition_page", orjson.loads(orjson.dumps(page)))
    for cov in out.coverage:
        page_schemas.validate_page("story_coverage", orjson.loads(orjson.dumps(cov)))
    page_schemas.validate_page(
        "candidate_pool", orjson.loads(orjson.dumps(out.pool, option=orjson.OPT_SERIALIZE_NUMPY))
    )
    pool_reps = {s["story_id"]: s["representative"] for s in out.pool["stories"]}
    assert pool_reps["1"]["image_width"] == 1200 and "image_width" not in pool_reps["2"]
    assert make_ranker(world, mode="loop").cycle(world.T0).pages == out.pages
