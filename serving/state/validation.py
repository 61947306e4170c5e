"""Schema validation of snapshot documents as the origin loads them.

Same JSON Schemas as :func:`schemas.pages.validate_page` (schemas/json), validated with jsonschema-rs when it is
installed: a 1,000-candidate pool (64 floats per candidate) takes ~2 ms there against ~0.4-0.9 s with the
pure-Python validator, and the origin re-validates every pool of ~70 editions each minute. Falls back to
schemas.pages when jsonschema-rs is absent. Raises :class:`schemas.pages.PageError` with the JSON path.
"""

from __future__ import annotations

import functools

from schemas import pages

try:
    import jsonschema_rs
except ImportError:  # pragma: no cover - exercised only without the package
    jsonschema_rs = None


@functools.cache
def _validator(kind: str):
    registry = jsonschema_rs.Registry([(pages.schema(n)["$id"], pages.schema(n)) for n in pages.PAGES])
    return jsonschema_rs.validator_for(pages.schema(kind), registry=registry, validate_formats=True)


def validate(kind: str, doc: dict) -> None:
    if jsonschema_rs is None:
        pages.validate_page(kind, doc)
        return
    v = _validator(kind)
    if v.is_valid(doc):
        return
    err = next(iter(v.iter_errors(doc)))
    path = "/".join(str(p) for p in err.instance_path) or "(root)"
    raise pages.PageError(f"{kind} invalid at {path}: {err.message}")
