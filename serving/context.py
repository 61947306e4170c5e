"""The one accessor of the origin's process-wide resources, like flaskr's ``get_db()``.

:class:`serving.Newsroom` ``.init_app(app)`` stores itself in ``app.extensions["newsroom"]``; request handlers reach
it through :func:`services` only, so the key is spelled once (``EXTENSION``, which ``init_app`` also uses) and a
handler reads as ``services().holder`` rather than repeating the dictionary lookup. ``serving.push`` keeps its own
``app.extensions.get(EXTENSION)``: it runs on an app it holds (not ``current_app``) and must tolerate an origin
without the extension.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import current_app

if TYPE_CHECKING:
    from serving import Newsroom

EXTENSION = "newsroom"


def services() -> Newsroom:
    """The :class:`serving.Newsroom` of the current app (needs an app context, like every handler has)."""
    return current_app.extensions[EXTENSION]
