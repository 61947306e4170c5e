"""The one accessor of the origin's process-wide resources, like flaskr's ``get_db()``.

:class:`serving.Newsroom` ``.init_app(app)`` stores itself in ``app.extensions["newsroom"]``; request handlers reach
it through :func:`services` only, so the key is spelled once (``EXTENSION``, which ``init_app`` also uses) and a
handler reads as ``services().holder`` rather than repeating the dictionary lookup. ``serving.api.push`` keeps its own
``app.extensions.get(EXTENSION)``: it runs on an app it holds (not ``current_app``) and must tolerate an origin
without the extension.
"""

from __future__ import annotations

from typing import Any

from flask import current_app

EXTENSION = "newsroom"


def services() -> Any:
    """The :class:`serving.Newsroom` of the current app (needs an app context, like every handler has). Typed
    ``Any``: the extension is defined by the app factory, the top of the origin, which this module sits below."""
    return current_app.extensions[EXTENSION]
