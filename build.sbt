// Sluice build. Spark 4.3.0 is compiled against as "provided": its jars are taken from the pyspark
// 4.3.0 wheel (PyPI) in .venv, because Spark 4.3.0's artifacts are not on Maven Central here.
// Everything else resolves from Maven Central only (see build/sbt).
import java.io.File

ThisBuild / organization := "dev.sluice"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"
ThisBuild / scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17")
ThisBuild / javacOptions ++= Seq("--release", "17")

// The Kafka client Spark's own Kafka connector (spark-sql-kafka-0-10) depends on.
val kafkaVersion = "3.9.2"

// Spark 4.3.0's jars, from the pyspark wheel (SPARK_JARS_DIR is set by the Makefile).
lazy val sparkJarsDir = settingKey[File]("directory holding Spark 4.3.0's jars")
lazy val sparkProvided = Seq(
  sparkJarsDir := sys.env
    .get("SPARK_JARS_DIR")
    .filter(_.nonEmpty)
    .map(file)
    .getOrElse {
      // whichever Python 3 minor version made .venv
      val lib = (ThisBuild / baseDirectory).value / ".venv" / "lib"
      Option(lib.listFiles).toSeq.flatten
        .filter(_.getName.startsWith("python3"))
        .sortBy(_.getName)
        .map(_ / "site-packages" / "pyspark" / "jars")
        .find(_.isDirectory)
        .getOrElse(lib / "python3" / "site-packages" / "pyspark" / "jars")
    },
  Compile / unmanagedJars ++= {
    val dir = sparkJarsDir.value
    if (!dir.isDirectory)
      sys.error(
        s"Spark jars not found in $dir: run `make build` (it installs pyspark==4.3.0 into .venv)")
    (dir * "*.jar").classpath
  })

// Compression codecs and logging the Kafka client pulls in are already in every Spark distribution.
val kafkaClients = ("org.apache.kafka" % "kafka-clients" % kafkaVersion)
  .exclude("com.github.luben", "zstd-jni")
  .exclude("at.yawk.lz4", "lz4-java")
  .exclude("org.xerial.snappy", "snappy-java")
  .exclude("org.slf4j", "slf4j-api")

// Spark's own Kafka source, the reference for differential tests and benchmarks. Spark 4.3.0's
// build of it is not on Maven Central; 4.2.0 (same Kafka client, 3.9.2) runs on Spark 4.3.0, with
// the newest token provider there is (4.0.0; its classes are unchanged since).
val sparkKafkaConnector = Seq(
  ("org.apache.spark" %% "spark-sql-kafka-0-10" % "4.2.0").intransitive(),
  ("org.apache.spark" %% "spark-token-provider-kafka-0-10" % "4.0.0").intransitive(),
  "org.apache.commons" % "commons-pool2" % "2.13.1")

// Iceberg tables are planned by Iceberg's own engine-free library (iceberg-core: metadata, manifests,
// scan planning); their data files are read by Sluice's Parquet reader. 1.10.x is the newest line
// whose Avro (1.12.0) is not newer than Spark 4.3's (1.12.1). What Spark 4.3 already carries is
// taken from Spark (Avro, Jackson 2.21, RoaringBitmap, slf4j; Hadoop is not a dependency of
// iceberg-core); Caffeine (not in Spark) and aircompressor (Spark 4.3 carries 2.0.3, not the 0.27
// Iceberg is built with) are bundled relocated under sluice.shaded (shadeRules below), so no other
// copy on a user's classpath meets them. Iceberg itself is not relocated (its own reflection names
// its classes): an Iceberg Spark runtime on the same class path would meet this copy. httpclient5 is
// left out: only Iceberg's REST catalog uses it (a REST catalog by properties needs it added with --packages;
// docs/connectors.md).
val icebergVersion = "1.10.1"
val icebergCore = ("org.apache.iceberg" % "iceberg-core" % icebergVersion)
  .exclude("org.apache.avro", "avro")
  .exclude("com.fasterxml.jackson.core", "jackson-core")
  .exclude("com.fasterxml.jackson.core", "jackson-databind")
  .exclude("com.fasterxml.jackson.core", "jackson-annotations")
  .exclude("org.roaringbitmap", "RoaringBitmap")
  .exclude("org.slf4j", "slf4j-api")
  .exclude("org.apache.httpcomponents.client5", "httpclient5")
  .exclude("org.apache.httpcomponents.core5", "httpcore5")
  .exclude("org.apache.httpcomponents.core5", "httpcore5-h2")
  // annotations only, never loaded at run time
  .exclude("org.checkerframework", "checker-qual")
  .exclude("com.google.errorprone", "error_prone_annotations")

// Delta tables are planned by Delta Kernel (io.delta:delta-kernel-api, and -defaults for its engine:
// the log's JSON and checkpoints), engine-free; their data files are read by Sluice's Parquet reader.
// 4.4.x is the newest line. What Spark 4.3 already carries is taken from Spark: Hadoop (3.5.0 for
// Kernel's 3.4.2), parquet-hadoop (1.17.0 for 1.16.0), RoaringBitmap (1.6.10 for 0.9.25; Kernel reads
// deletion vectors with it, which Sluice refuses), slf4j and jsr305. delta-kernel-api carries its own
// Jackson relocated (io.delta.kernel.shaded); delta-kernel-defaults (its JSON handler) uses Jackson's
// own packages and so runs on Spark's 2.21 instead of the 2.13.5 its POM names, which is left out
// (the tests read logs through it). Kernel and delta-storage are not relocated: a delta-spark on the
// same class path would meet this copy.
// delta-storage (Kernel's LogStores) is bundled; its Unity Catalog client (for UC-managed commits,
// with its own Jackson, log4j and HTTP stack) is not: Sluice reads tables by path.
val deltaKernelVersion = "4.4.0"
def deltaKernel(module: String) = ("io.delta" % s"delta-kernel-$module" % deltaKernelVersion)
  .exclude("org.apache.hadoop", "hadoop-client-api")
  .exclude("org.apache.hadoop", "hadoop-client-runtime")
  .exclude("org.apache.parquet", "parquet-hadoop")
  .exclude("com.fasterxml.jackson.core", "jackson-core")
  .exclude("com.fasterxml.jackson.core", "jackson-databind")
  .exclude("com.fasterxml.jackson.core", "jackson-annotations")
  .exclude("com.fasterxml.jackson.datatype", "jackson-datatype-jdk8")
  .exclude("org.roaringbitmap", "RoaringBitmap")
  .exclude("org.slf4j", "slf4j-api")
  .exclude("com.google.code.findbugs", "jsr305")
  .exclude("io.unitycatalog", "unitycatalog-client")
  .exclude("io.unitycatalog", "unitycatalog-hadoop")
val deltaKernelDeps = Seq(deltaKernel("api"), deltaKernel("defaults"))

// Tests only: Iceberg's own Parquet writers (iceberg-parquet) write the data and position delete
// files of the tables the delete tests read (pyiceberg writes no merge-on-read deletes), and its
// generic reader (iceberg-data) reads them as the independent reader, on Spark's parquet-hadoop,
// Avro and ORC.
def icebergForTests(module: String) =
  ("org.apache.iceberg" % s"iceberg-$module" % icebergVersion % Test)
    .exclude("org.apache.avro", "avro")
    .exclude("org.apache.parquet", "parquet-hadoop")
    .exclude("org.apache.parquet", "parquet-column")
    .exclude("org.apache.orc", "orc-core")
    .exclude("com.fasterxml.jackson.core", "jackson-core")
    .exclude("com.fasterxml.jackson.core", "jackson-databind")
    .exclude("org.roaringbitmap", "RoaringBitmap")
    .exclude("org.slf4j", "slf4j-api")
val icebergParquetForTests = Seq(icebergForTests("parquet"), icebergForTests("data"))

// Tests only: the sqlite JDBC driver, with which iceberg-core's JdbcCatalog reads the SQL catalog
// pyiceberg writes (tests/test_iceberg_catalog.py). A catalog's driver is the user's to add
// (--packages): Sluice never bundles one.
val sqliteJdbcForTests = "org.xerial" % "sqlite-jdbc" % "3.49.1.0" % Test

// Tests only: the HTTP client of iceberg-core's REST catalog (the version iceberg-core names), which
// the jar leaves out (users add it with --packages), so that the catalog tests can point a REST
// catalog at a server that never answers.
val httpClient5ForTests = ("org.apache.httpcomponents.client5" % "httpclient5" % "5.5" % Test)
  .exclude("org.slf4j", "slf4j-api")

lazy val writeSparkKafkaClasspath =
  taskKey[File]("writes the jars of Spark's Kafka connector, for Python tests and benchmarks")

lazy val writeBrokerClasspath =
  taskKey[File]("writes the embedded broker's classpath to target/broker-classpath.txt")

// A real Kafka broker (KRaft) for tests, the demo and benchmarks. Never part of the Sluice jar.
lazy val testkit = (project in file("jvm/testkit"))
  .settings(
    name := "sluice-testkit",
    publish / skip := true,
    // The wheel carries this project's jar and POM; an installed wheel resolves the POM's
    // dependencies from Maven Central (python/sluice/testing/_resolve.py). scala-reflect is named
    // so that it resolves there at the version sbt puts on the classpath here (Kafka names older).
    libraryDependencies ++= Seq(
      "org.apache.kafka" %% "kafka" % kafkaVersion,
      "org.slf4j" % "slf4j-reload4j" % "1.7.36",
      "org.scala-lang" % "scala-reflect" % scalaVersion.value),
    writeBrokerClasspath := {
      val out = target.value / "broker-classpath.txt"
      val cp =
        (Compile / fullClasspath).value.files.map(_.getAbsolutePath).mkString(File.pathSeparator)
      // test tasks ask for it again while Python tests start brokers from it: never rewritten in
      // place (a reader could see it empty), only replaced whole when it changed
      if (!out.exists || IO.read(out) != cp) {
        val part = target.value / "broker-classpath.txt.part"
        IO.write(part, cp)
        IO.move(part, out)
      }
      out
    })

// ---- Sluice: four subprojects whose dependencies are the architecture ---------------------------
//   api  <-  core        (the Spark-free driver runtime: no Spark jar on its classpath at all)
//   api  <-  connectors  (sources built on the model; Spark's row and parser types only)
//   core, connectors  <-  spark   (the DataSource V2 binding and the entry points; the one artifact)
// A reversed import does not compile: core cannot see Spark, connectors cannot see core or spark.

// spark's suites by package into two test JVMs of about equal length, which run at once, beside
// connectors' test JVM (three forked test JVMs at a time; connectors' mostly waits on its broker).
// History: one at a time, the Python lanes ended minutes before the Scala suites and a core idled
// for the rest (vmstat: ~50% idle for the last 4 minutes); three Spark test JVMs at once beside
// the Python lanes oversubscribed the 2 cores (load 15-25, 949-1409 s here, 2337 s on CI). Four
// groups, two at a time with connectors' JVM taking one of the two places first, started the
// second pair's first group only when connectors' tests ended (~45 s after the first), and which
// groups paired up changed from run to run: fresh clones ended the two streams 51 s apart
// (592 and 643 s) and then the Python lanes ~60 s before the Scala suites (654 s in all, of
// 50adbb6). Each JVM also pays its Spark start and warm-up once. Two groups, by the suites' times
// in that run's test reports: 443 and 412 s. A suite whose package is not listed goes to the
// first group. Groups are matched in order (parquet before file).
lazy val SparkTestGroups = Seq(
  "parquet-tables-compat-modes-security-docs" -> Seq(
    "sluice.connector.file.parquet.",
    "sluice.connector.table.",
    "sluice.compat."),
  "kafka-alignment-files-hybrid" -> Seq(
    "sluice.connector.kafka.",
    "sluice.alignment.",
    "sluice.connector.file.",
    "sluice.hybrid."))

// Suites that start the test JVM's three-broker cluster (SharedKafkaCluster: it lives until the
// JVM exits) run last in their group: sorted by name they came before sluice.spark's suites, and
// the cluster then idled beside those. Process accounting of fresh-clone runs: the cluster lived
// 348 s of its JVM's 461 s, its four JVMs 50 CPU-s; last, 59 s of 339 s and 23 CPU-s.
lazy val ClusterSuitePackages = Seq("sluice.security.")

// Suites that mostly wait (on a broker's retention, real-time and continuous epochs, trigger
// delays) run first in their group, while the Python lanes keep both cores busy: there they cost
// their group its wall time but take no CPU from the others, and the suites that compute run
// last, when the lanes have ended and the cores are free. Last in its group, one had the machine
// idle: a fresh clone of 25777aa ended with HybridRetentionSuite's 32 s alone (10% of the two
// cores busy). JVM CPU against wall time in that run: KafkaSourceSuite 10 of 67 s,
// RealTimeSuite 4 of 42, HybridRetentionSuite 4 of 33, KafkaSparkOptionsSuite 8 of 27,
// AutoDriftSuite 5 of 17, ContinuousSuite 3 of 17.
lazy val WaitingSuites = Set(
  "sluice.connector.kafka.KafkaSourceSuite",
  "sluice.spark.RealTimeSuite",
  "sluice.hybrid.HybridRetentionSuite",
  "sluice.connector.kafka.KafkaSparkOptionsSuite",
  "sluice.alignment.AutoDriftSuite",
  "sluice.spark.ContinuousSuite")

// sbt's defaults allow one forked test group at a time and one task per processor, and
// restrictions add up (all must hold): the set is replaced, keeping the other defaults. A forked
// test group is a task that waits on its JVM: three at once (connectors' and spark's two), four
// tasks in all, compiles still at most one per processor (sbt's own heap holds them).
Global / concurrentRestrictions := Seq(
  Tags.limitAll(math.max(4, EvaluateTask.SystemProcessors)),
  Tags.limit(Tags.Compile, EvaluateTask.SystemProcessors),
  Tags.limit(Tags.ForkedTestGroup, 3),
  Tags.exclusiveGroup(Tags.Clean))

lazy val scalaTest = "org.scalatest" %% "scalatest" % "3.2.19" % Test

// What tests that start Spark code need on Java 17 (Spark's own launcher passes the same).
lazy val java17Opens = Seq(
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false")

// The options of every JVM a test run starts (C1 only, the serial collector): build/test-jvm-options
// says why; the Python lanes' JVMs read the same file. sbt's forked test JVMs also skip bytecode
// verification: they load the build's class folders and Maven Central's jars, never the assembly
// (whose relocated classes the Python lanes' verifying JVMs load), and verifying Spark's classes
// is a part of every test JVM's start. Parquet and hybrid suites, one test JVM each, serial
// collector: 96-105 s of JVM CPU verifying (3 runs), 94-96 s without (2): within the spread.
lazy val testJvm = IO
  .readLines(file("build/test-jvm-options"))
  .map(_.trim)
  .filter(line => line.nonEmpty && !line.startsWith("#")) ++
  Seq("-XX:+UnlockDiagnosticVMOptions", "-XX:-BytecodeVerificationRemote")

// Suites that start the embedded broker (`sluice.testkit.EmbeddedKafka`, in connectors' tests):
// forked, so the broker's classpath file can be passed, and written before they run.
lazy val brokerTests = Seq(
  Test / fork := true,
  Test / parallelExecution := false,
  Test / javaOptions += s"-Dsluice.brokerClasspathFile=${(testkit / target).value / "broker-classpath.txt"}",
  Test / test := (Test / test).dependsOn(testkit / writeBrokerClasspath).value,
  Test / testOnly := (Test / testOnly).dependsOn(testkit / writeBrokerClasspath).evaluated,
  Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
  // long fault runs (tag sluice.FaultRun) belong to `make chaos`, which sets SLUICE_FAULT_RUNS;
  // `make test` covers the same faults in the reduced chaos run
  Test / testOptions ++= (if (sys.env.contains("SLUICE_FAULT_RUNS")) Nil
                          else
                            Seq(
                              Tests.Argument(TestFrameworks.ScalaTest, "-l", "sluice.FaultRun"))))

lazy val api = (project in file("jvm/api"))
  .settings(sparkProvided)
  .settings(name := "sluice-api", publish / skip := true)

lazy val core = (project in file("jvm/core"))
  .dependsOn(api)
  .settings(
    name := "sluice-core",
    publish / skip := true,
    libraryDependencies += scalaTest,
    // api's Spark jars (which sbt passes on to dependent projects) are taken off: core compiles
    // against the model alone. Its tests may implement a source (whose schema is a Spark type),
    // but never start Spark.
    Compile / dependencyClasspath := {
      val spark = (api / sparkJarsDir).value.getCanonicalPath
      (Compile / dependencyClasspath).value.filterNot(_.data.getCanonicalPath.startsWith(spark))
    })

// Its tests need no SparkSession: serializers, the data-loss policy, the enumerator and the split
// reader against the embedded broker, whose client (sluice.testkit.EmbeddedKafka) lives here.
lazy val connectors = (project in file("jvm/connectors"))
  .dependsOn(api)
  .settings(sparkProvided)
  .settings(brokerTests)
  .settings(
    name := "sluice-connectors",
    publish / skip := true,
    libraryDependencies ++= Seq(
      kafkaClients,
      icebergCore,
      scalaTest,
      httpClient5ForTests) ++ deltaKernelDeps,
    Test / javaOptions ++= Seq("-Xmx1g") ++ testJvm ++ java17Opens)

// Its tests use connectors' test classes (test->test) for the broker's client: that client talks to
// the broker's own JVM, so neither project's tests have the broker's jars (Kafka's server, its Scala
// and Jackson) on their classpath, where they would clash with Spark's.
lazy val spark = (project in file("jvm/spark"))
  .dependsOn(core, connectors % "compile->compile;test->test", testfs % Test)
  .settings(sparkProvided)
  .settings(brokerTests)
  .settings(
    name := "sluice-spark",
    libraryDependencies ++= Seq(
      kafkaClients,
      icebergCore,
      scalaTest) ++ icebergParquetForTests ++ deltaKernelDeps ++ (sparkKafkaConnector
      .map(_ % Test) :+ sqliteJdbcForTests),
    // One JVM per test run, sized for a 2-core machine; the broker runs in its own process.
    Test / javaOptions ++= Seq("-Xmx3g") ++ testJvm ++ java17Opens,
    writeSparkKafkaClasspath := {
      val out = target.value / "spark-kafka-jars.txt"
      // and the sqlite JDBC driver and the REST catalog's HTTP client of the Iceberg catalog tests
      // (not Kafka's, but the same session's)
      val names =
        Seq(
          "spark-sql-kafka-0-10",
          "spark-token-provider-kafka-0-10",
          "commons-pool2",
          "sqlite-jdbc",
          "httpclient5",
          "httpcore5")
      val jars =
        (Test / dependencyClasspath).value.files.filter(f => names.exists(f.getName.startsWith))
      IO.write(out, jars.map(_.getAbsolutePath).mkString(","))
      out
    },
    // the checkout's files some suites compare with (docs/options.md, python/sluice/_options.json)
    Test / javaOptions += s"-Dsluice.repoRoot=${(ThisBuild / baseDirectory).value}",
    // the docs' Scala snippets, compiled with the tests and run by sluice.docs.DocSnippetsSuite
    // (project/DocSnippets.scala)
    Test / sourceGenerators += Def.task {
      DocSnippets.generate((ThisBuild / baseDirectory).value, (Test / sourceManaged).value)
    }.taskValue,
    // the rules for their literals, which the build uses, compiled here too to be tested
    Test / unmanagedSources += (ThisBuild / baseDirectory).value / "project" / "DocSnippetLiterals.scala",
    // sbt runs a project's forked groups one after another unless its tests are parallel
    // (brokerTests turns that off); inside a JVM suites stay sequential (`testForkedParallel`)
    Test / parallelExecution := true,
    Test / testGrouping := {
      val jvm = (Test / forkOptions).value
        .withRunJVMOptions((Test / javaOptions).value.toVector)
        .withWorkingDirectory(baseDirectory.value)
      def groupOf(suite: String): String = SparkTestGroups
        .collectFirst { case (name, packages) if packages.exists(suite.startsWith) => name }
        .getOrElse(SparkTestGroups.head._1)
      val bySuite = (Test / definedTests).value
        .sortBy(t =>
          (ClusterSuitePackages.exists(t.name.startsWith), !WaitingSuites(t.name), t.name))
        .groupBy(t => groupOf(t.name))
      SparkTestGroups.map { case (name, _) =>
        Tests.Group(name, bySuite.getOrElse(name, Nil), Tests.SubProcess(jvm))
      }
    },
    // The self-contained jar for spark.jars: the four subprojects' classes plus kafka-clients.
    assembly / assemblyJarName := s"sluice-spark-assembly-${version.value}.jar",
    assembly / assemblyExcludedJars := {
      val spark = sparkJarsDir.value.getCanonicalPath
      (assembly / fullClasspath).value.filter(_.data.getCanonicalPath.startsWith(spark))
    },
    assembly / assemblyOption ~= (_.withIncludeScala(false)),
    // Iceberg's dependencies Spark 4.3 does not carry, relocated: a user's own copy (another
    // version) cannot meet Iceberg's. Iceberg itself is not relocated: it names its own classes in
    // strings (FileIO, catalogs by class name), and Spark 4.3 has no Iceberg of its own.
    assembly / assemblyShadeRules := Seq(
      "com.github.benmanes.caffeine.**",
      "io.airlift.compress.**")
      .map(p => ShadeRule.rename(p -> s"sluice.shaded.${p.stripSuffix(".**")}.@1").inAll),
    assembly / assemblyMergeStrategy := {
      case PathList("META-INF", "services", _*) => MergeStrategy.concat
      // Sluice's own LICENSE and NOTICE; bundled jars' keep their names with the jar's appended
      case PathList("META-INF", "LICENSE" | "NOTICE") => MergeStrategy.preferProject
      case PathList("META-INF", xs @ _*) if xs.lastOption.exists(_.endsWith(".SF")) =>
        MergeStrategy.discard
      // a bundled jar's Java module descriptor would describe a module this jar is not
      case PathList("META-INF", "versions", _, "module-info.class") => MergeStrategy.discard
      case PathList("META-INF", "versions", _*) => MergeStrategy.first
      case PathList("module-info.class") => MergeStrategy.discard
      case x => (assembly / assemblyMergeStrategy).value(x)
    },
    // One artifact for users: `dev.sluice:sluice-spark_2.13`, carrying the classes of api, core and
    // connectors too (the internal subprojects are not published).
    Compile / packageBin / mappings ++= Seq(api, core, connectors)
      .map(p => p / Compile / packageBin / mappings)
      .join
      .value
      .flatten,
    Compile / packageSrc / mappings ++= Seq(api, core, connectors)
      .map(p => p / Compile / packageSrc / mappings)
      .join
      .value
      .flatten,
    // The javadoc jar documents the four subprojects' sources together, as the jar carries them;
    // a warning (a link to nothing, a malformed tag) fails it, as it would mislead a reader
    Compile / doc / scalacOptions += "-Xfatal-warnings",
    Compile / doc / sources ++= Seq(api, core, connectors)
      .map(p => p / Compile / sources)
      .join
      .value
      .flatten,
    projectDependencies := Seq.empty,
    // What a public repository requires (POM fields, sources and javadoc jars) and where `make dist`
    // publishes (target/maven-repo): project/Publishing.scala
    Publishing.settings)

// Helpers the benchmarks put on spark.jars (row sizes); never part of the Sluice jar.
// Hadoop's local file system without a process forked per chmod and readlink, for the tests'
// Spark sessions (the Scala suites' and the Python lane's; sluice.hadoop.ForklessRawLocalFileSystem
// says why): Java on Spark's Hadoop only, never in the Sluice jar
lazy val testfs = (project in file("jvm/testfs"))
  .settings(sparkProvided)
  .settings(
    name := "sluice-testfs",
    publish / skip := true,
    crossPaths := false,
    autoScalaLibrary := false)

lazy val benchkit = (project in file("jvm/benchkit"))
  .settings(sparkProvided)
  .settings(name := "sluice-benchkit", publish / skip := true)

// Flink as the benchmarks' anchor (bench/flink_anchor.py, issue 27): Java only, on a class path of
// Flink's own jars from Maven Central, built by `make bench` alone (not in root's aggregate): never
// part of the Sluice jar, of its class path or of `make test`. The Kafka connector release for that
// Flink line; its Kafka client is its own (a separate JVM), not the one Sluice matches to Spark
// (flink_profile also runs it on Sluice's, from a second class path).
val flinkVersion = "2.2.1"
lazy val writeFlinkClasspath =
  taskKey[File]("writes the Flink anchor's class path, for bench/flink_anchor.py")
lazy val flinkanchor = (project in file("jvm/flinkanchor"))
  .settings(
    name := "sluice-flink-anchor",
    publish / skip := true,
    crossPaths := false,
    autoScalaLibrary := false,
    libraryDependencies ++= Seq(
      "org.apache.flink" % "flink-streaming-java" % flinkVersion,
      "org.apache.flink" % "flink-clients" % flinkVersion,
      "org.apache.flink" % "flink-connector-base" % flinkVersion,
      "org.apache.flink" % "flink-connector-kafka" % s"5.0.0-${flinkVersion.split('.').take(2).mkString(".")}"),
    writeFlinkClasspath := {
      val jars = (Compile / fullClasspath).value.files
      // and the same with the Kafka client Sluice reads with (Spark's connector's) in place of the
      // connector's own: bench/flink_profile.py runs Flink on both, to tell the client's part in a
      // difference from the engine's
      val sluiceClient = (connectors / Compile / dependencyClasspath).value.files
        .find(_.getName == s"kafka-clients-$kafkaVersion.jar")
        .getOrElse(
          sys.error(s"connectors has no kafka-clients-$kafkaVersion.jar on its class path"))
      IO.write(
        target.value / "flink-classpath-sluice-kafka-client.txt",
        jars
          .map(f => if (f.getName.startsWith("kafka-clients-")) sluiceClient else f)
          .mkString(File.pathSeparator))
      val out = target.value / "flink-classpath.txt"
      IO.write(out, jars.mkString(File.pathSeparator))
      out
    })

lazy val markBuilt = taskKey[File](
  "writes target/jvm-built: what `make build` needs of sbt is done (build/test starts the Python suites then)")

// build/test starts sbt while make installs .venv (pip and sbt's own start use a core each) and
// holds target/venv-pending until pyspark is in: compiling needs its jars from there
lazy val awaitVenv = Command.command("awaitVenv") { state =>
  val pending = state.baseDir / "target" / "venv-pending"
  val deadline = System.nanoTime() + 20L * 60 * 1000000000L
  while (pending.exists && System.nanoTime() < deadline) Thread.sleep(200)
  if (pending.exists)
    sys.error(s"$pending is still there after 20 minutes: is make's venv install stuck?")
  state
}

// The Scala user's project (examples/scala), a build of its own as a user would copy it, loaded
// beside this one so that `make test` starts sbt once: writeScalaExampleRun resolves it against
// the release spark/publish writes (its build.sbt's dependency, from target/maven-repo:
// build/repositories lists that folder), compiles it, and writes how its `sbt run` would start it,
// for tests/test_scala_example.py to run against the test broker.
lazy val scalaExample = RootProject(file("examples/scala"))
// sbt loads a build only when a project refers to it: this one does, and nothing aggregates it
lazy val examples = (project in file("examples"))
  .aggregate(scalaExample)
  .settings(publish / skip := true)
lazy val writeScalaExampleRun = taskKey[File](
  "writes target/scala-example-run.json: how the Scala example starts, or why it did not build")
lazy val scalaExampleBuilt =
  taskKey[(Option[String], Seq[File])]("the Scala example's main class and class path, compiled")

lazy val root = (project in file("."))
  .aggregate(api, core, connectors, spark, benchkit, testkit, testfs)
  .settings(
    commands += awaitVenv,
    publish / skip := true,
    scalaExampleBuilt := (
      (scalaExample / Compile / run / mainClass).value,
      (scalaExample / Compile / fullClasspath).value.files),
    writeScalaExampleRun := Def.taskDyn {
      // the example resolves the release: it is written first
      val _ = (spark / publish).value
      val out = target.value / "scala-example-run.json"
      sys.env.get("SPARK_JARS_DIR").filter(d => file(d).isDirectory) match {
        case None =>
          Def.task {
            IO.write(
              out,
              ScalaExampleRun.failed(
                "examples/scala takes Spark's jars from SPARK_JARS_DIR, which names no folder " +
                  "here: run it through make (which sets it to pyspark's jars in .venv)"))
            out
          }
        case Some(_) =>
          Def.task {
            val base = (scalaExample / baseDirectory).value
            val options = (scalaExample / run / javaOptions).value
            IO.write(
              out,
              scalaExampleBuilt.result.value match {
                case Value((Some(main), classpath)) =>
                  ScalaExampleRun.runnable(main, options, classpath, base)
                case Value((None, _)) =>
                  ScalaExampleRun.failed("examples/scala has no main class")
                case Inc(cause) =>
                  ScalaExampleRun.failed(
                    "examples/scala did not build (sbt's log above says why): " +
                      Incomplete.allExceptions(cause).map(_.toString).mkString("; "))
              })
            out
          }
      }
    }.value,
    markBuilt := {
      val out = target.value / "jvm-built"
      IO.write(out, "")
      out
    })
