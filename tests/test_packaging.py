"""The course library works when installed from its wheel, not only from this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in a Python that sees the installed wheel and the virtual environment's third-party
# packages, but not the editable install of the checkout (-S: no site, so no .pth files).
PROBE = """
import cachequeue, sys
from pathlib import Path
assert Path(cachequeue.__file__).is_relative_to(sys.argv[1]), cachequeue.__file__
from cachequeue import db, sqlfile
from cachequeue.course.app import data
for package, filename in [("cachequeue", "clock.sql"), ("cachequeue.course.app", "sample.sql"),
                          ("cachequeue.queue", "queue.sql"), ("cachequeue.queue", "schema.sql")]:
    assert "CREATE" in sqlfile.read(package, filename) or "name:" in sqlfile.read(package, filename), (package, filename)
from cachequeue.queue import jobs
from cachequeue.course.probes import naive, plans
from cachequeue.course.views import frames
from cachequeue.course.model import lockstep
assert "FOR UPDATE SKIP LOCKED" in jobs.query("claim").sql
from cachequeue.shared import fencing
assert "fenced_resources" in sqlfile.read("cachequeue.shared", "fencing.sql")
assert "excluded.fence" in fencing.query("fenced_write").sql
assert [len(data.rows(t)) for t in data.TABLES] == [2, 5, 5, 9]
from cachequeue.service import events
from cachequeue.course.app import webapp
assert events.history and all((webapp.PAGE_DIR / f).is_file() for f in ("index.html", "app.js"))
from cachequeue.verify import variants
assert "verify_effects" in sqlfile.read("cachequeue.verify", "driver.sql")
print("ok")
"""


def test_the_wheel_carries_its_sql_and_sample_data(tmp_path):
    dist, site = tmp_path / "dist", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dist), str(ROOT)], check=True,
                   capture_output=True)
    [wheel] = dist.glob("cachequeue-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True,
                   capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), sysconfig.get_path("purelib")])}
    result = subprocess.run([sys.executable, "-S", "-c", PROBE, str(site)], env=env,
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_data_folder_shows_the_packaged_csv_files():
    packaged = ROOT / "lib" / "cachequeue" / "course" / "data"
    names = sorted(p.name for p in packaged.glob("*.csv"))
    assert names == sorted(p.name for p in (ROOT / "data").glob("*.csv"))
    for name in names:
        assert (ROOT / "data" / name).read_bytes() == (packaged / name).read_bytes(), name
