"""The reader web front end: server-rendered HTML pages, shared and cached by the CDN like the JSON API.

- :mod:`.shell`: what every page is rendered in (the ``web`` blueprint, security headers, rendering in the
  edition's language, the page cache, shared responses, 404 / warming up / not ready);
- :mod:`.pages`: the edition, section, topic, For you and story pages and the static assets (``static/``);
- :mod:`.storylines`: the storyline page; :mod:`.signin`: local sign-in (a reader token for this browser);
- :mod:`.messages`: the interface strings per edition language (gettext catalogues ``locale/*.po``); ``templates/``: Jinja.

Exports: the modules (``pages.bp`` and ``signin.bp`` are registered by the app factory, serving/__init__.py).
May import: :mod:`serving.http`, :mod:`serving.state`, :mod:`serving.personal`, :mod:`serving.api`, ``stores``.
"""
