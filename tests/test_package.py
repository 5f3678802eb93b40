"""The package as a user imports and installs it: subpackages by attribute, one version, its type hints shipped."""

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

import faithkit

ROOT = Path(__file__).resolve().parents[1]


def test_subpackages_load_on_attribute_access_without_torch():
    """``faithkit.metrics`` works after a bare ``import faithkit``, which imports no torch (a fresh interpreter)."""
    probe = (
        "import sys, faithkit; metrics = faithkit.metrics; "
        "print(metrics.__name__, 'PMIFaith' in dir(metrics), 'torch' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["faithkit.metrics", "True", "False"]


def test_an_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'faithkit' has no attribute 'metric'"):
        faithkit.metric  # noqa: B018
    assert {"metrics", "decoding", "sweep"} <= set(dir(faithkit))


def test_one_version_and_the_type_hints_ship():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    assert setup["metadata"]["version"] == "attr: faithkit.__version__"
    assert "py.typed" in setup["options.package_data"]["faithkit"]
    assert (ROOT / "faithkit" / "py.typed").is_file()
