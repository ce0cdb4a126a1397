# One-command set-up for the course. `make lab` to study (your own copies of the chapters, in
# my-notebooks/), `make lab-instructor` for the instructor copies in notebooks/, `make progress`
# to see which of your exercises pass, `make test` to check everything. Every pip install uses
# the exact versions in constraints.txt (`make lock` regenerates it).
# Without DATABASE_URL the embedded PostgreSQL 18 (in .pgdata/) is started and reused, and
# without REDIS_URL the embedded Redis (in .redis/), without NATS_URL the embedded nats-server
# with JetStream (in .nats/). Only `make db` (and the targets that
# depend on it) starts them: a notebook, test client or worker that finds one stopped says
# "run `make db`" and leaves it stopped.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.installed-dev
SITE   := $(VENV)/.installed-site
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`. The suite waits on servers, kernels and child
# processes more than it computes: on two cores, 4 workers took 248 s for leg 1 where 6 took
# 271 s and failed load-sensitive broker tests (measured on a quiet machine, longest files
# first). TEST_WORKERS=2 on a busy machine.
TEST_WORKERS ?= 4
# Jupyter refuses to run as root unless told; containers and CI machines often are root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

# The learner's own copies (tools/study.py): answers out, check outputs cleared, teaching
# outputs kept; git-ignored; a copy the learner changed is never overwritten or deleted (a
# changed chapter arrives beside it as NN_name.new.ipynb). Their kernels use the schemas
# ch00_mine, ch01_mine, ... (and the Redis prefixes cq:ch00_mine:, ...), so the instructor
# copies (schemas ch00, ch01, ...) can be open at the same time without resetting them;
# `make progress` runs on _progress, `make test` on _test.
STUDY_DIR    ?= my-notebooks
STUDY_SUFFIX ?= _mine
CONSTRAINTS  := constraints.txt

.PHONY: help setup db db-stop lab lab-instructor progress lock test lint execute student bench chaos clean site present serve verify

help:
	@echo "make lab      set up (.venv, PostgreSQL, Redis, NATS), make or refresh your own copies in $(STUDY_DIR)/ (answers out;"
	@echo "              what you changed is kept) and open JupyterLab there (keeps the terminal; Ctrl-C stops it)"
	@echo "make lab-instructor  JupyterLab on notebooks/, the instructor copies with every answer and output"
	@echo "make progress which exercises of your copies pass, chapter by chapter (CH=03 for one; your files are not changed)"
	@echo "make test     set up, then lint + unit + integration + strict nbval of every notebook + student copies"
	@echo "              + site and slides in headless Chromium + service page browser tests + a small chaos run"
	@echo "              + packaging (fresh clone on two cores, pip cache warm: about 5 minutes). Without chromium it prints"
	@echo "              'browser tests skipped: install chromium (apt-get install chromium)' and skips those"
	@echo "              (PYTEST_ARGS='-m \"not db\"' for the tests that need no database)"
	@echo "make execute  re-run notebooks top to bottom in place (NB=notebooks/01_x.ipynb for one)"
	@echo "make student  write student copies to build/student/ (answers and every output removed; for handing out)"
	@echo "make lock     write constraints.txt (the exact versions every install uses) from .venv"
	@echo "make serve    the HTTP service on 127.0.0.1:8000 (page at /, demo mode, /metrics on :8001) and two workers; Ctrl-C stops all"
	@echo "make site     build the course site offline into build/site/ (open build/site/index.html; no database)"
	@echo "make present CH=03  slides of one chapter (reveal.js, offline; S shows speaker notes)"
	@echo "make bench    run the benchmarks in bench/ (JSON on stdout; about 30 minutes)"
	@echo "make chaos    2,000 jobs, workers killed and paused, a server restart (JSON; about 1 minute)"
	@echo "make verify   the history checker: 20 seeded runs of our queue under every fault, then each mutant (about 10 minutes)"
	@echo "make db       start (or reuse) the embedded PostgreSQL, Redis and NATS; say which servers are used"
	@echo "make db-stop  stop the embedded PostgreSQL, the embedded Redis and the embedded NATS"

# Every install takes the exact versions of constraints.txt: the committed outputs are true for
# them (hypothesis 6.100.0 draws another sequence in chapter 05; cachetools 5.x and async-lru
# 2.0.0 break chapter 01's optional part). tests/test_lock.py checks that each installed
# distribution of the lab, dev and site extras is pinned there.
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS)

# The library with its `lab` extra (JupyterLab and what the notebooks use), the kernel, and
# the course's JupyterLab settings (no "official Jupyter news" prompt, no request for it).
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed; set PYTHON=python3.12 or similar")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -e '.[lab]'
	$(BIN)/python -m ipykernel install --sys-prefix --name cachequeue --display-name "Python (cachequeue)" >/dev/null
	$(BIN)/python tools/study.py lab-settings
	touch $(STAMP)

# The test tools on top (`dev` extra).
$(DEV): $(STAMP)
	$(PIP) -e '.[dev]'
	touch $(DEV)

# The site tools on top (`site` extra): Sphinx, myst-nb, the theme, reveal.js, browser checks.
$(SITE): $(STAMP)
	$(PIP) -e '.[site]'
	touch $(SITE)

setup: $(STAMP)

# Start (or reuse) the servers and say which ones the course uses: one line each.
db: $(STAMP)
	@$(BIN)/python -m cachequeue.servers

db-stop: $(STAMP)
	@$(BIN)/python -m cachequeue.embedded stop
	@$(BIN)/python -m cachequeue.embedded_redis stop
	@$(BIN)/python -m cachequeue.embedded_nats stop

lab: db
	@$(BIN)/python tools/study.py copies --dir $(STUDY_DIR)
	@echo "JupyterLab on $(STUDY_DIR)/, your own copies (Ctrl-C to stop; the database keeps running, make db-stop stops it)"
	CACHEQUEUE_SCHEMA_SUFFIX=$(STUDY_SUFFIX) $(BIN)/jupyter lab --notebook-dir=$(STUDY_DIR) $(LAB_ROOT) $(LAB_ARGS)

lab-instructor: db
	@echo "JupyterLab on notebooks/, the instructor copies with the answers (Ctrl-C to stop; make db-stop stops the database)"
	$(BIN)/jupyter lab --notebook-dir=notebooks $(LAB_ROOT) $(LAB_ARGS)

# Each chapter copy in $(STUDY_DIR)/ run in memory on the schemas ch00_progress, ...; nothing
# written back. CH=03 for one chapter (CH="03 06" for two); PROGRESS_ARGS=--timeout 300.
progress: db
	@$(BIN)/python tools/progress.py --dir $(STUDY_DIR) $(PROGRESS_ARGS) $(CH)

# constraints.txt from the packages installed in .venv (after moving a pin there and
# re-running the notebooks and tests).
lock: $(DEV)
	$(BIN)/python tools/lock.py

# The course's HTTP service and two workers on the `serve` schema (created on first use).
# `cachequeue serve` passes Ctrl-C on to its workers once: graceful stop, then exit.
# --demo: the page's user picker (/demo/users hands out the sample users' tokens);
# /metrics with the queue's series on the operator listener, 127.0.0.1:$(SERVE_METRICS_PORT).
SERVE_SCHEMA       ?= serve
SERVE_PORT         ?= 8000
SERVE_METRICS_PORT ?= 8001
serve: db
	$(BIN)/cachequeue serve --schema $(SERVE_SCHEMA) --port $(SERVE_PORT) --app cachequeue.course.app.webapp:create_app --demo --metrics-port $(SERVE_METRICS_PORT) --queue-metrics --workers 2 --concurrency 2 --handlers cachequeue.course.app.summaries:SUMMARY_HANDLERS

lint: $(DEV)
	$(BIN)/ruff check .

test: $(DEV) db lint
	@# Notebooks under test use ch00_test, ch01_test, ...: a test run never resets the
	@# schemas of a chapter that is open in JupyterLab at the same time.
	@# TEST_WORKERS workers, one file each at a time (a notebook's cells share one kernel), the
	@# longest files first (conftest.py's LONGEST_FIRST; xdist's own reorder is off); the 25
	@# slowest steps are listed at the end.
	@$(BIN)/python tools/browser.py check || true
	CACHEQUEUE_SCHEMA_SUFFIX=_test $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 --nbval --nbval-sanitize-with tests/sanitize.cfg $(PYTEST_ARGS)

execute: $(DEV) db
	$(BIN)/python tools/nbtool.py execute $(NB)

student: $(DEV)
	$(BIN)/python tools/nbtool.py student

# The site is built from the committed notebooks; nothing is executed, no database needed.
site: $(SITE)
	$(BIN)/python tools/sitebuild.py

present: $(SITE)
	@test -n "$(CH)" || { echo "usage: make present CH=03"; exit 2; }
	$(BIN)/python tools/slides.py $(CH) --serve

bench: $(DEV) db
	$(PIP) -e '.[dev,bench]'
	@# worker_throughput.py records its run for chapter 11 (data/bench/worker_throughput.json, and
	@# on the embedded server worker_throughput_embedded.json),
	@# broker_throughput.py its run for chapter 13 (data/bench/broker_throughput.json)
	@# the Node.js peers of worker_throughput.py (bench/node/README.md): skipped, with one line, without npm
	@if command -v npm >/dev/null; then npm ci --prefix bench/node --no-audit --no-fund || exit 1; \
	    else echo "npm not found: the Node.js peers will be skipped"; fi
	@for script in bench/*.py; do \
	    case $$script in bench/worker_throughput.py) out="--fast-jobs 50000 --out data/bench/worker_throughput.json";; \
	        bench/broker_throughput.py) out="--out data/bench/broker_throughput.json";; *) out="";; esac; \
	    $(BIN)/python $$script $$out || exit 1; done
	@# the worker run once more on the embedded PostgreSQL 18 (whatever DATABASE_URL says)
	env -u DATABASE_URL $(BIN)/python bench/worker_throughput.py --jobs 3000 --fast-jobs 30000 --out data/bench/worker_throughput_embedded.json

# The full-size chaos run on a private throw-away server (make test runs a small one).
chaos: $(DEV)
	$(BIN)/python bench/chaos.py $(CHAOS_ARGS)

clean:
	rm -rf build .pytest_cache

# A longer history check (issue 21): the real queue under every fault kind over several
# seeds, then each mutant once; each run's JSON document (`cachequeue verify`) and its
# history, snapshot and worker logs (--keep) are kept in build/verify/.
VERIFY_SEEDS ?= 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20
verify: $(DEV)
	@mkdir -p build/verify
	@for seed in $(VERIFY_SEEDS); do \
	    $(BIN)/cachequeue verify --seed $$seed --jobs 60 --per-kind 3 --keep build/verify/real-$$seed > build/verify/real-$$seed.json; \
	    status=$$?; test $$status -eq 0 || { cat build/verify/real-$$seed.json; \
	        echo "real queue, seed $$seed: exit $$status (1 violations, 3 inconclusive: cut short)"; exit 1; }; \
	    echo "real queue, seed $$seed: no violation"; done
	@# Each mutant under the faults that expose it (none: the prober's scenarios are enough).
	@for case in no-token-check:pause,blackhole read-then-claim:none reset-on-shutdown:terminate \
	        unfenced-batch:pause,blackhole heartbeat-after-expiry:pause,blackhole no-backoff:none \
	        finish-unheld:none unlocked-claim:none worker-clock:none uncounted-takeover:none; do \
	    variant=$${case%%:*}; faults=$${case#*:}; \
	    $(BIN)/cachequeue verify --variant $$variant --faults $$faults --seed 1 --jobs 60 --workers 4 --per-kind 3 --keep build/verify/$$variant > build/verify/$$variant.json; \
	    test $$? -eq 1 || { echo "mutant $$variant was not caught"; exit 1; }; \
	    echo "mutant $$variant ($$faults): caught"; done
