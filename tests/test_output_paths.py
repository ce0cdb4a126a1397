"""Committed notebook outputs read the same from any clone: none names an absolute path of
the machine that ran it (a checkout folder, the temp folder, a home folder, site-packages).

The site shows these outputs as they are committed, so a path here is a path on the site
too. Library code prints paths through `cachequeue.localserver.shown` (relative to the
checkout, `$TMPDIR/...`, `~/...`)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from cachequeue.localserver import shown

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# An absolute path of somebody's machine: the usual roots of checkouts, temp and home
# folders, and any installed package's folder.
MACHINE_PATH = re.compile(r"(?<![\w.$~])/(?:work|tmp|home|root|Users|private/var|var/folders)/"
                          r"|site-packages|dist-packages")
TEXT_MIMES = ("text/plain", "text/html")


def texts(nb) -> list[tuple[int, str, str]]:
    """(cell index, where, text) for every stream, text/plain and text/html output, and every
    error traceback."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                found.append((index, f"stream {output.name}", output.text))
            elif output.output_type == "error":
                found.append((index, "traceback", "\n".join(output.traceback)))
            for mime in TEXT_MIMES:
                if mime in output.get("data", {}):
                    found.append((index, mime, output.data[mime]))
    return found


def machine_paths(nb) -> list[str]:
    """'cell N (where): …excerpt…' for every output that names an absolute machine path."""
    hits = []
    for index, where, text in texts(nb):
        for match in MACHINE_PATH.finditer(text):
            excerpt = text[max(0, match.start() - 40):match.end() + 40].replace("\n", " ")
            hits.append(f"cell {index} ({where}): …{excerpt}…")
    return hits


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_committed_output_names_a_path_of_the_machine_that_ran_it(path):
    assert machine_paths(nbformat.read(path, as_version=4)) == []


def test_the_check_finds_every_kind_of_machine_path():
    out = nbformat.v4.new_output
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x") for _ in range(6)])
    nb.cells[0].outputs = [out("stream", name="stdout", text="来源: embedded, /work/main/.pgdata/data\n")]
    nb.cells[1].outputs = [out("execute_result", data={"text/plain": "PosixPath('/home/ada/x')"})]
    nb.cells[2].outputs = [out("display_data", data={"text/html": "<td>/Users/ada/course</td>"})]
    nb.cells[3].outputs = [out("stream", name="stderr",
                               text="/opt/venv/lib/python3.11/site-packages/psycopg/x.py:1\n")]
    nb.cells[4].outputs = [out("error", ename="E", evalue="", traceback=["at /tmp/cq-1/s.sock"])]
    nb.cells[5].outputs = [out("stream", name="stdout",
                               text="embedded, .pgdata/data; $TMPDIR/cq-1/s.sock; ~/x; GET /v1/jobs/7\n")]
    assert [hit.split(":")[0] for hit in machine_paths(nb)] == [
        "cell 0 (stream stdout)", "cell 1 (text/plain)", "cell 2 (text/html)",
        "cell 3 (stream stderr)", "cell 4 (traceback)"]


def test_what_the_library_prints_passes_the_check():
    from cachequeue import embedded, embedded_redis

    for text in (embedded.source(), embedded_redis.source(), shown(embedded.data_dir()),
                 shown(f"cannot connect to {embedded_redis.data_dir()}/redis.sock")):
        assert not MACHINE_PATH.search(text), text
