"""The origin's two secrets: ``NEWSROOM_TOKEN_SECRET`` signs reader tokens, ``NEWSROOM_CURSOR_SECRET`` signs cursors.

Every origin process behind the CDN needs the same two. Outside the embedded (local) backend the origin refuses to
start without both (unless ``TESTING``/``DEBUG``): a missing secret must not fall back to a value anyone can read in
the source. The embedded backend, when they are not given, creates random ones once in ``{data_dir}/secrets.json``
(:func:`local_secrets`, mode 0600; the same file ``newsroom run`` uses), so every worker and restart of a local
origin agrees on them. Read by the app factory (serving/__init__.py) and local sign-in (serving/web/signin.py).
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile

SECRETS_FILE = "secrets.json"


class ConfigError(RuntimeError):
    """The origin's settings do not allow it to start (a missing secret in production)."""


def local_secrets(data_dir: str) -> dict:
    """``{"token", "cursor"}`` (32 random bytes each, hex) from ``{data_dir}/secrets.json``, created once: the one
    writer of that file (the origin's workers and ``newsroom run`` both call it).

    Written to a temp file created 0600 in the same folder, flushed, then hard-linked to the final name: the link
    fails when the name exists, so racing workers agree on the first file and nobody ever sees a partly written
    or widely readable one (a plain rename would replace the winner's file under a worker that already read it).
    A file an older release wrote with the umask's mode is narrowed to 0600 on the next read."""
    path = os.path.join(data_dir, SECRETS_FILE)
    os.makedirs(data_dir, exist_ok=True)
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(prefix=".secrets-", suffix=".tmp", dir=data_dir)  # mode 0600
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"token": secrets.token_hex(32), "cursor": secrets.token_hex(32)}, f)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another worker won: its file is the one
        finally:
            os.unlink(tmp)
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o600)
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError:
        doc = {}
    if doc.get("token") and doc.get("cursor"):
        return doc
    raise ConfigError(f"{path} holds no token and cursor secrets; delete it to have new ones made")


def resolve_secrets(cfg) -> tuple[str, str]:
    """(token secret, cursor secret) from the config; see this module's docstring for the rule."""
    token, cursor = cfg.get("NEWSROOM_TOKEN_SECRET"), cfg.get("NEWSROOM_CURSOR_SECRET")
    missing = [k for k, v in (("NEWSROOM_TOKEN_SECRET", token), ("NEWSROOM_CURSOR_SECRET", cursor)) if not v]
    if cfg.get("NEWSROOM_TOKEN_VERIFIER") is not None and "NEWSROOM_TOKEN_SECRET" in missing:
        missing.remove("NEWSROOM_TOKEN_SECRET")  # tokens are checked by the given verifier, not signed here
        token = token or secrets.token_hex(32)
    if not missing:
        return str(token), str(cursor)
    if (cfg.get("NEWSROOM_BACKEND") or "embedded") == "embedded" or cfg.get("TESTING") or cfg.get("DEBUG"):
        local = local_secrets(str(cfg.get("NEWSROOM_DATA_DIR") or ".newsroom"))
        return str(token or local["token"]), str(cursor or local["cursor"])
    raise ConfigError(
        f"{' and '.join(missing)} must be set for the {cfg.get('NEWSROOM_BACKEND')!r} backend: every origin instance "
        "needs the same secrets, and none may come from the source (generate with "
        "`python -c 'import secrets; print(secrets.token_hex(32))'`)"
    )
