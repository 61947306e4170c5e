"""PTransforms and DoFns by stage (ingest, articles, stories, editions) and the plain-Python domain logic they call."""

from transforms.moved import install

install()  # old module paths of classes pickled in Beam state (transforms/moved.py)
