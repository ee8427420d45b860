package sluice.flinkanchor;

import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;

/**
 * Passes elements through and adds each one's weight to an accumulator the job's result carries,
 * so the driver learns how many records a job read (or dropped as late) without collecting them.
 */
final class Counted<T> extends RichMapFunction<T, T> {
  /** How much one element counts for (1 for a record, the count for a window's result). */
  interface Weight<T> extends java.io.Serializable {
    long of(T element);
  }

  private final String accumulator;
  private final Weight<T> weight;
  private transient LongCounter counter;

  Counted(String accumulator, Weight<T> weight) {
    this.accumulator = accumulator;
    this.weight = weight;
  }

  @Override
  public void open(OpenContext context) {
    counter = new LongCounter();
    getRuntimeContext().addAccumulator(accumulator, counter);
  }

  @Override
  public T map(T element) {
    counter.add(weight.of(element));
    return element;
  }
}
