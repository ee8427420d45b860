package org.apache.spark.sql.sluice

import org.apache.spark.SparkContext
import org.apache.spark.sql.{classic, SparkSession, SparkSessionExtensions}

/**
 * A session without the extensions `spark.sql.extensions` names: what a user who never set them
 * gets. Every session a builder (or `newSession`) makes on the test JVM's context applies them
 * (they are a setting of the context), so this one is made by the constructor that takes its
 * extensions, here ones that hold nothing; Scala keeps that constructor to Spark's own package,
 * so it is called by reflection.
 */
object PlainSession {
  def of(sc: SparkContext): SparkSession = {
    val constructor = classOf[classic.SparkSession].getConstructors
      .find(_.getParameterTypes.contains(classOf[SparkSessionExtensions]))
      .getOrElse(throw new IllegalStateException("Spark's SparkSession has no such constructor"))
    constructor
      .newInstance(sc, None, None, new SparkSessionExtensions, Map.empty, Map.empty)
      .asInstanceOf[SparkSession]
  }
}
