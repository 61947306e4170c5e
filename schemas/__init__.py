"""Contracts every stage speaks: Avro messages, JSON page schemas and table layouts.

- ``avro/*.avsc``: the Pub/Sub message schemas (v1), encoded and decoded by :mod:`schemas.codec`.
- ``json/*.schema.json``: the served edition page and story page (JSON Schema 2020-12), see :mod:`schemas.pages`.
- :mod:`schemas.tables`: the Bigtable / SQLite table layouts used by :mod:`stores`.
"""
