import sbt._
import sbt.Keys._

import scala.xml.{Elem, Node => XmlNode, NodeSeq}
import scala.xml.transform.{RewriteRule, RuleTransformer}

/**
 * The published artifact `dev.sluice:sluice-spark_2.13`: what a public Maven repository requires of
 * it (a POM with name, description, URL, license, SCM and developers; a sources jar and a javadoc
 * jar) and where `make dist` publishes it: `target/maven-repo`, a Maven layout that
 * `--packages dev.sluice:sluice-spark_2.13:<version> --repositories file:<that folder>` resolves.
 *
 * The project's public addresses are written here once.
 */
object Publishing {
  val homepageUrl = "https://sluice.dev"
  val scmUrl = "https://github.com/sluice-dev/sluice"
  val sparkVersion = "4.3.0"

  val mavenRepository =
    settingKey[File]("the local Maven repository `publish` writes (target/maven-repo)")

  /** LICENSE and NOTICE from the repository root, under META-INF/ in every published jar. */
  private val legalFiles = Def.setting {
    val root = (ThisBuild / baseDirectory).value
    Seq(root / "LICENSE" -> "META-INF/LICENSE", root / "NOTICE" -> "META-INF/NOTICE")
  }

  def settings: Seq[Setting[_]] = Seq(
    description := "Flink's source model for Spark Structured Streaming: hybrid sources (files, then " +
      "Kafka, in one query), watermark alignment, idleness and compact records, as a Spark data source.",
    homepage := Some(url(homepageUrl)),
    licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
    scmInfo := Some(ScmInfo(url(scmUrl), s"scm:git:$scmUrl.git", Some(s"scm:git:$scmUrl.git"))),
    developers := List(Developer("sluice", "The Sluice maintainers", "", url(scmUrl))),
    publishMavenStyle := true,
    pomIncludeRepository := (_ => false),
    pomPostProcess := providedBySpark,
    mavenRepository := (ThisBuild / baseDirectory).value / "target" / "maven-repo",
    publishTo := Some(
      Resolver.file("sluice-maven-repo", mavenRepository.value)(Resolver.mavenStylePatterns)),
    publishConfiguration := publishConfiguration.value.withOverwrite(true),
    versionScheme := Some("early-semver"),
    Compile / packageDoc / publishArtifact := true,
    Test / packageDoc / publishArtifact := false,
    // As resources, so that the sources jar and the self-contained jar (sbt-assembly) carry them too.
    Compile / resourceGenerators += Def.task {
      legalFiles.value.map { case (file, path) =>
        val copy = (Compile / resourceManaged).value / path
        IO.copyFile(file, copy)
        copy
      }
    }.taskValue,
    Compile / packageDoc / mappings ++= legalFiles.value)

  /**
   * Spark supplies Scala and itself at run time: the POM says so (scope `provided`), so that
   * `--packages` does not put a second scala-library next to Spark's, and Maven users see which
   * Spark the artifact is built for.
   */
  private val providedBySpark: XmlNode => XmlNode = {
    def dependency(group: String, artifact: String, version: String): Elem =
      <dependency>
        <groupId>{group}</groupId>
        <artifactId>{artifact}</artifactId>
        <version>{version}</version>
        <scope>provided</scope>
      </dependency>
    val rule = new RewriteRule {
      override def transform(node: XmlNode): NodeSeq = node match {
        case dep: Elem
            if dep.label == "dependency" && (dep \ "artifactId").text == "scala-library" =>
          dependency((dep \ "groupId").text, "scala-library", (dep \ "version").text)
        case deps: Elem if deps.label == "dependencies" =>
          deps.copy(child =
            dependency("org.apache.spark", "spark-sql_2.13", sparkVersion) +: deps.child)
        case other => other
      }
    }
    new RuleTransformer(rule)
  }
}
