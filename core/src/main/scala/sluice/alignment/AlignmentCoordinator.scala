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
  /** Reads nothing: for a round in which another member cannot be placed. */
  def hold: SourcePlan
}

/**
 * The members of one alignment group of one query, in the driver, planned together.
 *
 * Spark asks a query's sources for their next offsets one after the other. The first member asked
 * plans a round for the whole group: every member's next batch is prepared from where it stands,
 * each is planned alone to learn where it would get to (its frontier), and each is then planned
 * against the smallest frontier of the others (repeated while the frontiers still move, at most
 * `MaxPasses` times). The other members take their part of the round when Spark asks them, so no
 * member reads nothing because of the order Spark asks in, after a start or ever.
 */
final class AlignmentGroup(val name: String) {
  import AlignmentGroup._
  private val members = mutable.LinkedHashMap[String, AlignmentMember]()
  /** Parts of the current round not taken yet, by member. */
  private val pending = mutable.Map[String, Part]()
  /** The constraining watermarks of each member after its last reported batch. */
  private val watermarks = mutable.Map[String, Seq[Long]]()

  def join(memberId: String, member: AlignmentMember): Unit = synchronized {
    members(memberId) = member
    pending.clear()
  }

  def leave(memberId: String): Unit = synchronized {
    members.remove(memberId)
    watermarks.remove(memberId)
    pending.clear()
  }

  def isEmpty: Boolean = synchronized(members.isEmpty)

  def hasOtherMembers(memberId: String): Boolean = synchronized(members.keys.exists(_ != memberId))

  /**
   * The part of the current round planned for `memberId` from `prepared`-equivalent inputs, if
   * any was left for it; `accept` checks that it was planned from where the member now starts.
   */
  def takePart(memberId: String)(accept: PreparedMemberBatch => Boolean): Option[Part] = synchronized {
    pending.remove(memberId).filter(p => accept(p.prepared))
  }

  /**
   * Starts a round with the caller's prepared batch; returns the caller's part, keeps the others'.
   * A member that cannot tell where it starts (a checkpoint from before rounds existed) makes the
   * caller read nothing this once: nothing it reads could be placed against that member.
   */
  def planRound(caller: String, prepared: PreparedMemberBatch): SourcePlan = synchronized {
    pending.clear()
    val batches = members.toSeq.map { case (id, m) => id -> (if (id == caller) Some(prepared) else m.prepareForRound()) }
    if (batches.exists(_._2.isEmpty)) prepared.hold
    else {
      val known = batches.map { case (id, b) => id -> b.get }
      val plans = AlignmentGroup.planTogether(known)
      known.foreach { case (id, b) => if (id != caller) pending(id) = Part(b, plans(id)) }
      plans(caller)
    }
  }

  /** The current watermarks of a member's constraining splits, after its last batch. */
  def reportWatermarks(memberId: String, constraining: Seq[Long]): Unit = synchronized {
    if (members.contains(memberId)) watermarks(memberId) = constraining
    pending.clear() // a batch ran: parts planned before it are stale
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
   * Plans members together: first each alone, then each against the smallest frontier among the
   * others' plans of the previous pass, until no frontier moves (or `MaxPasses`). A member's
   * frontier only falls from one pass to the next, so the last pass constrains every member by
   * frontiers no higher than where the others end.
   */
  def planTogether(batches: Seq[(String, PreparedMemberBatch)]): Map[String, SourcePlan] = {
    var plans = batches.map { case (id, b) => id -> b.plan(None) }.toMap
    var pass = 1
    var moved = batches.size > 1
    while (moved && pass < MaxPasses) {
      val next = batches.map { case (id, b) =>
        id -> b.plan(plans.collect { case (other, p) if other != id => p.frontier }.flatten.minOption)
      }.toMap
      moved = next.exists { case (id, p) => p.frontier != plans(id).frontier || p.ends != plans(id).ends }
      plans = next
      pass += 1
    }
    plans
  }
}

/**
 * The driver-wide registry of alignment groups. A group is scoped to one query (its checkpoint
 * location), so two queries naming the same group never hold each other back.
 */
object AlignmentCoordinator {
  private val groups = mutable.Map[(String, String), AlignmentGroup]()

  def join(queryKey: String, group: String, memberId: String, member: AlignmentMember): AlignmentGroup = synchronized {
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
