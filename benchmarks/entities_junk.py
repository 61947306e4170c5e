"""Junk topic chips and extraction cost: the entity extractor of this tree against a baseline revision, in one run.

For every article of ../shared/data/stories (``--per-file`` rows of each dev file: en, es, it, nl) and of the
newspaper4k fixtures' texts (more languages), each tree extracts the entities
(:func:`transforms.articles.entities.extract`) and builds the card's chips the way the origin does
(:func:`serving.web.pages.with_chips` over a pool entry holding the article's entity ids, in an edition of the
article's language). This script then judges every chip with checks of its own (not the extractor's rules):

- ``code``: a word of 2-3 letters shown in Title Case that the article writes only in capitals ("Us", "Gb", "Nsa",
  "Сша"): a code or acronym mangled;
- ``spelling``: an unlinked name (no alias-table or gazetteer id) the article never writes so ("Lumen'S Orbit",
  "U S Senate", "Mitch Mcconnell", "President-Elect Donald Trump");
- ``function word``: a capitalised function word (the project's per-language lists) inside a name ("Erdbeben Der
  Stärke", "Произошло У Берегов"), a Title Case headline read as a name;
- ``generic``: an unlinked one-word name, not in capitals, that the article also writes in lower case or that
  stopwords-iso lists for its language or English: "State", "Season", "Magnitude", "Web";
- ``title``: a name that starts with a title or office ("Bundeskanzler Olaf Scholz", "Губернатор Гэвин Ньюсом");
- ``duplicate``: a chip whose words all stand in another chip of the same card ("Springfield" beside
  "Springfield, Illinois", "Lumen’s Orbit" beside "Lumen's Orbit").

Prints the share of junk chips (and per check and per language) of the baseline and of this tree, and the CPU
seconds of extraction per 1,000 articles (process time of the extraction alone, best of ``--rounds``), with the ratio
this tree / baseline. Each tree runs in its own subprocesses (the baseline is ``git archive``d to a temporary
folder), the two taking turns round by round, so both are measured by the same command on the same articles.

Run: ``.venv/bin/python benchmarks/entities_junk.py [--baseline 5305f8f] [--per-file 300] [--rounds 2] [--show 15]``
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data beside the checkout (a worktree one level deeper finds it one level up)
DATA = next((d for d in (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data") if d.is_dir()), ROOT)
CHECKS = ("code", "spelling", "function word", "generic", "title", "duplicate")
# Offices before a name, in the edition languages the checks read (independent of the extractor's TITLES list).
OFFICES = re.compile(
    r"^(president|president-elect|sen|senator|gov|governor|mayor|minister|prime|chancellor|"
    r"bundeskanzler\w*|\w*minister\w*|\w*präsident\w*|bürgermeister\w*|kanzler\w*|präsident\w*|"
    r"président\w*|ministre|maire|presidente|presidenta|gobernador\w*|alcalde\w*|ministro|ministra|"
    r"президент\w*|премьер-министр\w*|министр\w*|губернатор\w*|мэр\w*|канцлер\w*|глава)$"
)
_WORDS = re.compile(r"[^\W\d_][\w'’\-.]*")
_EDITION = {"en": "us-en", "de": "de-de", "fr": "fr-fr", "es": "es-es", "it": "it-it", "nl": "nl-nl", "ru": "ru-ru"}


def load_articles(per_file: int) -> list[dict]:
    out = []
    for path in sorted((DATA / "stories").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for r in rows[:per_file]:
            out.append({"title": r.get("title") or "", "text": r.get("text") or "", "language": r.get("language")})
    for meta in sorted((DATA / "pages" / "newspaper4k-fixtures").glob("*/metadata/*.json")):
        txt = meta.parent.parent / "txt" / (meta.stem + ".txt")
        if not txt.exists():
            continue
        m = json.loads(meta.read_text(encoding="utf-8"))
        lang = m.get("language") or m.get("meta_lang") or "en"
        out.append({"title": m.get("title") or "", "text": txt.read_text(encoding="utf-8"), "language": lang})
    return [a for a in out if a["language"]]


def worker(articles: list[dict], rounds: int) -> dict:
    """Runs inside one tree: chips of every article and the extraction's CPU seconds (best of ``rounds``)."""
    from types import SimpleNamespace

    from serving.web.pages import with_chips
    from transforms.articles import entities, places

    places.gazetteer()
    entities.extract("Warm up", "Kristi Noem said in Stockton.", "en")
    best, found = float("inf"), []
    for _ in range(rounds):
        t = time.process_time()
        found = [entities.extract(a["title"], a["text"], a["language"]) for a in articles]
        best = min(best, time.process_time() - t)
    chips = []
    for a, ents in zip(articles, found):
        edition = _EDITION.get(a["language"], "zz-" + a["language"])
        pool = SimpleNamespace(index={1: 0}, entities=[[e["id"] for e in ents]], places=[()], topics=[()])
        [card] = with_chips(SimpleNamespace(pools={edition: pool}), edition, [{"story_id": 1}])
        chips.append([(tid, name) for tid, name in card["chips"]])
    return {"cpu_s": best, "chips": chips}


def common_words(language: str) -> tuple[frozenset, frozenset]:
    """(function words: the project's per-language lists; common words: those and stopwords-iso's lists)."""
    import stopwordsiso

    sys.path.insert(0, str(ROOT))
    from transforms.articles.entity_aliases import stopwords

    function = stopwords(language)
    return function, function | frozenset(stopwordsiso.stopwords([language, "en"]))


def judge(article: dict, card: list[tuple[str, str]], words: tuple[frozenset, frozenset]) -> list[str | None]:
    """The first failed check of each chip (None: a good chip); ``words``: (function words, common words)."""
    function, common = words
    text = (article["title"] + "\n" + article["text"]).replace("’", "'")
    words_of = [[w.casefold() for w in _WORDS.findall(name.replace("’", "'"))] for _, name in card]
    out = []
    for k, (tid, name) in enumerate(card):
        kind, _, value = tid.partition(":")
        unlinked = kind == "entity" and ":" not in value
        words = _WORDS.findall(name)
        flat = name.replace("’", "'")
        if any(
            2 <= len(w) <= 3 and w[0].isupper() and w[1:].islower() and w.upper() in text and w not in text
            for w in words
        ):
            out.append("code")
        elif unlinked and flat not in text and flat.removesuffix("'s") not in text:
            out.append("spelling")
        elif any(w[:1].isupper() and w.casefold() in function for w in words[1:]):
            out.append("function word")
        elif (
            unlinked
            and len(words) == 1
            and not words[0].isupper()
            and (words[0].casefold() in common or _lower_in(words[0], text))
        ):
            out.append("generic")
        elif len(words) > 1 and OFFICES.match(words[0].casefold()):
            out.append("title")
        elif any(j != k and _same(card[k], card[j], words_of[k], words_of[j]) for j in range(len(card))):
            out.append("duplicate")
        else:
            out.append(None)
    return out


def _same(chip: tuple[str, str], other: tuple[str, str], words: list[str], other_words: list[str]) -> bool:
    """Whether a chip says nothing another chip of the card does not: two places, one the other with its region
    ("Springfield" / "Springfield, Illinois"); else all its words stand in the other ("Bush" / "Reggie Bush")."""
    if chip[0].startswith("place:") and other[0].startswith("place:"):
        return chip[1] == other[1].split(", ")[0]
    return bool(words) and set(words) <= set(other_words)


def _lower_in(word: str, text: str) -> bool:
    low = word.casefold()
    return re.search(r"(?<![\w'])" + re.escape(low) + r"(?![\w'])", text) is not None


def run_tree(root: Path, articles_file: Path, rounds: int) -> dict:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + '/benchmarks');"
        "import entities_junk as j; a = json.load(open(sys.argv[2], encoding='utf-8'));"
        "print(json.dumps(j.worker(a, int(sys.argv[3]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(articles_file), str(rounds)],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(root),
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(label: str, articles: list[dict], result: dict, show: int) -> float:
    verdicts: Counter = Counter()
    by_lang: dict[str, Counter] = {}
    examples: Counter = Counter()
    commons: dict[str, frozenset] = {}
    for a, card in zip(articles, result["chips"]):
        lang = a["language"]
        common = commons.get(lang) or commons.setdefault(lang, common_words(lang))
        for (_, name), v in zip(card, judge(a, card, common)):
            verdicts[v] += 1
            by_lang.setdefault(lang, Counter())[v is not None] += 1
            if v is not None:
                examples[(v, name)] += 1
    total = sum(verdicts.values())
    junk = total - verdicts[None]
    per_check = ", ".join(f"{c} {verdicts[c]}" for c in CHECKS)
    langs = ", ".join(f"{lang} {c[True] / max(1, sum(c.values())):.1%}" for lang, c in sorted(by_lang.items()))
    print(f"{label}: {junk} junk of {total} chips = {junk / max(1, total):.1%} ({per_check}); by language: {langs}")
    if show:
        print("   most frequent: " + "; ".join(f"{n!r} ({v}) x{c}" for (v, n), c in examples.most_common(show)))
    return junk / max(1, total)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="5305f8f", help="git revision to compare with (default: main before this)")
    ap.add_argument("--per-file", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--show", type=int, default=15, help="most frequent junk chips to print per tree")
    args = ap.parse_args(argv)
    articles = load_articles(args.per_file)
    if not articles:
        sys.exit(f"no articles under {DATA}: this benchmark reads ../shared/data")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        (base / "benchmarks" / "entities_junk.py").write_bytes(Path(__file__).read_bytes())
        data = Path(tmp) / "articles.json"
        data.write_text(json.dumps(articles), encoding="utf-8")
        old, new = {"cpu_s": float("inf")}, {"cpu_s": float("inf")}
        for _ in range(args.rounds):  # the trees take turns: load on a shared machine drifts
            for have, root in ((old, base), (new, ROOT)):
                got = run_tree(root, data, 1)
                have.update(got, cpu_s=min(have["cpu_s"], got["cpu_s"]))
    langs = Counter(a["language"] for a in articles)
    print(f"articles: {len(articles)} ({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))})")
    before = report(f"baseline {args.baseline}", articles, old, args.show)
    after = report("this tree", articles, new, args.show)
    print(f"junk share: {before:.1%} -> {after:.1%}")
    per_old, per_new = (r["cpu_s"] * 1000 / len(articles) for r in (old, new))
    print(
        f"extraction CPU s / 1,000 articles: baseline {per_old:.3f}, this tree {per_new:.3f} "
        f"(ratio this tree / baseline {per_new / per_old:.2f}x; best of {args.rounds} rounds, process time)"
    )


if __name__ == "__main__":
    main()
