package sluice.alignment

import scala.collection.mutable

/**
 * Where the members of one alignment group of one query stand, in the driver. Every Sluice
 * source of a query that names the group is a member; each publishes, whenever it plans a batch,
 * the smallest watermark its splits will have after that batch (its frontier) and the watermarks
 * they have now. A member aligns to the others' latest frontiers.
 *
 * Micro-batches ask members one after the other, so the first one asked aligns to what the
 * others published for the previous batch (never more advanced than they are: safe). Live
 * reports every `updateInterval` would feed the same `publish` in a continuous engine.
 */
final class AlignmentGroup(val name: String) {
  import AlignmentGroup.Member
  private val members = mutable.LinkedHashMap[String, Member]()

  def join(memberId: String): Unit = synchronized {
    members.getOrElseUpdate(memberId, Member(None, Nil, published = false))
  }

  def leave(memberId: String): Unit = synchronized(members.remove(memberId))

  def isEmpty: Boolean = synchronized(members.isEmpty)

  /** True until every other member has published once: the first batch waits for the group. */
  def othersUnknown(memberId: String): Boolean = synchronized {
    members.exists { case (id, m) => id != memberId && !m.published }
  }

  def hasOtherMembers(memberId: String): Boolean = synchronized(members.keys.exists(_ != memberId))

  /** The smallest frontier among the other members (None: they constrain nobody). */
  def othersFrontier(memberId: String): Option[Long] = synchronized {
    members.collect { case (id, m) if id != memberId => m.frontier }.flatten.minOption
  }

  def publish(memberId: String, frontier: Option[Long]): Unit = synchronized {
    members.get(memberId).foreach(m => members(memberId) = m.copy(frontier = frontier, published = true))
  }

  /** The current watermarks of a member's constraining splits, after its last batch. */
  def publishWatermarks(memberId: String, watermarks: Seq[Long]): Unit = synchronized {
    members.get(memberId).foreach(m => members(memberId) = m.copy(watermarks = watermarks))
  }

  /** Largest minus smallest watermark of constraining splits across the group, if any. */
  def spread: Option[Long] = synchronized {
    val all = members.values.flatMap(_.watermarks)
    if (all.isEmpty) None else Some(all.max - all.min)
  }
}

private object AlignmentGroup {
  final case class Member(frontier: Option[Long], watermarks: Seq[Long], published: Boolean)
}

/**
 * The driver-wide registry of alignment groups. A group is scoped to one query (its checkpoint
 * location), so two queries naming the same group never hold each other back.
 */
object AlignmentCoordinator {
  private val groups = mutable.Map[(String, String), AlignmentGroup]()

  def join(queryKey: String, group: String, memberId: String): AlignmentGroup = synchronized {
    val g = groups.getOrElseUpdate((queryKey, group), new AlignmentGroup(group))
    g.join(memberId)
    g
  }

  def leave(queryKey: String, group: String, memberId: String): Unit = synchronized {
    groups.get((queryKey, group)).foreach { g =>
      g.leave(memberId)
      if (g.isEmpty) groups.remove((queryKey, group))
    }
  }
}
