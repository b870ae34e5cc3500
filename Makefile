# streamproc: the two commands are `make demo` and `make test` (README.md).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.9
STAMP := $(VENV)/.installed
CACHE ?= $(HOME)/.cache/streamproc
PYTEST_ARGS ?=
# pytest workers of `make test` (pytest-xdist, whole files per worker): most tests wait on brokers, JVMs, Spark and
# Airflow, so two workers on two cores finish well before one; each worker starts its own session services.
PYTEST_WORKERS ?= 2
# pytest's temporary directories (every tmp_path: staged segments, state dirs, brokers' logs of some tests) in RAM
# where the machine has /dev/shm: the suite writes and fsyncs many small files, and on a shared disk that cost more
# wall time than the work (measured on tests/unit/spark + state: 174.8 s on disk, 128.5 s in RAM). One directory per
# checkout (pytest empties it at start), removed after the run so that it holds no RAM afterwards. Only where
# /dev/shm has 4 GiB free (the whole suite's peak was 2.1 GB; a container's default /dev/shm is 64 MB); else empty:
# pytest's default under the system's temporary directory.
PYTEST_BASETEMP ?= $(shell test -d /dev/shm -a -w /dev/shm && test "$$(df -Pk /dev/shm | awk 'NR==2 {print $$4}')" -ge 4194304 2>/dev/null && echo /dev/shm/streamproc-pytest-$$(printf %s "$(CURDIR)" | cksum | cut -d' ' -f1))
# `make demo DEMO_ARGS="--orders 6000 --fresh-airflow"`: the demo's options (python -m streamproc_dev.demo --help)
DEMO_ARGS ?=
# Written by tools/prereq.sh: the tools it found (JAVA_HOME, STREAMPROC_GO, STREAMPROC_PG_BINDIR, STREAMPROC_CHROMIUM).
PREREQ_ENV := .prereq.env
# Runs a recipe's command with those tools.
WITH_TOOLS := . ./$(PREREQ_ENV) &&

.PHONY: prereq install test deploy-test unit integration demo screenshots lint typecheck bench bench-quick bench-venv lock services clean conformance chaos

# Python 3.11, a JDK >= 17, Maven, Go >= 1.24, a C compiler, the PostgreSQL server and Chromium: checked before
# anything else, installed where possible (apt-get as root; Go from the module proxy), else stop with the command.
prereq:
	@PYTHON=$(PYTHON) sh tools/prereq.sh $(PREREQ_ENV)

$(STAMP): requirements.lock pyproject.toml streamproc/engine/_bulk_kernel.c streamproc/kafka/_message_kernel.c | prereq
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	@# --compile-bytecode: .pyc files written once here, so no process (Spark's Python workers, Airflow's CLI and
	@# task runners, the tests' subprocesses) compiles the modules it imports from source at each start, which it
	@# does wherever PYTHONDONTWRITEBYTECODE is set (≈ 0.3 CPU-s of pandera and numpy.ma per Spark worker)
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --reinstall-package streamproc -e .
	@# the repository's tooling (streamproc_dev: services, demo, conformance), which the wheel does not carry, is
	@# importable in this venv from any directory (Airflow and Spark processes of the demo import it): the .pth names a
	@# directory holding only a link to it, not the repository, whose streamproc.egg-info would register the Airflow
	@# plugin a second time
	@mkdir -p $(VENV)/repository && ln -sfn $(CURDIR)/streamproc_dev $(VENV)/repository/streamproc_dev
	@$(BIN)/python -c 'import sys, sysconfig, pathlib; pathlib.Path(sysconfig.get_path("purelib"), "streamproc-repository.pth").write_text(sys.argv[1] + "\n")' '$(CURDIR)/$(VENV)/repository'
	@touch $@

install: $(STAMP)

# Fetches (once, into $(CACHE)) the Kafka broker jars, the MinIO binary and the Schema Registry (Apicurio Registry's
# runner jar and lib/) the integration tests start, and Docker Compose (`docker compose config` in
# tests/integration/deploy/), built beside MinIO: both are Go builds from the module proxy whose downloads overlap.
# The registry's Maven download runs beside them, after the broker's (one Maven at a time); all must succeed.
services: install
	$(WITH_TOOLS) $(BIN)/python -m streamproc_dev broker fetch
	@$(WITH_TOOLS) $(BIN)/python -m streamproc_dev compose fetch & compose=$$!; \
	$(WITH_TOOLS) $(BIN)/python -m streamproc_dev registry fetch & registry=$$!; \
	$(WITH_TOOLS) $(BIN)/python -m streamproc_dev s3 fetch; minio=$$?; \
	wait $$compose; compose=$$?; \
	wait $$registry; registry=$$?; \
	exit $$(( minio != 0 || compose != 0 || registry != 0 ))

# Two jobs run beside pytest's workers, each with its own log, and all three must pass:
# - the conformance report (its own private broker; mostly JVM time while the tests mostly wait on brokers, Spark and
#   Airflow): conformance/results/report.log;
# - the compose deployment test (tests/integration/deploy/test_compose_up.py, issue #30): docker-compose.yml's images
#   built, the whole file up and healthy, a backfill with approval through Airflow's REST API, `down -v` leaving
#   nothing: $(DEPLOY_LOG). It starts dockerd when no engine answers (root), stops it after, and prints one
#   "deployment test skipped: <why>" line instead where it cannot have an engine (not root, none running) or the
#   disk cannot hold the images (under 10 GB free where its engine keeps them).
# pytest leaves that file to it (--ignore). On an interrupt the trap sends it SIGTERM (`exec`: $$! is its python), on
# which it takes the compose project down and stops its dockerd (the report finishes on its own, as before).
# CI (.ci/run, a clean clone on 2 cores) allows 90 minutes and the suite must stay under 60 cold; measured figures are
# in docs/operations.md.
DEPLOY_LOG := tests/results/deploy.log
test: services
	@mkdir -p conformance/results $(dir $(DEPLOY_LOG))
	@echo "beside pytest: the conformance report (log: conformance/results/report.log) and the compose deployment test (log: $(DEPLOY_LOG))"
	@$(WITH_TOOLS) $(BIN)/python -m streamproc_dev.conformance.report --broker > conformance/results/report.log 2>&1 & \
	report=$$!; \
	$(WITH_TOOLS) exec $(BIN)/python -m streamproc_dev.deploy_test > $(DEPLOY_LOG) 2>&1 & \
	deploy=$$!; \
	trap 'kill -TERM $$deploy 2>/dev/null; wait $$deploy; exit 130' INT TERM; \
	$(WITH_TOOLS) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(if $(PYTEST_BASETEMP),--basetemp=$(PYTEST_BASETEMP)) \
		--ignore=tests/integration/deploy/test_compose_up.py $(PYTEST_ARGS); tests=$$?; \
	$(if $(PYTEST_BASETEMP),rm -rf $(PYTEST_BASETEMP);) \
	wait $$report; conformance=$$?; \
	wait $$deploy; deployment=$$?; \
	trap - INT TERM; \
	echo "--- conformance report (exit $$conformance), the last lines of conformance/results/report.log:"; \
	tail -n 15 conformance/results/report.log; \
	echo "--- compose deployment test (exit $$deployment), the last lines of $(DEPLOY_LOG):"; \
	tail -n 15 $(DEPLOY_LOG); \
	exit $$(( tests != 0 || conformance != 0 || deployment != 0 ))

# The compose deployment test alone (the same runner as in `make test`), its progress on the terminal. Needs root
# (it installs docker.io and debootstrap, starts dockerd when no engine answers) or a running engine. Images and
# layers are cached (~/.cache/streamproc/docker): a second run rebuilds only what changed.
deploy-test: services
	@STREAMPROC_PREREQ_DOCKER=yes PYTHON=$(PYTHON) sh tools/prereq.sh
	$(WITH_TOOLS) $(BIN)/python -m streamproc_dev.deploy_test $(PYTEST_ARGS)

# Chaos: `streamproc run` killed at points drawn at random, recovered by the same command (TRIALS=N, SEED=S replays).
TRIALS ?= 20
chaos: services
	@$(WITH_TOOLS) STREAMPROC_CHAOS_TRIALS=$(TRIALS) STREAMPROC_CHAOS_SEED=$(SEED) \
		$(BIN)/python -m pytest -n $(PYTEST_WORKERS) tests/integration/ledger/test_run_chaos.py $(PYTEST_ARGS)

# Every shared and own scenario through streamproc and the real Kafka Streams oracle: task level and pure state
# operations in one JVM, restore plans and the application level (ordering scenarios, 4 live runs each) through
# real KafkaStreams apps on a private broker; conformance/results/latest.{json,md}; non-zero when streamproc and
# Kafka Streams differ anywhere.
conformance: services
	$(WITH_TOOLS) $(BIN)/python -m streamproc_dev.conformance.report --broker

unit: install
	$(WITH_TOOLS) $(BIN)/python -m pytest -m "not integration" $(PYTEST_ARGS)

integration: services
	$(WITH_TOOLS) $(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

demo: services
	$(WITH_TOOLS) $(BIN)/python -m streamproc_dev.demo $(DEMO_ARGS)

# The README's Airflow screenshots (docs/img), taken by the browser test in headless Chromium.
screenshots: services
	STREAMPROC_SCREENSHOTS=docs $(WITH_TOOLS) $(BIN)/python -m pytest -q tests/integration/airflow/test_browser.py

lint: install
	$(BIN)/ruff check streamproc streamproc_dev tests bench examples
	$(BIN)/ruff format --check streamproc streamproc_dev tests bench examples
	$(BIN)/mypy

typecheck: install
	$(BIN)/mypy

# Quix Streams, the Python peer of the comparison, needs confluent-kafka < 2.13: a venv of its own (bench/README.md).
QUIX_VENV := .venv-quix
$(QUIX_VENV)/.installed: bench/quix-requirements.txt | install
	@test -x $(QUIX_VENV)/bin/python || $(PYTHON) -m venv $(QUIX_VENV)
	$(BIN)/uv pip sync --quiet --python $(QUIX_VENV)/bin/python bench/quix-requirements.txt
	@touch $@

# Spark Structured Streaming, the Spark peer (issue #28): PySpark 4.2, the release of the newest Kafka connector
# Maven Central serves, with the pandas, pyarrow and protobuf that transformWithStateInPandas needs and streamproc's
# lock leaves out: a venv of its own; the connector's jars are copied once into $(CACHE) (bench/README.md).
SSS_VENV := .venv-sss
$(SSS_VENV)/.installed: bench/sss-requirements.txt bench/sss-pom.xml | install
	@test -x $(SSS_VENV)/bin/python || $(PYTHON) -m venv $(SSS_VENV)
	$(BIN)/uv pip sync --quiet --compile-bytecode --python $(SSS_VENV)/bin/python bench/sss-requirements.txt
	$(WITH_TOOLS) $(BIN)/python -m bench.sss_connector > /dev/null
	@touch $@

bench-venv: $(QUIX_VENV)/.installed $(SSS_VENV)/.installed

# Everything: the step benchmarks (pytest, bench/test_bench_*.py), then streamproc against Kafka Streams, Quix
# Streams and Spark Structured Streaming over 1 M and 10 M records, 8 and 32 partitions, 1 and 2 cores, three
# repeats (hours).
bench: services bench-venv
	$(WITH_TOOLS) $(BIN)/python -m pytest bench -s $(PYTEST_ARGS)
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --full

# The comparison on 1 M records, 8 partitions, one repeat (≈ 15 minutes, 7 of them Spark Structured Streaming's 4
# runs): bench/results/<date>-<machine>-compare.*
bench-quick: services bench-venv
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --quick

# The scaling curves: count over 1 M and 3 M records, 1 and 2 cores, streamproc run and Kafka Streams with 1 and 2
# threads: bench/results/<date>-<machine>-scaling-compare.* and its -compare-scaling.png
.PHONY: bench-scaling
bench-scaling: services
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --scaling

# The points the quick and scaling plans leave out (bench/README.md, "10 M records and 32 partitions"): count and
# pass-through at 10 M records (streamproc run, the engine, Kafka Streams 1 thread; produces the 10 M data set once,
# ~470 MB on the broker), Kafka Streams' count with 2 threads and the default cache at 10 M, and count at 1 M × 32
# partitions; 2 cores. One broker for all (started once, attached to), results under -10m-*/-32p-compare.*
.PHONY: bench-10m
bench-10m: services
	$(WITH_TOOLS) $(BIN)/python -m bench.generator start
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --attach --cores 2 --sizes 1000000 --partitions 32 \
		--workloads count --systems streamproc,streamproc-engine,kafka-streams --ks-variants 1:off,1:default --label 32p
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --attach --cores 2 --sizes 10000000 --workloads count \
		--systems streamproc,streamproc-engine,kafka-streams --ks-variants 1:off --label 10m-count
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --attach --cores 2 --sizes 10000000 --workloads pass_through \
		--systems streamproc,streamproc-engine,kafka-streams --ks-variants 1:off --label 10m-pass
	$(WITH_TOOLS) $(BIN)/python -m bench.compare --attach --cores 2 --sizes 10000000 --workloads count \
		--systems kafka-streams --ks-variants 2:off,1:default --label 10m-ks
	$(WITH_TOOLS) $(BIN)/python -m bench.generator stop

# Re-resolve the pins after changing pyproject.toml; installs come only from requirements.lock.
lock: install
	$(BIN)/uv pip compile pyproject.toml --all-extras --python-version 3.11 --universal -o requirements.lock

clean:
	rm -rf $(VENV) $(QUIX_VENV) $(SSS_VENV) $(PREREQ_ENV) .pytest_cache .mypy_cache .ruff_cache conformance/target
