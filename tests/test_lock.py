"""constraints.txt pins every installed distribution of the lab, dev and site extras, every pip
install in the Makefile uses it, and environment.yml and pyproject.toml agree with it."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("lock", ROOT / "tools" / "lock.py")
lock = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("lock", lock)
_spec.loader.exec_module(lock)

PINS = lock.read_pins()


def test_every_installed_distribution_of_the_extras_is_pinned_at_its_installed_version():
    tree = lock.installed_tree()
    assert len(tree) > 100  # the whole tree, not only the direct requirements
    for name in ("hypothesis", "cachetools", "async-lru", "jupyterlab", "psycopg-binary", "lupa"):
        assert name in tree, name  # extras of extras followed: psycopg[binary], fakeredis[lua]
    assert lock.differences(tree, PINS) == []
    assert not {"cachequeue", "pip", "setuptools", "wheel"} & set(PINS)


def test_differences_name_what_is_missing_or_moved():
    assert lock.differences({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "2.1"}) == [
        "c 3 is installed but not pinned", "b is pinned at 2.1 but 2 is installed"]


def test_a_constraint_that_is_not_an_exact_pin_is_refused(tmp_path):
    bad = tmp_path / "constraints.txt"
    bad.write_text("# a comment\nhypothesis>=6.100\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not an exact pin"):
        lock.read_pins(bad)


def test_every_pip_install_in_the_makefile_takes_the_constraints():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^PIP := .*pip install .*-c \$\(CONSTRAINTS\)$", makefile, re.MULTILINE)
    assert "CONSTRAINTS  := constraints.txt" in makefile
    installs = [line for line in makefile.splitlines() if "pip install" in line and not line.startswith("#")]
    assert len(installs) == 1, installs  # everything else goes through $(PIP)
    assert re.search(r"^\$\(STAMP\): pyproject.toml \$\(CONSTRAINTS\)$", makefile, re.MULTILINE)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install" not in ci and "make --no-print-directory test" in ci  # CI installs through make


def test_pyproject_allows_every_pinned_version():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    checked = 0
    for req in map(Requirement, lines):
        name = canonicalize_name(req.name)
        if name == "cachequeue" or name not in PINS:
            continue
        assert req.specifier.contains(PINS[name], prereleases=True), (str(req), PINS[name])
        checked += 1
    assert checked >= 30


CONDA_TO_PYPI = {"redis-py": "redis", "prometheus_client": "prometheus-client"}


def test_environment_yml_pins_the_design_cards_packages_as_constraints_txt_does():
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    entries = re.findall(r"^\s+- ([A-Za-z0-9_.-]+)(==|=|>=)?([^\s#]*)", text, re.MULTILINE)
    pinned = {}
    for name, op, version in entries:
        if name in ("python", "pip", "make", "conda-forge") or name.startswith("-"):
            continue
        assert op == "==", f"environment.yml: {name} is not pinned exactly"
        pinned[canonicalize_name(CONDA_TO_PYPI.get(name, name))] = version
    assert len(pinned) >= 25
    assert {n: v for n, v in pinned.items() if PINS.get(n) != v} == {}
    assert "- -c constraints.txt" in text and "- -e .[dev]" in text
    assert re.search(r"^\s+- python=3\.11$", text, re.MULTILINE)  # the lock's Python
