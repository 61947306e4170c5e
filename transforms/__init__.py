"""PTransforms and DoFns by stage (ingest, articles, stories, editions) and the plain-Python domain logic they call."""
