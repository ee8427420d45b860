// A Scala user's Spark application on the published Sluice artifact, as a user's own sbt project
// would have it: `dev.sluice:sluice-spark_2.13`, Spark itself provided at run time. `make test`
// builds it (Sluice's build loads this one beside its own) with the artifact from the repository
// folder `make dist` publishes (target/maven-repo of the checkout), and runs it
// (tests/test_scala_example.py).
ThisBuild / scalaVersion := "2.13.18"

val sluiceVersion = "0.1.0"
val sparkVersion = "4.3.0"

// A released version comes from Maven Central; one built from a checkout from its maven-repo.
resolvers += "sluice-dist" at (baseDirectory.value / ".." / ".." / "target" / "maven-repo").toURI.toString

libraryDependencies += "dev.sluice" %% "sluice-spark" % sluiceVersion

// Spark is provided: by spark-submit in production, on the class path of `sbt run` here. Given
// SPARK_JARS_DIR (a Spark installation's jars/, e.g. pip-installed pyspark's), those jars are used
// instead of Maven's spark-sql (the Sluice build does the same: Spark 4.3.0's artifacts are not on
// the Maven Central its machines reach).
val sparkJars = sys.env.get("SPARK_JARS_DIR").filter(_.nonEmpty).map(file)
val sparkSql = "org.apache.spark" %% "spark-sql" % sparkVersion % Provided
libraryDependencies ++= sparkJars.fold(Seq(sparkSql))(_ => Nil)
Compile / unmanagedJars ++= sparkJars.toSeq.flatMap(dir => (dir * "*.jar").classpath)
// `sbt run` puts provided dependencies on the class path too
Compile / run := Defaults
  .runTask(Compile / fullClasspath, Compile / run / mainClass, Compile / run / runner)
  .evaluated

// Spark in a JVM of its own, with the module openings Spark's launcher passes on Java 17
run / fork := true
run / connectInput := false
run / javaOptions ++= Seq(
  "-Xmx1g",
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
