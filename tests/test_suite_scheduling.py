"""The suite's own scheduling (tests/conftest.py): under pytest-xdist, tests that share a module fixture run on one
worker, which sets the fixture up once. When the groups are lost (conftest's marks made after xdist's worker reads
them, or pytest 9.2's node ids: no ``@group`` in them), the suite runs its accelerate launch twice."""

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

SHARING = """
import os
import pytest

@pytest.fixture(scope="module")
def shared():
    with open(os.environ["SETUPS"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")

def test_alone():
    pass

{tests}
"""


@pytest.mark.slow  # a pytest run with two xdist workers
def test_tests_sharing_a_module_fixture_run_on_one_worker(pytester, monkeypatch, request):
    tests = "\n".join(f"def test_{i}(shared):\n    pass\n" for i in range(8))
    pytester.makepyfile(test_sharing=SHARING.format(tests=tests))
    pytester.makepyfile(test_others="\n".join(f"def test_{i}():\n    pass\n" for i in range(8)))
    setups = pytester.path / "setups.txt"
    monkeypatch.setenv("SETUPS", str(setups))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # this suite's conftest and options (setup.cfg's addopts: --dist loadgroup, the plugins left out)
    result = pytester.runpytest("-p", "tests.conftest", *request.config.getini("addopts"), "-n", "2", "-v")
    result.assert_outcomes(passed=17)
    assert len(setups.read_text().splitlines()) == 1, result.stdout.str()
