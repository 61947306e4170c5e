"""The headline check (transforms/editions/book/headlines.py): the score on synthetic clickbait and on real news
headlines, and its two uses: the representative choice and top stories."""

from __future__ import annotations

import json

import pytest

from transforms.editions.book.headlines import CLICKBAIT, assess, headline_quality, is_clickbait

FARM = "10 foods doctors never eat (number 7 will shock you)"

CLICKBAIT_EXAMPLES = [
    ("en", FARM),
    ("en", "You won't believe what this senator said about taxes"),
    ("en", "7 reasons your landlord is lying to you"),
    ("en", "Top 10 tricks airlines don't want you to know"),
    ("en", "The 5 surprising foods that burn belly fat"),
    ("en", "SHE DID WHAT? THE MAYOR SPEAKS OUT"),
    ("en", "Is this the end of the euro?!"),
    ("en", "What happened next will amaze you"),
    ("es", "No creerás lo que encontraron en la playa"),
    ("es", "10 alimentos que los médicos nunca comen (el número 7 te sorprenderá)"),
    ("es", "Los 5 trucos para ahorrar en la factura de la luz"),
    ("de", "10 Dinge, die Ärzte niemals essen"),
    ("de", "Du wirst nicht glauben, was dann passierte"),
    ("fr", "Vous n'allez pas croire ce que ce maire a fait"),
    ("fr", "8 astuces pour payer moins d'impôts (la numéro 5 va vous surprendre)"),
]

NEWS_EXAMPLES = [
    ("en", "Senate passes the budget bill after a long night of votes"),
    ("en", "10 people killed as a storm hits the Gulf coast"),
    ("en", "NASA and the FBI open an inquiry into the launch failure"),
    ("en", "Will the Fed raise rates again in June?"),
    ("en", "Earthquake of magnitude 6.1 strikes off the coast of Chile"),
    ("en", "Officials describe the response to the event number 12 in detail"),
    ("en", "Route number 9 closes for repairs until the end of May"),
    ("es", "El Congreso aprueba los presupuestos tras una larga votación"),
    ("es", "¿Subirá el Banco Central los tipos de interés?"),
    ("de", "Bundestag beschließt das neue Heizungsgesetz"),
    ("fr", "Le Sénat adopte la réforme des retraites après un long débat"),
]


@pytest.mark.parametrize("lang,title", CLICKBAIT_EXAMPLES)
def test_synthetic_clickbait_is_flagged(lang, title):
    h = assess(title, lang)
    assert h.clickbait >= CLICKBAIT, h
    assert h.quality <= 0.5


@pytest.mark.parametrize("lang,title", NEWS_EXAMPLES)
def test_plain_news_headlines_are_not_flagged(lang, title):
    h = assess(title, lang)
    assert h.clickbait < CLICKBAIT, h
    assert h.quality >= 0.75


def test_quality_prefers_informative_lengths_and_penalises_shouting():
    good = headline_quality("Parliament approves the new budget after a long night of votes")
    assert good == 1.0
    assert headline_quality("Budget") < good  # too short to inform
    assert headline_quality("Budget " * 60) < good  # too long for a card
    assert headline_quality("PARLIAMENT APPROVES THE NEW BUDGET AFTER A LONG NIGHT") < good
    assert headline_quality("") == 0.0 and not is_clickbait("")


def test_a_language_without_its_own_patterns_uses_the_english_ones():
    assert is_clickbait(FARM, "it") and is_clickbait(FARM, "")
    assert not is_clickbait("10 Dinge, die Ärzte niemals essen", "en")  # the German list nouns are German


def test_few_real_news_headlines_are_flagged(shared_data):
    titles = []
    for path in sorted((shared_data / "stories").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("title"):
                titles.append((rec.get("language") or "en", rec["title"]))
    assert len(titles) > 3000
    flagged = [t for lang, t in titles if is_clickbait(t, lang)]
    share = len(flagged) / len(titles)
    print(f"clickbait among {len(titles)} real headlines: {len(flagged)} ({share:.2%})")
    assert share < 0.02


# ------------------------------------------------------------------------------------------- in the ranking
def _news(world, story_id, at):
    world.story(story_id, ["daily-herald", "capital-post"], at, section="health", title=f"Hospital {story_id} opens")


@pytest.mark.parametrize("mode", ["vector", "loop"])
def test_a_content_farm_listicle_does_not_reach_top_stories(world, make_ranker, mode):
    T, MIN = world.T0, world.MIN
    for s in (1, 2, 3):
        _news(world, s, T - 40 * MIN)
    world.story(9, ["content-farm"], T - 2 * MIN, section="health", title=FARM)  # the freshest story
    world.story(8, ["content-farm"], T - 2 * MIN, section="health", title="County opens a new flu vaccine clinic")
    out = make_ranker(world, mode=mode).cycle(T)
    top = [s["story_id"] for s in out.pages["top"]["stories"]]
    assert "9" not in top
    assert "8" in top  # a plain headline of the same site is not demoted
    health = [s["story_id"] for s in out.pages["health"]["stories"]]
    assert health[-1] == "9"  # its section still lists it, after every other story


def test_clickbait_of_an_authoritative_newsroom_is_not_demoted(world, make_ranker):
    T, MIN = world.T0, world.MIN
    _news(world, 1, T - 40 * MIN)
    world.story(9, ["daily-herald"], T - 2 * MIN, section="health", title=FARM)
    top = [s["story_id"] for s in make_ranker(world).cycle(T).pages["top"]["stories"]]
    assert "9" in top


def test_a_plain_headline_represents_the_story_over_a_clickbait_one(world, make_ranker):
    T, MIN, HOUR = world.T0, world.MIN, world.HOUR
    # Equal authority (both unknown hosts); the clickbait one is the first report, so it gets the first-report boost.
    world.add(1, world.article("blog-1", T - 10 * MIN, title=FARM, section="health"))
    world.add(1, world.article("blog-2", T - 9 * MIN, title="The foods doctors avoid, and what the studies say"))
    for mode in ("vector", "loop"):
        r = make_ranker(world, mode=mode)
        for h in range(8):  # every hour: a near-tie would rotate the clickbait card in now and then
            story = {s["story_id"]: s for s in r.cycle(T + h * HOUR).pool["stories"]}["1"]
            assert story["representative"]["publisher_id"] == "blog-2", (mode, h)
