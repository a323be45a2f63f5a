# The two commands a newcomer runs:  make demo   and   make test
# Both install what they need: system packages (Java 17, Graphviz) and a virtualenv in .venv.

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.fw-installed

.PHONY: demo test test-extended test-extended-classic test-extended-connect test-cluster test-all lint tutorials bench bench-flink deps clean

# Bytecode in the pyspark.zip Spark's Python processes import (fw_magics/spark/pyspark_bytecode.py: each starts
# ~0.6 s sooner; ~6 s once), then Spark's classes in a class-data-sharing archive (fw_magics/spark/jvm_archive.py:
# an embedded Spark starts about 6 s sooner; ~90 s once per Java and Spark, ~/.cache/fw-magics). Each is
# done once (later runs only check it); Spark works without them.
deps: $(STAMP)
	-@$(PY) -m fw_magics.spark.pyspark_bytecode
	-@$(PY) -m fw_magics.spark.jvm_archive

$(STAMP): pyproject.toml setup.py scripts/system-deps.sh
	bash scripts/system-deps.sh
	bash scripts/system-deps.sh chromium:chromium || echo "no Chromium: the browser tests will be skipped (under CI they fail)"
	bash scripts/system-deps.sh postgres:postgresql || echo "no PostgreSQL server: fw.from_table's tests will be skipped (under CI they fail)"
	@$(PYTHON) -c 'import sys; sys.exit("fw-magics needs Python >= 3.10; found " + sys.version.split()[0]) if sys.version_info < (3, 10) else None'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (fw-magics)" >/dev/null
	touch $(STAMP)

demo: deps
	$(PY) -m fw_magics.teaching.demo

# Lint (ruff), then the suite on the embedded classic Spark; what takes longest, and the Spark Connect
# run, are left to test-extended (below). How the cases share the cores is decided here, once:
# * TEST_WORKERS=N (default 2): N pytest-xdist workers, each with its own Spark session (tests/scheduling.py
#   says how the cases are shared out, the longest first). Two took 9:50 where one Spark session beside the
#   others took 11:15: the Spark cases are bound by CPU and one session leaves a fifth of the cores idle.
# * TEST_THEN=COMMAND (.ci/run: the cluster run): two pytest processes side by side (scripts/side_by_side.py),
#   the cases that use the run's Spark session in one, the others in the second lane, which then runs COMMAND:
#   its JVMs take the share the Spark lane leaves idle. TEST_WORKERS=1 is that layout without a COMMAND.
TEST_WORKERS ?= 2
TEST_THEN ?=
# Every JVM a test run starts through spark-submit (each pytest's Spark, each kernel's, each killed driver's,
# the browser's lab kernels', the Connect run's server, the cluster run's drivers and Connect server; all read
# SPARK_SUBMIT_OPTS) compiles with C1 only and collects with the serial collector. A test's JVM never earns back
# C2's compile time (every case plans and generates new code), and on 2 cores C2's threads and G1's take the CPU
# the tests need: make test's cases took a quarter to a third less CPU, the extended ones (C1 only before) a tenth
# (docs/benchmarks.md, "Test JVMs"). The cluster run's executors take the options of their driver
# (scripts/cluster.py app_conf: a fifth less CPU for its cases). Behaviour is the JVM's own either way; a user's
# Spark keeps Java's defaults, and so do the cluster's master and workers.
TEST_JVMS = SPARK_SUBMIT_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC $$SPARK_SUBMIT_OPTS"
# JUNIT_DIR=DIR: each pytest run also writes DIR/<run>.xml (.ci/run reads them for its closing table)
JUNIT_DIR ?=
junit = $(if $(JUNIT_DIR),--junitxml=$(JUNIT_DIR)/$(1).xml)
side_by_side = $(PY) scripts/side_by_side.py $(1) "$(2)" "$(JUNIT_DIR)" $(3) --
test: deps
	$(PY) -m ruff check --no-cache .
ifneq ($(TEST_THEN),)
	$(TEST_JVMS) $(call side_by_side,test,not cluster and not extended,--then "$(TEST_THEN)")
else ifeq ($(TEST_WORKERS),1)
	$(TEST_JVMS) $(call side_by_side,test,not cluster and not extended)
else
	$(TEST_JVMS) $(PY) -m pytest -p no:cacheprovider -m "not cluster and not extended" -n $(TEST_WORKERS) --durations=30 $(call junit,test)
endif

# What make test leaves out to stay under 12 minutes on a 2-core machine (CI runs it after make test):
# the notebook front ends (JupyterLab and Notebook 7 in Chromium, Kernel > Interrupt, a second
# kernel), every tutorial run top to bottom with its exercises solved, the kill -9 tests of whole
# driver processes (during execute(); before, during and after a stream's switch; while a savepoint is
# written), the longest streaming cases; then the core cases whose path differs under Spark Connect (an
# in-process server, SPARK_REMOTE=local[2]; tests/connect_cases.py names each and why).
# The Connect run goes in the classic run's second lane, after its cases that need no Spark session of the run's
# (scripts/side_by_side.py --then): it runs while the classic Spark cases still do, never beside another
# Connect server (the lane's own kernels start theirs before it). CI runs this target.
# (through a variable of its own: make runs a recipe line that names $$(MAKE) even under make -n)
SUBMAKE = $(MAKE) --no-print-directory
test-extended: deps
	$(TEST_JVMS) $(call side_by_side,extended,extended,--then "$(SUBMAKE) test-extended-connect JUNIT_DIR=$(JUNIT_DIR)")
test-extended-classic: deps
	$(TEST_JVMS) $(call side_by_side,extended,extended)
test-extended-connect: deps
	$(TEST_JVMS) SPARK_REMOTE="local[2]" $(PY) -m pytest -p no:cacheprovider -m connect --durations=10 $(call junit,extended-connect)

# Everything CI runs: make test, then the extended cases and the cluster.
test-all: test test-extended test-cluster

# A real standalone cluster (a master, two workers) and a separately started Spark Connect
# server on this machine, started and stopped by the tests (scripts/cluster.py); CI runs it
# after `make test` (docs/cluster.md says what it covers and what it costs).
CLUSTER_RUN ?= cluster
test-cluster: deps
	$(TEST_JVMS) $(PY) -m pytest -p no:cacheprovider -m cluster tests/cluster --durations=10 $(call junit,$(CLUSTER_RUN))

lint: deps
	$(PY) -m ruff check --no-cache .

# Execute the tutorials in place and save their outputs (small, no paths of this machine).
tutorials: deps
	$(PY) scripts/execute_tutorials.py

bench: deps
	$(PY) -m benchmarks

# fw-magics against Flink 2.3's Java FLIP-380 operators: PyFlink (its jars) in a venv of its own, a JDK.
FLINK_VENV = .venv-flink
bench-flink: deps
	@command -v javac >/dev/null || { if [ "$$(id -u)" = 0 ]; then apt-get update -q && apt-get install -y -q openjdk-17-jdk-headless; \
	  else echo "bench-flink needs a JDK: sudo apt-get install openjdk-17-jdk-headless"; exit 1; fi; }
	test -x $(FLINK_VENV)/bin/python || $(PYTHON) -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/python -c 'import pyflink' 2>/dev/null || $(FLINK_VENV)/bin/pip install -q apache-flink==2.3.0
	$(PY) -m benchmarks --against-flink

clean:
	rm -rf $(VENV) .fw-jobs build *.egg-info
