"""The package's layering, checked on the source (see cachequeue/__init__.py).

- the ground floor (modules directly in cachequeue/) imports no part;
- a production-shaped part (every subpackage but `course`) never imports `course`;
- `cache` and `queue` never import each other; `shared` imports `cache` but not `queue`,
  and neither `cache` nor `queue` imports `shared`; `verify` imports only `queue` (and the
  ground floor), and only `cli` (and `course`) import `verify`;
- loading a part's SQL (`sqlfile.load(package, file)`, `sqlfile.read(...)`) counts as
  importing that part: the ground floor cannot compose a schema from the course's tables;
- notebooks import public names only: no `from cachequeue... import _x`, no `module._x`;
- `course.CHAPTERS` says which chapters import each course module, as the notebooks do.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import cachequeue

PACKAGE = Path(cachequeue.__file__).resolve().parent
NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"

TEACHING = "course"
# Parts that must not import each other, beyond the rule that nothing imports `course`.
# `shared` (Redis) may use `cache` (keys, the in-flight record); nothing else crosses.
SEPARATE = {("cache", "queue"), ("queue", "cache"), ("shared", "queue"), ("queue", "shared"),
            ("cache", "shared"),
            # `verify` (the history checker) checks the queue: it may use `queue`, nothing
            # else production-shaped, and no production part uses it but the CLI.
            ("verify", "cache"), ("verify", "shared"), ("verify", "service"), ("verify", "cli"),
            ("queue", "verify"), ("cache", "verify"), ("shared", "verify"), ("service", "verify")}
# Ground-floor modules allowed to import a part. Only the declared entry point: `python -m
# cachequeue` must live at the package's top, and all it does is call the CLI part.
ENTRY_POINTS = {"cachequeue.__main__": "cli"}


def sql_packages(node: ast.Call, package: str) -> str | None:
    """The package whose SQL `sqlfile.load(package, file)` or `sqlfile.read(...)` reads."""
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr in ("load", "read")
             and isinstance(func.value, ast.Name) and func.value.id == "sqlfile")
    if not named or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Name) and first.id == "__package__":
        return package
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def imported_modules(path: Path, module: str) -> set[str]:
    """Absolute names of the modules `path` (the module named `module`) imports, and of the
    packages whose SQL files it loads."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (loaded := sql_packages(node, package)):
            found.add(loaded)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from cachequeue import course` imports the part too.
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
    return found


def violations(root_dir: Path) -> list[str]:
    """Every import in the package at `root_dir` that breaks the layering rules."""
    root = root_dir.name
    parts = {d.name for d in root_dir.iterdir() if (d / "__init__.py").is_file()}

    def part_of(module: str) -> str | None:
        """'cache' for root.cache.loading; None for the ground floor or another package."""
        names = module.split(".")
        return names[1] if names[0] == root and len(names) > 1 and names[1] in parts else None

    problems = {}  # (module, part imported) -> what is wrong; one line per pair
    for path in sorted(root_dir.rglob("*.py")):
        module = ".".join(path.relative_to(root_dir.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        here = part_of(module)
        for target in sorted(imported_modules(path, module)):
            there = part_of(target)
            if there is None or there == here or (module, there) in problems:
                continue
            if root == PACKAGE.name and ENTRY_POINTS.get(module) == there:
                continue
            if here is None:
                problems[module, there] = f"{module} (ground floor) imports {target}"
            elif there == TEACHING and here != TEACHING:
                problems[module, there] = f"{module} ({here}) imports {target} (teaching code)"
            elif (here, there) in SEPARATE:
                problems[module, there] = f"{module} ({here}) imports {target} ({there})"
    return sorted(problems.values())


def test_the_package_keeps_its_layers():
    assert violations(PACKAGE) == []


def test_the_check_finds_each_kind_of_violation(tmp_path):
    root = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "db.py": "from .queue import jobs\n",                     # ground -> part
        "cache/__init__.py": "",
        "cache/loading.py": "from ..course import plots\n",       # production -> course
        "cache/keys.py": "import pkg.queue.jobs\n",               # cache -> queue
        "queue/__init__.py": "",
        "queue/jobs.py": "from .. import checks\nfrom pkg import course\n",  # queue -> course
        "course/__init__.py": "",
        "course/plots.py": "from ..cache import loading\nfrom ..queue import jobs\n",  # allowed
        "schema.py": "from . import sqlfile\nX = sqlfile.read('pkg.course', 'sample.sql')\n",
        "queue/sql_of_course.py": "from .. import sqlfile\nQ = sqlfile.load('pkg.course', 'a.sql')\n",
        "cache/own.py": "from .. import sqlfile\nQ = sqlfile.load(__package__, 'a.sql')\n",  # allowed
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert violations(root) == [
        "pkg.cache.keys (cache) imports pkg.queue.jobs (queue)",
        "pkg.cache.loading (cache) imports pkg.course (teaching code)",
        "pkg.db (ground floor) imports pkg.queue",
        "pkg.queue.jobs (queue) imports pkg.course (teaching code)",
        "pkg.queue.sql_of_course (queue) imports pkg.course (teaching code)",
        "pkg.schema (ground floor) imports pkg.course",
    ]


def test_every_part_says_what_it_is_and_exports_its_names():
    for init in [PACKAGE / "__init__.py", *sorted(PACKAGE.glob("*/__init__.py"))]:
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{init} has no docstring"
        if init.parent != PACKAGE:
            assert "__all__" in init.read_text(encoding="utf-8"), f"{init} has no __all__"


_PRIVATE_IMPORT = re.compile(r"^\s*from cachequeue[\w.]* import .*\b_\w", re.MULTILINE)
_MODULE_NAMES = re.compile(r"^\s*from cachequeue[\w.]* import ([\w, ]+)$", re.MULTILINE)


def private_uses(source: str) -> list[str]:
    """Private names of cachequeue that a notebook cell reaches for."""
    found = [m.group(0).strip() for m in _PRIVATE_IMPORT.finditer(source)]
    names = {n.strip().split(" as ")[-1] for m in _MODULE_NAMES.finditer(source)
             for n in m.group(1).split(",")}
    for name in names:
        found += re.findall(rf"\b{re.escape(name)}\._[A-Za-z]\w*", source)
    return found


def test_private_uses_are_found():
    assert private_uses("from cachequeue.queue import jobs\njobs._QUERIES['x']") == ["jobs._QUERIES"]
    assert private_uses("from cachequeue.cache.loading import _seconds") != []
    assert private_uses("from cachequeue.queue import jobs\njobs.claim(conn)") == []


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_use_public_names_only(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert private_uses(code) == []


def course_imports(source: str) -> set[str]:
    """The course modules (`room.name`, or `name` at the course's top) that code imports."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in source.splitlines())
    found = set()
    for node in ast.walk(ast.parse(code)):
        if not (isinstance(node, ast.ImportFrom) and node.module
                and node.module.split(".")[:2] == ["cachequeue", "course"]):
            continue
        path = node.module.split(".")[2:]
        if len(path) == 2:
            found.add(".".join(path))
        else:
            found.update(".".join([*path, alias.name]) for alias in node.names)
    return found


def test_course_imports_are_found():
    assert course_imports("from cachequeue.course.views import frames, plots\n") == {
        "views.frames", "views.plots"}
    assert course_imports("%matplotlib inline\nfrom cachequeue.course.app.reading import (\n"
                          "    a,\n)\nfrom cachequeue.course import chapter\n") == {
        "app.reading", "chapter"}


def test_the_course_table_says_which_chapters_import_each_module():
    from cachequeue import course

    modules = {f"{p.parent.name}.{p.stem}" for room in course.ROOMS
               for p in (PACKAGE / "course" / room).glob("*.py") if p.stem != "__init__"}
    modules |= {p.stem for p in (PACKAGE / "course").glob("*.py") if p.stem != "__init__"}
    assert set(course.CHAPTERS) == modules, "every course module has a row, and only those"
    seen: dict[str, set[str]] = {m: set() for m in modules}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        for module in course_imports(code):
            seen[module].add(path.name[:2])
    assert {m: tuple(sorted(c)) for m, c in seen.items()} == course.CHAPTERS
