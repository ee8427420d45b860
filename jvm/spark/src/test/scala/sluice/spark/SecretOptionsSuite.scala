package sluice.spark

import org.scalatest.funsuite.AnyFunSuite

/** Which option values plans mask: those declared secret, also inside a hybrid's member options. */
class SecretOptionsSuite extends AnyFunSuite {
  test(
    "a key is secret when a secret declaration covers it; a declared name wins over a template") {
    Seq(
      "catalog.header.Authorization",
      "CATALOG.uri",
      "catalog.jdbc.password",
      "kafka.sasl.jaas.config",
      "hybrid.0.catalog.header.Authorization",
      "hybrid.1.kafka.security.protocol").foreach(k => assert(SecretOptions.isSecret(k), k))
    Seq(
      "table",
      "catalogName",
      "catalogTimeoutMs",
      "kafka.bootstrap.servers",
      "hybrid.1.kafka.bootstrap.servers",
      "hybrid.0.table",
      "unknownOption").foreach(k => assert(!SecretOptions.isSecret(k), k))
    assert(
      SecretOptions.masked(Map("catalog.uri" -> "jdbc:x", "table" -> "db.t")) ==
        Map("catalog.uri" -> "***", "table" -> "db.t"))
  }
}
