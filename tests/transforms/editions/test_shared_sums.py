"""A small book's pair sums, features and relevance are shared by the books of one lineage (transforms/editions/cycle/
kept.py ``SmallSums``; ``StoryBook.lineage``): the editions of one language fold the same events into books of their
own, and each computed them for itself. Shared only where every input they read is the same: the tables (the
lineage: every event folded and every flush, in order), the config, registry and parameters, the live stories and
the pairs within the coverage window, and, for the features, the minute. Likewise a small book's article orders
(per candidates, local publishers and capped groups) and an article's title vector (once per title)."""

from __future__ import annotations

import numpy as np

from tests.transforms.editions.test_ownership_groups import owned_registry
from transforms.editions.book.storybook import StoryBook, compact_change, title_vector
from transforms.editions.cycle import kept as kept_module
from transforms.editions.cycle import representatives, scoring
from transforms.editions.cycle.kept import KeptFeatures, small_sums
from transforms.editions.cycle.representatives import article_order
from transforms.editions.ranker import skip
from transforms.editions.vocabulary.config import load_config
from transforms.editions.vocabulary.params import RankParams
from transforms.publishers import default_registry

FEATURE_FIELDS = ("live", "prim", "coverage", "velocity", "freshness", "base", "n30", "auth_all", "pub_count")
RELEVANCE_FIELDS = ("local", "intl", "geo", "local_geo", "domestic", "rel")


def _events(world):
    T, MIN = world.T0, world.MIN
    world.add(1, world.article("daily-herald", T - 20 * MIN, section="business"))
    world.add(2, world.article("pacific-times", T - 15 * MIN, section="world"))
    first = [compact_change(c) for c in world.changes]
    world.add(1, world.article("daily-herald", T + MIN // 2, section="politics"))  # moves story 1's section only
    return first, compact_change(world.changes[-1])


def _book(config, registry, events, flush_each=False):
    book = StoryBook(config, registry, "en")
    for e in events:
        book.apply(e)
        if flush_each:
            book.flush()
    book.flush()
    return book


def _same_features(f, want):
    return all(np.array_equal(getattr(f, name), getattr(want, name)) for name in FEATURE_FIELDS)


def test_books_of_one_lineage_share_their_sums_and_others_do_not(world, monkeypatch):
    monkeypatch.setattr(kept_module, "SHARED_SUMS", kept_module.SharedSums())
    T, MIN = world.T0, world.MIN
    first, second = _events(world)
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    a, b = _book(config, registry, first), _book(config, registry, first)
    c = _book(config, registry, [*first, second])  # the same live stories and pairs, another primary section
    now = T + MIN
    assert a.lineage == b.lineage != c.lineage
    fa, fb, fc = (KeptFeatures().features(book, now, p) for book in (a, b, c))
    assert fb is fa  # computed once for both books
    assert np.array_equal(fa.live, fc.live) and a.pairs.size == c.pairs.size == 2
    assert _same_features(fc, scoring.features(c, now, p)) and not np.array_equal(fa.auth_all, fc.auth_all)
    assert _same_features(fa, scoring.features(a, now, p))
    # another registry or parameters: not shared, though the lineage is the same
    other = _book(config, owned_registry(("daily-herald", "pacific-times")), first)
    assert other.lineage == a.lineage
    assert small_sums(other, now, p, other.live_mask(now, p.live_window_ms)) is not small_sums(
        a, now, p, a.live_mask(now, p.live_window_ms)
    )
    q = RankParams.from_config(config)
    assert small_sums(a, now, q, a.live_mask(now, q.live_window_ms)).p is q


def test_shared_features_are_the_minutes_own_and_relevance_the_regions_own(world, monkeypatch):
    monkeypatch.setattr(kept_module, "SHARED_SUMS", kept_module.SharedSums())
    T, MIN = world.T0, world.MIN
    first, _ = _events(world)
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    a, b = _book(config, registry, first), _book(config, registry, first)
    for now in (T + MIN, T + 2 * MIN, T + 40 * MIN):  # the same sums (live stories, coverage window), other minutes
        small = small_sums(a, now, p, a.live_mask(now, p.live_window_ms))
        f = small.features(b, now)
        assert _same_features(f, scoring.features(b, now, p)), now
        for region in ("us", "gb"):
            rel, want = small.relevance(b, f, region), scoring.relevance(b, f, region)
            assert all(np.array_equal(getattr(rel, n), getattr(want, n)) for n in RELEVANCE_FIELDS), (now, region)
    assert not f.base.flags.writeable and not small.sums.sp_w.flags.writeable  # shared: never written


def test_the_lineage_follows_every_fold_its_late_time_a_snapshots_content_and_each_flush(world):
    first, second = _events(world)
    config, registry = load_config(), default_registry()
    events = [*first, second]
    plain = _book(config, registry, events)
    assert _book(config, registry, events).lineage == plain.lineage
    assert _book(config, registry, events[:-1]).lineage != plain.lineage
    late = [*first, {**second, "version_at": world.T0 + 5 * world.MIN}]
    assert _book(config, registry, late).lineage != plain.lineage
    assert _book(config, registry, events, flush_each=True).lineage == plain.lineage  # no flush had work
    art = dict(world.changes[0]["article"], version=2, title="A new version of the first article")
    world.add(1, art)  # the article's data changes: its story is rebuilt at the next flush
    world.add(2, world.article("pacific-times", world.T0))
    more = [*events, *(compact_change(c) for c in world.changes[-2:])]
    assert _book(config, registry, more, flush_each=True).lineage != _book(config, registry, more).lineage
    snap = {"type": "storyline", "kind": "SNAPSHOT", "id": "snapshot-7-0", "at": 0, "storyline_id": 7}
    one = _book(config, registry, [{**snap, "minutes": [[1, 5]]}, *events])
    two = _book(config, registry, [{**snap, "minutes": [[1, 6]]}, *events])
    assert one.lineage != two.lineage


def test_each_article_gets_its_own_titles_vector(world):
    """The title vectors a book folds are computed once per title (storybook._title_vector_of), and each article
    still gets its own title's."""
    T = world.T0
    titles = ["Storm closes the coastal highway", "Storm closes the coastal highway", "Council approves the budget"]
    for k, title in enumerate(titles):
        world.add(k + 1, world.article("daily-herald", T - k * world.MIN, title=title))
    book = _book(load_config(), default_registry(), [compact_change(c) for c in world.changes])
    for row in range(book.articles.size):
        title = book.articles.card[row]["title"]
        assert np.array_equal(book.articles.title_vector[row], title_vector(title)), title
    assert not np.array_equal(book.articles.title_vector[0], book.articles.title_vector[2])


def test_shared_article_orders_are_each_editions_own(world, monkeypatch):
    """Article orders (kept.SharedOrders) are shared by books of one lineage, per candidate rows, local publishers
    and capped groups: each is the order computed for that book, edition and cap alone."""
    monkeypatch.setattr(kept_module, "SHARED_ORDERS", kept_module.SharedOrders())
    T, MIN = world.T0, world.MIN
    for k, pub in enumerate(("daily-herald", "london-chronicle", "pacific-times", "wire-service")):
        world.add(1, world.article(pub, T - (k + 1) * MIN, title=f"Storm closes the coastal highway {k}"))
        world.add(2, world.article(pub, T - (k + 5) * MIN, title=f"Council approves the budget {k}"))
    events = [compact_change(c) for c in world.changes]
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config).representative
    a, b = _book(config, registry, events), _book(config, registry, events)
    prim = a.primary_sections().copy()
    orders = {}
    for rows in (np.array([0, 1]), np.array([1])):
        for region in ("us", "gb", "ng", "ke"):
            for capped in (set(), {"daily-herald"}):
                got = kept_module.SHARED_ORDERS.find(b, rows, region, capped, p, prim)
                want = article_order(a, rows, region, capped, p, prim)
                for name in ("rows", "ordered", "scores", "starts", "lens", "near", "near_free", "group_ids", "pos"):
                    assert np.array_equal(getattr(got, name), getattr(want, name)), (rows, region, capped, name)
                orders[(rows.size, region, len(capped))] = got
    assert orders[(2, "ng", 0)] is orders[(2, "ke", 0)]  # no local publisher in either region: one order
    assert orders[(2, "us", 0)] is not orders[(2, "gb", 0)]
    assert not np.array_equal(orders[(2, "us", 0)].scores, orders[(2, "gb", 0)].scores)  # the local boost
    assert not np.array_equal(orders[(2, "us", 0)].scores, orders[(2, "us", 1)].scores)  # the cap


def test_the_proofs_book_edges_kept_on_shared_features_are_each_minutes_and_parameters(world):
    """skip.book_edges keeps its answer on the features (shared by a lineage's books) per minute and parameters:
    asked again with another minute or parameters, it answers as for features that kept nothing."""
    T, MIN = world.T0, world.MIN
    first, _ = _events(world)
    config, registry = load_config(), default_registry()
    p, q = RankParams.from_config(config), RankParams.from_config(config, coverage_window_h=0.25)
    a, b = _book(config, registry, first), _book(config, registry, first)
    f = scoring.features(a, T, p)
    kept = skip.book_edges(a, f, T, p)
    assert skip.book_edges(b, f, T, p) is kept  # the same tables: the same answer
    for now, params in ((T, p), (T, q), (T + 12 * MIN, p)):
        assert skip.book_edges(b, f, now, params) == skip.book_edges(b, scoring.features(a, T, p), now, params)
    assert skip.book_edges(b, f, T, q) != kept and skip.book_edges(b, f, T + 12 * MIN, p) != kept


def test_label_codes_are_each_regions_and_articles_own(world, monkeypatch):
    """label_codes is kept per lineage, articles and local publishers: each answer is the one computed for that
    book, region and articles alone, and regions with the same local publishers (none) share one."""
    T, MIN = world.T0, world.MIN
    for k, pub in enumerate(("daily-herald", "london-chronicle", "wire-service")):
        world.add(1, world.article(pub, T - (k + 1) * MIN, title=f"Storm closes the coastal highway {k}"))
    events = [compact_change(c) for c in world.changes]
    config, registry = load_config(), default_registry()
    a, b = _book(config, registry, events), _book(config, registry, events)
    cases = [
        (arts, region) for arts in (np.array([0, 1, 2]), np.array([1, 2])) for region in ("us", "gb", "ng", "ke", None)
    ]
    want = {}
    for arts, region in cases:
        monkeypatch.setattr(representatives, "_LABEL_CODES", {})  # computed for this book, region and articles alone
        want[(arts.size, region)] = representatives.label_codes(a, arts, region)
    monkeypatch.setattr(representatives, "_LABEL_CODES", {})
    got = {(arts.size, region): representatives.label_codes(b, arts, region) for arts, region in cases}
    for k, codes in got.items():
        assert np.array_equal(codes, want[k]), k
    assert got[(3, "ng")] is got[(3, "ke")] and got[(3, "us")] is not got[(3, "gb")]
    assert not np.array_equal(got[(3, "us")], got[(3, "gb")])  # the local bit
    c = _book(config, registry, events[:-1])  # another lineage: article 1 is the story's first report there
    assert c.lineage != b.lineage
    monkeypatch.setattr(representatives, "_LABEL_CODES", {})
    fresh = representatives.label_codes(c, np.array([1]), "us")
    monkeypatch.setattr(representatives, "_LABEL_CODES", {})
    shared = representatives.label_codes(b, np.array([1]), "us")
    assert np.array_equal(representatives.label_codes(c, np.array([1]), "us"), fresh)
    assert not np.array_equal(shared, fresh)


def test_score_prefixes_are_each_lineages_and_primary_sections_own(world, monkeypatch):
    """score_prefix keeps each article's first score terms per lineage, parameters and primary sections, made in
    whichever batch of rows asked first: the scores are the fresh pass's bit for bit, in any batches, with other
    primary sections and after a fold that retitles an article (a new lineage with the same rows)."""
    T, MIN = world.T0, world.MIN
    for k, pub in enumerate(("daily-herald", "london-chronicle", "wire-service")):
        world.add(1, world.article(pub, T - (k + 1) * MIN, title=f"Storm closes the coastal highway {k}"))
    world.add(2, world.article("daily-herald", T - 5 * MIN, title="Council votes on the budget"))
    events = [compact_change(c) for c in world.changes]
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config).representative

    def fresh(book, arts, prim):
        monkeypatch.setattr(representatives, "_PREFIX", {})
        want = representatives.article_scores(book, arts, "us", set(), p, prim)
        monkeypatch.setattr(representatives, "_PREFIX", {})
        return want

    book = _book(config, registry, events[:-1])
    arts = np.flatnonzero(book.articles.has_data[: book.articles.size])
    prim = book.primary_sections().copy()
    want = fresh(book, arts, prim)
    got = np.concatenate([representatives.article_scores(book, arts[k : k + 1], "us", set(), p, prim) for k in (0, 1)])
    got = np.concatenate([got, representatives.article_scores(book, arts[2:], "us", set(), p, prim)])
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.array_equal(representatives.article_scores(book, arts, "us", set(), p, prim), want)  # all kept now
    for section in range(book.publishers.authority.shape[1] - 1):  # another primary section, another authority
        other = prim.copy()
        other[book.articles.story[arts]] = section
        if not np.array_equal(fresh(book, arts, other), want):
            break
    assert not np.array_equal(fresh(book, arts, other), want)
    representatives.article_scores(book, arts, "us", set(), p, prim)
    assert np.array_equal(representatives.article_scores(book, arts, "us", set(), p, other), fresh(book, arts, other))
    first = world.changes[0]["article"]  # its next version, retitled: the same rows, another lineage
    world.add(
        1, world.article("daily-herald", T - MIN, title="Bridge reopens", article_id=first["article_id"], version=2)
    )
    later = _book(config, registry, events[:-1] + [compact_change(world.changes[-1])])
    assert later.lineage != book.lineage and later.articles.size == book.articles.size
    arts2 = np.flatnonzero(later.articles.has_data[: later.articles.size])
    prim2 = later.primary_sections().copy()
    want2 = fresh(later, arts2, prim2)
    representatives.article_scores(book, arts, "us", set(), p, prim)  # the earlier lineage's, kept
    assert np.array_equal(representatives.article_scores(later, arts2, "us", set(), p, prim2), want2)
    assert not np.array_equal(want2, want)  # the retitled article's centrality moved


def test_the_shared_caches_serve_threads_at_once(world, monkeypatch):
    """A Beam worker runs bundles of several edition keys on threads of one process, all asking the process's shared
    sums and orders. Their least-recently-used bookkeeping (pop, re-insert, evict the oldest) runs under
    kept.SHARED_LOCK: here each cache's dict pauses inside ``pop`` (the GIL released) and counts the threads inside
    at once, which without the lock is several (an eviction could pop a key another thread had just taken, and a
    lost entry list leaves the row budget wrong); and every thread still gets each book's own answers."""
    import threading
    import time

    inside, most, count = [0], [0], threading.Lock()

    class Watched(dict):
        def pop(self, *args):
            with count:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.002)  # another thread asking now would enter too, were nothing holding it out
            try:
                return super().pop(*args)
            finally:
                with count:
                    inside[0] -= 1

    sums, orders = kept_module.SharedSums(), kept_module.SharedOrders()
    sums.by_key, orders.by_key = Watched(), Watched()
    monkeypatch.setattr(kept_module, "SHARED_SUMS", sums)
    monkeypatch.setattr(kept_module, "SHARED_ORDERS", orders)
    monkeypatch.setattr(kept_module.SharedSums, "ROWS", 1)  # every new entry evicts another lineage's
    T, MIN = world.T0, world.MIN
    first, second = _events(world)
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config)
    books = [_book(config, registry, first), _book(config, registry, [*first, second])]
    want = [scoring.features(book, T + MIN, p) for book in books]
    errors: list = []

    def ask(k: int) -> None:
        try:
            for i in range(6):
                j = (i + k) % 2
                f = small_sums(books[j], T + MIN, p, want[j].live).features(books[j], T + MIN)
                assert _same_features(f, want[j])
                prim = books[j].primary_sections().copy()
                orders.find(books[j], np.array([0, 1]), "us", set(), p.representative, prim)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]
    assert most[0] == 1


def test_score_prefixes_beyond_the_budget_drop_the_oldest_lineages_first(world, monkeypatch):
    """Every fold makes a new lineage, so the table fills with past minutes' entries: beyond PREFIX_KEPT rows the
    oldest go first and the newest stays (dropping the whole table also dropped the entries the other books of this
    minute had just made, to be made again by their next edition)."""
    for k, pub in enumerate(("daily-herald", "london-chronicle")):
        world.add(1, world.article(pub, world.T0 - (k + 1) * world.MIN, title=f"Storm closes the highway {k}"))
    config, registry = load_config(), default_registry()
    p = RankParams.from_config(config).representative
    book = _book(config, registry, [compact_change(c) for c in world.changes])
    arts = np.flatnonzero(book.articles.has_data[: book.articles.size])
    prim = book.primary_sections().copy()
    table: dict = {}
    monkeypatch.setattr(representatives, "_PREFIX", table)
    monkeypatch.setattr(representatives, "PREFIX_KEPT", 3 * book.articles.size)
    lineages = [bytes([k]) * 16 for k in range(5)]
    for lineage in lineages:
        book.lineage = lineage
        representatives.article_scores(book, arts, "us", set(), p, prim)
    assert [key[0] for key in table] == lineages[2:]  # the three newest, oldest first
    book.lineage = lineages[2]  # remade (other primary sections): it becomes the newest
    representatives.article_scores(book, arts, "us", set(), p, (prim + 1) % 2)
    assert [key[0] for key in table] == [lineages[3], lineages[4], lineages[2]]
