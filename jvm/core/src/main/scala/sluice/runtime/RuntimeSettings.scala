package sluice.runtime

import sluice.config.RecordLayout
import sluice.eventtime.EventTimeSettings

/**
 * What the binding tells a source's runtime: its name in progress, its event time, the layout of
 * its records, whether latency is tracked, the query its alignment group belongs to, and the clock.
 *
 * @param queryKey  identifies the query (its checkpoint root): alignment groups are per query
 * @param memberId  identifies this source within the query (its checkpoint folder)
 */
final case class RuntimeSettings(
    displayName: String,
    eventTime: EventTimeSettings,
    layout: RecordLayout,
    latencyTracking: Boolean,
    queryKey: String,
    memberId: String,
    allowUnalignedSourceSplitsByDefault: Boolean = false,
    clock: () => Long = () => System.currentTimeMillis())
