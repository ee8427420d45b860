# Entry points. Each target installs what it needs and caches it:
#   build/sbt-launch-*.jar   the sbt launcher (Maven Central)
#   .venv/                   Python with pyspark==4.3.0, pytest, ruff (PyPI)
#   jvm/spark/target/.../*.jar   the Sluice jar; python/sluice/jars/ carries a copy for pip installs,
#                            and the embedded broker's launcher (jar and POM) for sluice.testing
#   dist/, target/maven-repo/  what is released: the wheel (jar inside) and the Maven artifacts
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SBT := build/sbt
VERSION := $(shell sed -n 's/^ThisBuild \/ version := "\(.*\)"/\1/p' build.sbt)
ASSEMBLY := jvm/spark/target/scala-2.13/sluice-spark-assembly-$(VERSION).jar
PACKAGE_JAR := python/sluice/jars/$(notdir $(ASSEMBLY))
# Written from this checkout for the Python build: the version (from build.sbt), LICENSE and NOTICE.
PACKAGE_META := python/VERSION python/LICENSE python/NOTICE
PYTHON_SOURCES := $(shell find python/sluice -name '*.py' -o -name '*.json' -o -name 'py.typed') python/pyproject.toml python/README.md
WHEEL := dist/spark_sluice-$(VERSION)-py3-none-any.whl
MAVEN_POM := target/maven-repo/dev/sluice/sluice-spark_2.13/$(VERSION)/sluice-spark_2.13-$(VERSION).pom
BROKER_CP := jvm/testkit/target/broker-classpath.txt
# The embedded broker's launcher and its POM, which the wheel carries (an installed wheel resolves the
# POM's dependencies, Kafka's broker, from Maven Central: python/sluice/testing/_resolve.py).
TESTKIT := jvm/testkit/target/scala-2.13/sluice-testkit_2.13-$(VERSION)
PACKAGE_TESTKIT := python/sluice/jars/$(notdir $(TESTKIT)).jar python/sluice/jars/$(notdir $(TESTKIT)).pom
# Hadoop's local file system without forked processes, for the tests' Spark sessions (build.sbt testfs)
TESTFS := jvm/testfs/target/sluice-testfs-$(VERSION).jar
JVM_OUTPUTS := $(ASSEMBLY) $(BROKER_CP) $(MAVEN_POM) $(TESTKIT).jar $(TESTKIT).pom $(TESTFS)
JVM_TASKS := spark/assembly spark/writeSparkKafkaClasspath benchkit/package testfs/package testkit/writeBrokerClasspath testkit/package testkit/makePom spark/publish
# one sbt command (`all`): the tasks run side by side where they do not depend on each other
JVM_BUILD := 'all $(JVM_TASKS)'
# How the Scala example (examples/scala, built against the release) is started, for its test
# (build.sbt writeScalaExampleRun): make test writes it in its one sbt launch
SCALA_EXAMPLE_RUN := target/scala-example-run.json
SCALA_EXAMPLE_SOURCES := examples/scala/build.sbt $(shell find examples/scala/src -type f 2>/dev/null)
# the format check runs beside the suites (a slip still fails the run)
SCALA_TESTS := 'all scalafmtCheckAll scalafmtSbtCheck core/test connectors/test spark/test'
# What the jars above are built from: every file under a subproject's src/main (Scala, jvm/testfs's
# Java, the resources a jar carries), but the Flink anchor's, which only $(FLINK_CP) builds
JVM_SOURCES := $(shell find jvm -path '*/src/main/*' -type f -not -path 'jvm/flinkanchor/*' 2>/dev/null) \
  build.sbt project/plugins.sbt $(wildcard project/*.scala) LICENSE NOTICE
# Expanded when a recipe runs, from the venv's Python (or the one that will make it: sbt may start
# before pip has written the jars, build/test).
export SPARK_JARS_DIR = $(abspath $(VENV))/lib/python$(shell $(if $(wildcard $(PY)),$(PY),$(PYTHON)) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/site-packages/pyspark/jars

.PHONY: demo test test-scala test-python lint-python fmt test-fast build dist bench chaos kafka clean docs api

demo: build
	$(PY) demo/demo.py

# One sbt launch builds what the Python tests need, then runs the Scala tests with the format check
# beside them; the Python suites and the reduced chaos run, each in a lane of its own, run beside
# them from the moment the jar, the broker's classpath and the release are written (build/test,
# which also installs .venv beside sbt's start).
test:
	JVM_OUTPUTS='$(JVM_OUTPUTS) $(SCALA_EXAMPLE_RUN)' VENV_OK='$(VENV)/.ok' VENV_SPARK='$(VENV)/.spark' \
	  build/test 'all $(JVM_TASKS) writeScalaExampleRun' -- $(SCALA_TESTS)

test-scala: $(VENV)/.ok
	$(SBT) $(SCALA_TESTS)

test-python: build dist lint-python $(SCALA_EXAMPLE_RUN)
	$(PY) -m pytest -q --durations=10 $(PYTEST_ARGS) tests

lint-python: $(VENV)/.ok
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Formats the Scala (scalafmt, .scalafmt.conf: Spark's settings) and Python (ruff, ruff.toml) sources.
fmt: $(VENV)/.ok
	$(SBT) scalafmtAll scalafmtSbt
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Everything but the end-to-end suites tagged slow (ScalaTest tag sluice.Slow, pytest marker slow).
test-fast: build dist
	$(SBT) 'core/test' 'connectors/test' 'spark/testOnly -- -l sluice.Slow'
	$(PY) -m pytest -q -m 'not slow' tests

build: $(VENV)/.ok $(ASSEMBLY) $(BROKER_CP) $(VENV)/.sluice-installed

# The release: dist/spark_sluice-<version>-py3-none-any.whl (the self-contained jar inside) and
# dev.sluice:sluice-spark_2.13 with POM, sources and javadoc jars in target/maven-repo.
dist: $(WHEEL) $(MAVEN_POM)

# The Flink anchor's class path is built only when the run includes it (no BENCH, or BENCH names
# flink_anchor or flink_profile among its comma-separated benchmarks).
FLINK_CP := jvm/flinkanchor/target/flink-classpath.txt
bench: build $(if $(BENCH),$(if $(findstring flink_,$(BENCH)),$(FLINK_CP)),$(FLINK_CP))
	$(PY) -m bench.run $(if $(BENCH),--only $(BENCH),)
	$(PY) -m bench.report

$(FLINK_CP): build.sbt $(shell find jvm/flinkanchor -name '*.java' 2>/dev/null)
	$(SBT) 'flinkanchor/writeFlinkClasspath'

# Drivers killed with SIGKILL, the broker restarted, records deleted under reading queries:
# writes bench/results/chaos.json (its duration ends docs/reliability.md's table; a reduced run is part of `make test`).
chaos: build
	$(PY) -m chaos.run
	SLUICE_FAULT_RUNS=1 $(SBT) 'spark/testOnly sluice.security.BrokerFailoverSuite'
	$(PY) -m bench.report

kafka: build
	$(PY) -m sluice.testing

# Regenerates the option reference (docs/options.md) and the Python package's copies of the JVM's
# declarations: python/sluice/_options.json (names, defaults, allowed values, secret flags, the rules
# that combine options) and python/sluice/_metrics.json (every query-progress metric, its type); the
# metric reference that ends docs/observability.md; the error classes' reference (docs/errors.md) and
# their copy for Python (python/sluice/_errors.json); and the Python API reference in target/api/ (pdoc).
docs: $(VENV)/.ok
	mkdir -p target && rm -f target/options.json target/metrics.json target/metrics.md target/errors.json target/errors.generated && $(SBT) 'spark/runMain sluice.Sources' \
	  'spark/runMain sluice.spark.OptionDeclarations $(abspath target/options.json)' \
	  'spark/runMain sluice.spark.MetricDeclarations $(abspath target/metrics.json) $(abspath target/metrics.md)' \
	  'api/runMain sluice.errors.ErrorClasses $(abspath target/errors.json) $(abspath target/errors.generated)' \
	  | grep -v '^\[' | sed -n '/^## /,$$p' > target/options.generated
	test -s target/options.generated || { echo "make docs: sbt printed no reference (is another sbt running?)" >&2; exit 1; }
	test -s target/options.json || { echo "make docs: sbt wrote no target/options.json" >&2; exit 1; }
	test -s target/metrics.json || { echo "make docs: sbt wrote no target/metrics.json" >&2; exit 1; }
	test -s target/metrics.md || { echo "make docs: sbt wrote no target/metrics.md" >&2; exit 1; }
	test -s target/errors.json || { echo "make docs: sbt wrote no target/errors.json" >&2; exit 1; }
	test -s target/errors.generated || { echo "make docs: sbt wrote no target/errors.generated" >&2; exit 1; }
	{ sed '/<!-- generated from the option declarations/q' docs/options.md; cat target/options.generated; } > target/options.md
	mv target/options.md docs/options.md
	{ sed '/<!-- generated from the metric declarations/q' docs/observability.md; cat target/metrics.md; } > target/observability.md
	mv target/observability.md docs/observability.md
	mv target/options.json python/sluice/_options.json
	mv target/metrics.json python/sluice/_metrics.json
	{ sed '/<!-- generated from the error class declarations/q' docs/errors.md; cat target/errors.generated; } > target/errors.md
	mv target/errors.md docs/errors.md
	mv target/errors.json python/sluice/_errors.json
	$(MAKE) --no-print-directory api

# The Python API reference from the docstrings (numpydoc), warnings as errors; needs the package
# installed (make build).
api: $(VENV)/.ok
	rm -rf target/api && $(PY) -W error -m pdoc -d numpy -o target/api sluice sluice.testing

clean:
	rm -rf jvm/*/target target project/target project/project python/sluice/jars \
	  python/build $(PACKAGE_META) dist $(VENV)/.sluice-installed bench/scratch

# --no-compile: a module compiles when first imported; compiling every installed module ahead
# (pyspark's thousands) took 22 of the install's 56 s, on one core, before sbt could start
# pyspark first, alone (its wheel unpacks in seconds): build/test lets sbt compile against its jars
# while pip installs the rest
$(VENV)/.spark: python/requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	pyspark=$$(grep -m1 -oE '^pyspark==[0-9][0-9A-Za-z.]*' python/requirements-dev.txt) && \
	  $(PY) -m pip install -q --no-compile "$$pyspark"
	touch $@

$(VENV)/.ok: $(VENV)/.spark python/requirements-dev.txt
	$(PY) -m pip install -q --no-compile -r python/requirements-dev.txt
	touch $@

# Everything sbt builds, in one launch: the self-contained jar, the jars of Spark's Kafka connector
# (tests and benchmarks), the benchmarks' JVM helpers, the broker's classpath and the Maven release.
$(JVM_OUTPUTS) &: $(VENV)/.ok $(JVM_SOURCES)
	$(SBT) $(JVM_BUILD)
	touch $(JVM_OUTPUTS)

# The Scala example, resolved against the release and compiled by its own build (loaded beside this
# one); where it did not build, the file says why (its test fails with that) and is aged, so that the
# next make tries again
$(SCALA_EXAMPLE_RUN): $(VENV)/.spark $(MAVEN_POM) $(SCALA_EXAMPLE_SOURCES)
	$(SBT) writeScalaExampleRun
	! grep -q '"error"' $@ || touch -d @0 $@

# The Python package carries the self-contained jar, so `pip install` is all a notebook needs.
$(PACKAGE_JAR): $(ASSEMBLY)
	mkdir -p python/sluice/jars && rm -f python/sluice/jars/sluice-spark-assembly-*.jar && cp $(ASSEMBLY) python/sluice/jars/

# `sluice.testing` of an installed wheel starts its broker from these (no checkout needed).
$(PACKAGE_TESTKIT) &: $(TESTKIT).jar $(TESTKIT).pom
	mkdir -p python/sluice/jars && rm -f python/sluice/jars/sluice-testkit_*
	cp $(TESTKIT).jar $(TESTKIT).pom python/sluice/jars/

python/VERSION: build.sbt
	test -n "$(VERSION)" || { echo "no ThisBuild / version in build.sbt" >&2; exit 1; }
	echo "$(VERSION)" > $@

python/LICENSE python/NOTICE: python/%: %
	cp $< $@

# Without build isolation: the pinned setuptools of requirements-dev.txt builds, offline.
$(VENV)/.sluice-installed: $(VENV)/.ok $(PACKAGE_JAR) $(PACKAGE_TESTKIT) $(PACKAGE_META) $(PYTHON_SOURCES)
	$(PY) -m pip install -q --no-build-isolation -e python
	touch $@

$(WHEEL): $(VENV)/.ok $(PACKAGE_JAR) $(PACKAGE_TESTKIT) $(PACKAGE_META) $(PYTHON_SOURCES)
	rm -rf python/build dist/spark_sluice-*.whl
	$(PY) -m pip wheel -q --no-deps --no-build-isolation --wheel-dir dist ./python
	rm -rf python/build
	test -s $@

