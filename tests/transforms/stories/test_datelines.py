"""Times the labelled records carry outside their metadata: the dateline a body starts with."""

from __future__ import annotations

import datetime as dt

import numpy as np

from tests.transforms.stories.synth import DIM, TEST_CONFIG, unit
from transforms.stories.vocabulary import features as F
from transforms.stories.writer.cluster import StoryClusterer


def _ms(y, m, d):
    return int(dt.datetime(y, m, d, tzinfo=dt.UTC).timestamp() * 1000)


def test_datelines_in_the_languages_we_serve():
    cases = {
        "January 25 , 2010\nAirbus has confirmed": _ms(2010, 1, 25),
        "June 9, 2008\nText": _ms(2008, 6, 9),
        "20 de noviembre del 2004\nTexto": _ms(2004, 11, 20),
        "9 de junio de 2009\nTexto": _ms(2009, 6, 9),
        "6 febbraio 2007\nTesto": _ms(2007, 2, 6),
        "17-Jan-11\nSteve Jobs": _ms(2011, 1, 17),
        "01-Mar-08\nNorthrop": _ms(2008, 3, 1),
        "12 oktober 2009\nTekst": _ms(2009, 10, 12),
        "3 mars 2012\nTexte": _ms(2012, 3, 3),
    }
    for text, want in cases.items():
        assert F.dateline_time(text) == want, text


def test_no_dateline_in_a_sentence_a_long_line_or_an_impossible_date():
    assert F.dateline_time("") is None and F.dateline_time(None) is None
    assert F.dateline_time("The man police say is behind a fatal hit and run on March 3, 2009\nmore") is None
    assert F.dateline_time("Going into week 16, the Colts controlled their destiny") is None
    assert F.dateline_time("31 February 2010\nText") is None
    assert F.dateline_time("Foo 12, 2010\nText") is None  # not a month
    assert F.dateline_time("Beck Wows the CPAC Crowd\nGlenn Beck, the hero") is None


def test_record_time_prefers_published_at_and_the_readers_use_it():
    body = "6 febbraio 2007\nApple Inc. ha annunciato"
    assert F.record_time({"published_at": "2010-02-20", "text": body}) == F.parse_time("2010-02-20")
    assert F.record_time({"published_at": None, "text": body}) == _ms(2007, 2, 6)
    assert F.record_time({"text": "no dateline here at all, just a sentence."}) is None
    out = F.assign_times([{"text": body}, {"text": "plain"}])
    assert [(t, k) for _, t, k in out] == [(_ms(2007, 2, 6), True), (_ms(2007, 2, 6) + F.UNTIMED_STEP_MS, False)]


def test_dated_reports_of_one_kind_years_apart_stay_apart():
    """Two near-identical reports (the lawsuits of 2003 and 2006): with their datelines they are far apart in time."""
    recs = [
        {
            "id": "a",
            "language": "en",
            "title": "Apple Corps sues Apple Computer",
            "text": "July 4, 2003\nApple Corps sues Apple Computer over the music store.",
        },
        {
            "id": "b",
            "language": "en",
            "title": "Apple Corps loses case against Apple Computer",
            "text": "May 8, 2006\nApple Corps loses its case against Apple Computer over the music store.",
        },
    ]

    def run(times):
        fs = [F.from_labelled(r, t, k) for r, t, k in times]
        for f in fs:
            f.vector, f.model = unit(np.ones(DIM)), "test"  # identical vectors: only time can keep them apart
        w = StoryClusterer("en", config=TEST_CONFIG, exact_index=True)
        w.run(fs)
        return w.stats["new"], w.stats["join"]

    times = F.assign_times(recs)
    assert [k for _, _, k in times] == [True, True]
    assert times[1][1] - times[0][1] > 48 * 3_600_000
    assert run(times) == (2, 0)
    # the same two reports without their datelines (one second apart, time unknown) become one story
    undated = [{**r, "text": r["text"].split("\n", 1)[1]} for r in recs]
    assert run(F.assign_times(undated)) == (1, 1)
