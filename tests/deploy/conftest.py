"""Fixtures of the offline deployment checks (tests/deploy/).

- ``launch``: templates/launch.py loaded as a module (it is copied into the image, not packaged).
- ``terraform_root``: the terraform/ folder; ``terraform_bin``: the terraform executable (fails when absent).
Helpers shared by the test modules live in deploy_helpers.py, registered here as the module ``deploy_helpers``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]


def _register_helpers():
    if "deploy_helpers" not in sys.modules:
        spec = importlib.util.spec_from_file_location("deploy_helpers", HERE / "deploy_helpers.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["deploy_helpers"] = module
        spec.loader.exec_module(module)


_register_helpers()


@pytest.fixture(scope="session")
def launch():
    path = REPO_ROOT / "templates" / "launch.py"
    spec = importlib.util.spec_from_file_location("newsroom_template_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def terraform_root() -> Path:
    return REPO_ROOT / "terraform"


@pytest.fixture(scope="session")
def terraform_bin() -> str:
    found = shutil.which("terraform") or (
        "/usr/local/bin/terraform" if os.access("/usr/local/bin/terraform", os.X_OK) else None
    )
    if not found:
        pytest.fail("terraform is not installed (the machine image has it at /usr/local/bin/terraform)", pytrace=False)
    return found
