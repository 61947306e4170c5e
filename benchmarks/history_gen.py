"""A generator of realistic article streams for the scale benchmarks: a month of news in several languages.

Deterministic (``seed``): the same arguments give the same records, in the labelled-JSONL schema the backfill reads
(``{id, story_id, language, title, text, published_at, publisher, url, topic}``; ``story_id`` and ``topic`` are the
generator's truth, stripped by the backfill on read). What it models, per simulated day:

- languages: English 55 %, Spanish 20 %, French 15 %, German 10 % (the languages of the packaged publisher
  registry, so every article has a known publisher and the ranker has pages to fill);
- story sizes with a long tail: 1 + Pareto(1.2) articles (most stories are one or two articles, a few hundreds);
- wire copies: 15 % of the articles of a wire publisher's story are re-published verbatim by another publisher
  (same title and text, other URL);
- bursts: a story's articles arrive with exponential gaps (minutes), so a big story lands as a burst;
- follow-ups days apart: 25 % of the stories continue an earlier subject (1-10 days before), sharing its entity
  words and half its vocabulary: storylines;
- merges and splits for the repair: 5 % of the stories are born as two halves whose first articles share few words
  and whose later articles share all (the repair merges them); 3 % drift half way to another subject (a split);
- takedowns and controls over time: ``takedowns`` and ``controls`` list ids / stories named at a steady rate
  (``TAKEDOWN_RATE``, ``CONTROL_RATE`` of the stories), with the time they are issued;
- long sagas (``sagas``, none by default): an English subject that gets a new episode, a story of its own, every
  ``saga_every_h`` hours (50: past the writer's 48 h live window, so an episode never joins the last one's story)
  for the whole history, each of four articles sharing the saga's entities and half its words (so the storyline
  stage chains them into one storyline as long as the history). The follow-ups above make storylines of 5-6
  stories at most; a saga is what makes a storyline outlive the live window many times over, where a state that
  keeps a storyline's history would show. Drawn from a random generator of their own: with ``sagas=0`` the history
  is the same records as before they existed.

Texts are words drawn from per-subject vocabularies (``s<subject>w<k>``) and a shared background, so the hash
embedder (bag of hashed words) and the lexical features see the same structure a real stream has. No model.

    from benchmarks.history_gen import History
    h = History(days=30, per_day=2000, seed=1)
    for record in h.articles(): ...
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

DAY_S = 86_400
EPOCH_S = 1_767_225_600  # 2026-01-01T00:00:00Z
LANGUAGES = {"en": 0.55, "es": 0.20, "fr": 0.15, "de": 0.10}
PUBLISHERS = {  # the packaged registry (transforms/publishers.json): id -> (host, is_wire)
    "en": [
        ("wirepress", "wirepress.test", True),
        ("daily-herald", "dailyherald.test", False),
        ("pacific-times", "pacifictimes.test", False),
        ("capital-post", "capitalpost.test", False),
        ("springfield-gazette", "springfieldgazette.test", False),
        ("london-chronicle", "londonchronicle.test", False),
        ("northern-echo", "northernecho.test", False),
        ("mumbai-daily", "mumbaidaily.test", False),
        ("toronto-ledger", "torontoledger.test", False),
        ("content-farm", "contentfarm.test", False),
    ],
    "es": [("agencia-sur", "agenciasur.test", True), ("el-diario-central", "diariocentral.test", False)],
    "fr": [("le-quotidien", "lequotidien.test", False), ("gazette-de-lyon", "gazettedelyon.test", False)],
    "de": [("berliner-blatt", "berlinerblatt.test", False)],
}
WIRE_COPY = 0.15
FOLLOW_UP = 0.25
MERGE_SHARE = 0.05
SPLIT_SHARE = 0.03
TAKEDOWN_RATE = 0.002  # of the articles
CONTROL_RATE = 0.001  # of the stories: a pin or a block issued by an editor
MAX_STORY = 400
SAGA_SIZE = 4  # articles an episode of a saga (each from another publisher)


@dataclass
class Subject:
    sid: int | str  # a saga's episodes: "saga<j>e<k>"
    language: str
    born_s: int
    words: list[str]
    entities: list[str]


@dataclass
class Counts:
    articles: int = 0
    stories: int = 0
    wire_copies: int = 0
    follow_ups: int = 0
    merges: int = 0
    splits: int = 0
    saga_episodes: int = 0
    takedowns: list = field(default_factory=list)  # (issued_at_s, article_id)
    controls: list = field(default_factory=list)  # (issued_at_s, story truth id, kind)


class History:
    """``days`` of articles at ``per_day`` a day (on average; days vary +-20 %), in time order."""

    def __init__(
        self,
        days: int,
        per_day: int,
        seed: int = 1,
        start_s: int = EPOCH_S,
        spread: float = 0.2,
        max_story: int = 0,
        sagas: int = 0,
        saga_every_h: int = 50,
    ):
        """``spread``: days vary by +-spread of ``per_day``; ``max_story``: the largest story (0: MAX_STORY). A
        steady rate (spread 0, a small max_story) makes every day's articles nearly ``per_day``: no burst.
        ``sagas``: long sagas, an episode each every ``saga_every_h`` hours from the first day to the last (module
        docstring); their articles come on top of ``per_day``."""
        if days <= 0 or per_day <= 0:
            raise ValueError("days and per_day must be > 0")
        if not 0 <= spread < 1 or max_story < 0:
            raise ValueError("spread must be in [0, 1) and max_story >= 0")
        if sagas < 0 or saga_every_h <= 0:
            raise ValueError("sagas must be >= 0 and saga_every_h > 0")
        self.days, self.per_day, self.start_s = days, per_day, start_s
        self.spread, self.max_story = spread, max_story or MAX_STORY
        self.rng = random.Random(seed)
        self.subjects: list[Subject] = []
        self.counts = Counts()
        self.saga_rng = random.Random(f"saga-{seed}")
        self.sagas = [
            Subject(f"saga{j}", "en", start_s, [f"saga{j}w{k}" for k in range(12)], [f"Saga{j}a", f"Saga{j}b"])
            for j in range(sagas)
        ]
        self.saga_every_s = saga_every_h * 3600

    def _subject(self, language: str, at_s: int) -> tuple[Subject, bool]:
        rng = self.rng
        recent = [s for s in self.subjects[-500:] if s.language == language and DAY_S <= at_s - s.born_s <= 10 * DAY_S]
        if recent and rng.random() < FOLLOW_UP:  # a follow-up days later: same entities, half the words
            old = rng.choice(recent)
            words = old.words[:6] + [f"s{len(self.subjects)}w{k}" for k in range(6)]
            s = Subject(len(self.subjects), language, at_s, words, old.entities)
            self.subjects.append(s)
            return s, True
        n = len(self.subjects)
        s = Subject(n, language, at_s, [f"s{n}w{k}" for k in range(12)], [f"Ent{n}a", f"Ent{n}b"])
        self.subjects.append(s)
        return s, False

    def _text(self, words: list[str], entities: list[str]) -> tuple[str, str]:
        rng = self.rng
        title_words = rng.sample(words, 5) + entities[:1]
        body = rng.sample(words, min(9, len(words))) + entities + [f"bg{rng.randrange(3000)}" for _ in range(8)]
        rng.shuffle(body)
        title = " ".join(title_words).capitalize()
        return title, title + "\n" + " ".join(body) + "."

    def _story_size(self) -> int:
        return min(self.max_story, int(self.rng.paretovariate(1.2)))

    def _story(self, day: int) -> list[dict]:
        """One story's articles (unsorted): its subject, size, shape (plain, merge, split) and wire copies."""
        rng, c = self.rng, self.counts
        language = rng.choices(list(LANGUAGES), weights=list(LANGUAGES.values()))[0]
        start = self.start_s + day * DAY_S + rng.randrange(DAY_S)
        subject, follow = self._subject(language, start)
        c.stories += 1
        c.follow_ups += follow
        size = self._story_size()
        shape = rng.random()
        other = None
        if size >= 4 and shape < MERGE_SHARE + SPLIT_SHARE:
            other, _ = self._subject(language, start)
            if shape < MERGE_SHARE:
                c.merges += 1
            else:
                c.splits += 1
        out, t = [], start
        for k in range(size):
            t += int(rng.expovariate(1 / 600))  # ten minutes on average: a big story is a burst
            words, ents = subject.words, subject.entities
            if other is not None and shape < MERGE_SHARE and k < size // 2 and k % 2:
                words, ents = other.words[:8] + subject.words[:4], other.entities  # one half, then shared words
            elif other is not None and shape >= MERGE_SHARE and k >= size // 2:
                words, ents = subject.words[:3] + other.words, other.entities  # drifts to another subject
            out.extend(self._articles(subject, language, t, words, ents))
        if rng.random() < CONTROL_RATE * 10:
            c.controls.append((start + 3600, f"truth-{subject.sid}", rng.choice(["pin", "block"])))
        return out

    def _articles(self, subject: Subject, language: str, t: int, words, ents) -> list[dict]:
        rng, c = self.rng, self.counts
        pub, host, wire = rng.choice(PUBLISHERS[language])
        title, text = self._text(words, ents)
        rows = [self._record(subject, language, t, pub, host, title, text)]
        if wire and rng.random() < WIRE_COPY * 4:  # a wire story is re-published verbatim elsewhere
            cpub, chost, _ = rng.choice(PUBLISHERS[language])
            rows.append(self._record(subject, language, t + rng.randrange(60, 1800), cpub, chost, title, text))
            c.wire_copies += 1
        for r in rows:
            if rng.random() < TAKEDOWN_RATE:
                c.takedowns.append((int(t) + DAY_S, r["id"]))
        return rows

    def _saga_day(self, day: int) -> list[dict]:
        """The episodes of every saga that start on ``day``: saga j's k-th at ``k * saga_every_h`` hours (plus j
        hours and a few minutes), a story of :data:`SAGA_SIZE` articles from distinct publishers, its words the saga's
        first six and six of its own, three background words (not eight: with eight, an episode's rarest words won
        its salient keys in the storyline stage over the saga's, and the chain broke at every other episode).
        Measured through month_sim (6 + 3 days, 30 a day): five episodes, five stories, one storyline."""
        rng, out = self.saga_rng, []
        lo, hi = self.start_s + day * DAY_S, self.start_s + (day + 1) * DAY_S
        for j, saga in enumerate(self.sagas):
            first = self.start_s + j * 3600
            k = max(0, -(-(lo - first) // self.saga_every_s))
            while first + k * self.saga_every_s < hi:
                t = first + k * self.saga_every_s + rng.randrange(600)
                episode = Subject(f"{saga.sid}e{k}", "en", t, saga.words[:6], saga.entities)
                words = saga.words[:6] + [f"{saga.sid}e{k}w{i}" for i in range(6)]
                for pub, host, _ in rng.sample(PUBLISHERS["en"][1:], SAGA_SIZE):
                    t += rng.randrange(60, 900)
                    title = " ".join(rng.sample(words, 5) + saga.entities[:1]).capitalize()
                    body = rng.sample(words, 9) + saga.entities + [f"bg{rng.randrange(3000)}" for _ in range(3)]
                    rng.shuffle(body)
                    out.append(self._record(episode, "en", t, pub, host, title, title + "\n" + " ".join(body) + "."))
                self.counts.saga_episodes += 1
                k += 1
        return out

    def _record(self, subject: Subject, language: str, t: int, pub: str, host: str, title: str, text: str) -> dict:
        self.counts.articles += 1
        aid = f"h-{self.counts.articles:08d}"
        return {
            "id": aid,
            "story_id": f"truth-{subject.sid}",
            "language": language,
            "title": title,
            "text": text,
            "published_at": dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "publisher": pub,
            "url": f"https://{host}/{language}/{aid}",
            "topic": None,
        }

    def articles(self) -> Iterator[dict]:
        """Every article of the history, in time order (stories that start late on the last day are cut there)."""
        end = self.start_s + self.days * DAY_S
        carry: list[dict] = []
        for day in range(self.days):
            target = int(self.per_day * self.rng.uniform(1 - self.spread, 1 + self.spread))
            made = 0
            while made < target:
                arts = self._story(day)
                made += len(arts)
                carry.extend(arts)
            carry.extend(self._saga_day(day))
            carry.sort(key=lambda r: r["published_at"])
            cut = dt.datetime.fromtimestamp(self.start_s + (day + 1) * DAY_S, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            now = [r for r in carry if r["published_at"] < cut]
            carry = [r for r in carry if r["published_at"] >= cut]
            yield from now
        last = dt.datetime.fromtimestamp(end, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        yield from (r for r in carry if r["published_at"] < last)
