"""An edition with no publishers (jp-ja with the packaged registry: not one Japanese source) says so, on its page
and in the API, instead of "warming up" for ever (a 200 page reloading itself, a 503 with Retry-After the client
retries without end); an edition whose language has publishers still warms up until its first page."""

from __future__ import annotations

import orjson

from serving.http import conventions as http

NO_PUBS, WARMING = "jp-ja", "fr-fr"  # no Japanese publisher in the packaged registry; two French ones


def test_the_page_of_an_edition_without_publishers_says_so_and_does_not_reload(client):
    resp = client.get(f"/e/{NO_PUBS}/")
    html = resp.data.decode()
    assert resp.status_code == 404 and resp.headers["Cache-Control"] == http.NEGATIVE
    assert 'http-equiv="refresh"' not in html and "data-warming" not in html
    assert "まだ配信元がありません" in html and 'lang="ja' in html  # in the edition's language
    warming = client.get(f"/e/{WARMING}/")
    assert warming.status_code == 200 and 'http-equiv="refresh"' in warming.data.decode()


def test_the_api_answers_no_publishers_without_a_retry_loop(client):
    for url in (
        f"/v1/editions/{NO_PUBS}",
        f"/v1/editions/{NO_PUBS}/sections/top",
        f"/v1/topics/topic:world?edition={NO_PUBS}",
    ):
        resp = client.get(url)
        assert resp.status_code == 404, url
        assert "Retry-After" not in resp.headers and orjson.loads(resp.data)["code"] == "no_publishers", url
    resp = client.get(f"/v1/editions/{WARMING}")
    assert resp.status_code == 503 and resp.headers["Retry-After"]


def test_an_imported_registry_with_publishers_of_the_language_warms_the_edition_up(app, world, client):
    from transforms import publisher_store
    from transforms.publishers import default_registry

    rows = [
        {"publisher_id": "asahi", "name": "Asahi", "hosts": ["asahi.example"], "region": "jp", "language": "ja"},
        *(
            {
                "publisher_id": p.publisher_id,
                "name": p.name,
                "hosts": list(p.hosts),
                "region": p.region,
                "language": p.language,
            }
            for p in default_registry()
        ),
    ]
    publisher_store.publish(world, rows, "test")
    app.extensions["newsroom"].publisher_languages.refresh_s = 0  # read again now
    resp = client.get(f"/v1/editions/{NO_PUBS}")
    assert resp.status_code == 503 and resp.headers["Retry-After"]
    assert client.get(f"/e/{NO_PUBS}/").status_code == 200
