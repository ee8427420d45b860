package sluice.alignment

import scala.collection.mutable

/**
 * A member of an alignment group: one source of the query whose watermark strategy names the
 * group. The group asks a member for its next batch when another member starts a round.
 */
trait AlignmentMember {

  /**
   * This member's next batch, prepared from where it stands now (its next start, its read limit);
   * None when it cannot tell where its next batch starts yet.
   */
  def prepareForRound(): Option[PreparedMemberBatch]
}

/** One member's next batch, ready to be planned against the frontier of the other members. */
trait PreparedMemberBatch {
  def plan(othersFrontier: Option[Long]): SourcePlan
}

/**
 * The members of one alignment group of one query, in the driver, planned together.
 *
 * Spark asks a query's sources for their next offsets one after the other. The first member asked
 * opens a round for the whole group: every member's next batch is prepared from where it stands,
 * each is planned alone to learn where it would get to (its frontier), and each is then planned
 * against the smallest frontier of the others (repeated while the frontiers still move, at most
 * `MaxPasses` times). The other members take their part of the round when Spark asks them, so no
 * member reads nothing because of the order Spark asks in, after a start or ever.
 *
 * A member that cannot take its part (Spark gave it another start or read limit than the round
 * assumed, or it could not tell where it starts when the round opened) is planned late: against
 * the parts already taken, which are fixed, together with the parts still pending, which are
 * planned again. A member is never prepared twice in one round. The round ends when every member
 * took its part (the next call opens the next one) or when a batch ran (reports arrived).
 */
final class AlignmentGroup(val name: String) {
  import AlignmentGroup._
  private val members = mutable.LinkedHashMap[String, AlignmentMember]()

  /** Parts of the current round not taken yet, by member. */
  private val pending = mutable.Map[String, Part]()

  /** Plans taken in the current round, by member. */
  private val taken = mutable.Map[String, SourcePlan]()

  /** The constraining watermarks of each member after its last reported batch. */
  private val watermarks = mutable.Map[String, Seq[Long]]()

  def join(memberId: String, member: AlignmentMember): Unit = synchronized {
    members(memberId) = member
    endRound()
  }

  def leave(memberId: String): Unit = synchronized {
    members.remove(memberId)
    watermarks.remove(memberId)
    endRound()
  }

  def isEmpty: Boolean = synchronized(members.isEmpty)

  def hasOtherMembers(memberId: String): Boolean = synchronized(
    members.keys.exists(_ != memberId))

  /**
   * The part of the current round planned for `memberId`, if one is left and `accept` (which
   * checks that it was planned from where the member now starts) takes it.
   */
  def takePart(memberId: String)(accept: PreparedMemberBatch => Boolean): Option[Part] =
    synchronized {
      val part = pending.remove(memberId).filter(p => accept(p.prepared))
      part.foreach(p => taken(memberId) = p.plan)
      part
    }

  /** Plans the caller's batch: a new round, or late in the current one. */
  def planRound(caller: String, prepared: PreparedMemberBatch): SourcePlan = synchronized {
    val open =
      taken.nonEmpty && !taken.contains(caller) && members.keys.exists(id => !taken.contains(id))
    val plan = if (open) planLate(caller, prepared) else openRound(caller, prepared)
    taken(caller) = plan
    plan
  }

  private def openRound(caller: String, prepared: PreparedMemberBatch): SourcePlan = {
    endRound()
    // a member that cannot tell where it starts is left out now and planned late when asked
    val batches = members.toSeq.flatMap { case (id, m) =>
      (if (id == caller) Some(prepared) else m.prepareForRound()).map(id -> _)
    }
    val plans = planTogether(batches, fixed = Nil)
    batches.foreach { case (id, b) => if (id != caller) pending(id) = Part(b, plans(id)) }
    plans(caller)
  }

  private def planLate(caller: String, prepared: PreparedMemberBatch): SourcePlan = {
    val batches = (caller -> prepared) +: pending.toSeq.map { case (id, p) => id -> p.prepared }
    val plans = planTogether(batches, fixed = taken.values.flatMap(_.frontier).toSeq)
    pending.keys.toSeq.foreach(id => pending(id) = pending(id).copy(plan = plans(id)))
    plans(caller)
  }

  private def endRound(): Unit = {
    pending.clear()
    taken.clear()
  }

  /** The current watermarks of a member's constraining splits, after its last batch. */
  def reportWatermarks(memberId: String, constraining: Seq[Long]): Unit = synchronized {
    if (members.contains(memberId)) watermarks(memberId) = constraining
    endRound() // a batch ran: parts planned before it are stale
  }

  /** Largest minus smallest watermark of constraining splits across the group, if any. */
  def spread: Option[Long] = synchronized {
    val all = watermarks.values.flatten
    if (all.isEmpty) None else Some(all.max - all.min)
  }
}

object AlignmentGroup {

  /** A member's part of a round: what it was planned from, and its plan. */
  final case class Part(prepared: PreparedMemberBatch, plan: SourcePlan)

  /** Passes of planning each member against the others' frontiers, at most. */
  val MaxPasses = 3

  /**
   * Plans members together: first each against the `fixed` frontiers only (plans already taken),
   * then each against the smallest of those and of the other members' frontiers in the previous
   * pass, until no plan changes (or `MaxPasses`).
   */
  def planTogether(
      batches: Seq[(String, PreparedMemberBatch)],
      fixed: Seq[Long]): Map[String, SourcePlan] = {
    val fixedMin = fixed.minOption
    var plans = batches.map { case (id, b) => id -> b.plan(fixedMin) }.toMap
    var pass = 1
    var moved = batches.size > 1
    while (moved && pass < MaxPasses) {
      val next = batches.map { case (id, b) =>
        id -> b.plan((fixedMin ++ plans.collect {
          case (other, p) if other != id => p.frontier
        }.flatten).minOption)
      }.toMap
      moved = next.exists { case (id, p) =>
        p.frontier != plans(id).frontier || p.ends != plans(id).ends
      }
      plans = next
      pass += 1
    }
    plans
  }
}

/**
 * The driver-wide registry of alignment groups. A group is scoped to one query (its checkpoint
 * location), so two queries naming the same group never hold each other back. A group lives as
 * long as its members: a runtime joins when it is built and leaves when it closes (the engine
 * stops its stream), and the last member to leave removes the group.
 */
object AlignmentCoordinator {
  private val groups = mutable.Map[(String, String), AlignmentGroup]()

  /** The groups held now: none once every query that had one stopped. */
  private[sluice] def size: Int = synchronized(groups.size)

  /** Whether a query's group is registered (tests: suites of one JVM may hold groups of their own). */
  private[sluice] def holds(queryKey: String, group: String): Boolean =
    synchronized(groups.contains(queryKey -> group))

  def join(
      queryKey: String,
      group: String,
      memberId: String,
      member: AlignmentMember): AlignmentGroup = synchronized {
    val g = groups.getOrElseUpdate((queryKey, group), new AlignmentGroup(group))
    g.join(memberId, member)
    g
  }

  def leave(queryKey: String, group: String, memberId: String): Unit = synchronized {
    groups.get((queryKey, group)).foreach { g =>
      g.leave(memberId)
      if (g.isEmpty) groups.remove((queryKey, group))
    }
  }
}
