package sluice.hybrid

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.Boundedness
import sluice.connector.generator.GeneratorSource

/** The factory registry's lifecycle, without Spark: owners, pins and scopes. */
class SourceFactoriesSuite extends AnyFunSuite {

  private def gen(records: Int): GeneratorSource =
    GeneratorSource.builder().splits(1).recordsPerSplit(records).build()

  private def hybrid(): HybridSource =
    HybridSource
      .builder(gen(1))
      .addSource((_: SourceSwitchContext) => gen(2), Boundedness.Bounded)
      .build()

  test("a built hybrid owns its factory until it releases it; releasing twice is harmless") {
    val before = SourceFactories.size
    val h = hybrid()
    val Seq(id) = h.factoryIds
    assert(SourceFactories.size == before + 1)
    assert(SourceFactories.isRegistered(id))
    h.release()
    h.release()
    assert(!SourceFactories.isRegistered(id))
    assert(SourceFactories.size == before)
    val e = intercept[IllegalStateException](SourceFactories.get(id))
    assert(e.getMessage.contains(SourceFactories.NotRegisteredFix), e.getMessage)
  }

  test("a builder registers at build(): two hybrids from one builder own a factory each") {
    val before = SourceFactories.size
    val builder = HybridSource
      .builder(gen(1))
      .addSource((_: SourceSwitchContext) => gen(2), Boundedness.Bounded)
    assert(SourceFactories.size == before, "adding a factory registered it before build()")
    val (a, b) = (builder.build(), builder.build())
    assert(a.factoryIds != b.factoryIds)
    a.release()
    assert(b.factoryIds.forall(SourceFactories.isRegistered))
    b.release()
    assert(SourceFactories.size == before)
  }

  test("a build that fails validation leaves nothing registered") {
    val before = SourceFactories.size
    val unbounded = GeneratorSource.builder().splits(1).rowsPerSecond(1).build()
    intercept[IllegalArgumentException](
      HybridSource
        .builder(gen(1))
        .addSource((_: SourceSwitchContext) => gen(2), Boundedness.ContinuousUnbounded)
        .addSource(unbounded)
        .build())
    assert(SourceFactories.size == before)
  }

  test("a pinned factory outlives its release until the last pin goes; unpinning is per pin") {
    val before = SourceFactories.size
    val h = hybrid()
    val ids = h.factoryIds
    SourceFactories.pin(ids) // two queries read it
    SourceFactories.pin(ids)
    h.release()
    assert(ids.forall(SourceFactories.isRegistered), "a running query lost its factory")
    SourceFactories.unpin(ids)
    assert(ids.forall(SourceFactories.isRegistered), "the second query lost its factory")
    SourceFactories.unpin(ids)
    assert(SourceFactories.size == before)
    val e = intercept[IllegalStateException](SourceFactories.pin(ids))
    assert(e.getMessage.contains("define the query again"), e.getMessage)
  }

  test("pinning is all or none: one factory gone pins none of the others") {
    val (kept, gone) = (hybrid(), hybrid())
    gone.release()
    intercept[IllegalStateException](SourceFactories.pin(kept.factoryIds ++ gone.factoryIds))
    val before = SourceFactories.size
    kept.release() // would stay if the failed pin had pinned it
    assert(SourceFactories.size == before - 1)
  }

  test("a stopped query never breaks restarting the same definition") {
    val h = hybrid()
    val ids = h.factoryIds
    (1 to 20).foreach { _ => SourceFactories.pin(ids); SourceFactories.unpin(ids) }
    assert(ids.forall(SourceFactories.isRegistered))
    h.release()
    assert(!ids.exists(SourceFactories.isRegistered))
  }

  test("an ended scope releases the definitions tied to it, keeping pinned ones until unpinned") {
    val before = SourceFactories.size
    val (idle, running, other) = (hybrid(), hybrid(), hybrid())
    SourceFactories.adopt(idle.factoryIds ++ running.factoryIds, "app-1")
    SourceFactories.adopt(running.factoryIds ++ other.factoryIds, "app-2") // first scope stays
    SourceFactories.pin(running.factoryIds)
    SourceFactories.releaseScope("app-1")
    assert(!idle.factoryIds.exists(SourceFactories.isRegistered))
    assert(running.factoryIds.forall(SourceFactories.isRegistered))
    assert(other.factoryIds.forall(SourceFactories.isRegistered))
    SourceFactories.unpin(running.factoryIds)
    assert(!running.factoryIds.exists(SourceFactories.isRegistered))
    SourceFactories.releaseScope("app-2")
    assert(SourceFactories.size == before)
  }
}
