"""How the origin runs under gunicorn: the worker and the fast path for the hottest shared GETs.

- :mod:`.gworker`: the gunicorn worker (gthread whose threads never touch a socket: a poller reads and writes);
- :mod:`.framing`: where one HTTP/1.1 request ends in a connection's buffer;
- :mod:`.fastpath`: a WSGI layer in front of Flask for section pages and edition versions (installed by the app
  factory when ``NEWSROOM_FAST_PATH``);
- ``gunicorn.conf.py``: the settings ``newsroom serve`` loads.

Exports: the modules.
May import: :mod:`serving.http`, :mod:`serving.state`; gunicorn. Not the app factory (``serving``): gunicorn
loads the app by name.
"""
