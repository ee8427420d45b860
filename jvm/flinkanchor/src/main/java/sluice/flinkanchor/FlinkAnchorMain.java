package sluice.flinkanchor;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Flink as the benchmarks' anchor (bench/flink_anchor.py): one local MiniCluster with one task
 * manager of `parallelism` slots (the same cores Spark's local[2] gets), kept for the whole run
 * so that, like the Spark session it is paired with, every timed job runs in a warm JVM. Jobs are
 * asked for on standard input, one per line, and answered with one JSON line each:
 *
 * <pre>
 * raw BOOTSTRAP TOPIC
 * aligned BOOTSTRAP TOPIC MAX_DRIFT_MS UPDATE_MS DELAY_MS
 * record PERIOD_MS
 * dump FILE
 * quit
 * </pre>
 *
 * An answer to a job holds its wall seconds from submission to its end (the last record read and
 * every window fired), the part of them Flink counts as the job's run (its net runtime: from the
 * job's start, after submission and scheduling) and its counters: records read, records counted
 * in windows and records dropped as late. `record` starts a flight recording of the jobs that follow, `dump` ends it into
 * FILE ({@link Recorder}); each is answered once done.
 */
public final class FlinkAnchorMain {
  public static void main(String[] args) throws Exception {
    int parallelism = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    Configuration conf = new Configuration();
    // small fixed memory pools: the jobs keep no large state, and the machine is shared with Spark
    conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("64m"));
    conf.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.parse("64m"));
    conf.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.parse("64m"));
    MiniClusterConfiguration cluster =
        new MiniClusterConfiguration.Builder()
            .setConfiguration(conf)
            .setNumTaskManagers(1)
            .setNumSlotsPerTaskManager(parallelism)
            .build();
    try (MiniCluster flink = new MiniCluster(cluster)) {
      flink.start();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      System.out.println("{\"ready\": true}");
      System.out.flush();
      Recorder recorder = new Recorder();
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        String[] words = line.trim().split("\\s+");
        if (words[0].equals("quit")) break;
        if (words[0].equals("record") || words[0].equals("dump")) {
          if (words[0].equals("record")) recorder.start(Long.parseLong(words[1]));
          else recorder.dump(Path.of(words[1]));
          System.out.println("{\"" + words[0] + "\": true}");
          System.out.flush();
          continue;
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        // as a careful user tunes a job whose functions keep no reference to their input: no deep
        // copy of each record between chained operators
        env.getConfig().enableObjectReuse();
        switch (words[0]) {
          case "raw":
            Jobs.raw(env, words[1], words[2]);
            break;
          case "aligned":
            Jobs.aligned(
                env,
                words[1],
                words[2],
                Duration.ofMillis(Long.parseLong(words[3])),
                Duration.ofMillis(Long.parseLong(words[4])),
                Duration.ofMillis(Long.parseLong(words[5])));
            break;
          default:
            throw new IllegalArgumentException("unknown job '" + words[0] + "': raw, aligned or quit");
        }
        JobGraph job = env.getStreamGraph().getJobGraph();
        long started = System.nanoTime();
        JobExecutionResult result = flink.executeJobBlocking(job);
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.println(
            String.format(
                Locale.ROOT,
                "{\"seconds\": %.4f, \"net_runtime_ms\": %d, \"read\": %d, \"windowed\": %d,"
                    + " \"late_dropped\": %d}",
                seconds,
                result.getNetRuntime(),
                counter(result, Jobs.READ),
                counter(result, Jobs.WINDOWED),
                counter(result, Jobs.LATE)));
        System.out.flush();
      }
    }
  }

  private static long counter(JobExecutionResult result, String name) {
    Object value = result.getAccumulatorResult(name);
    return value == null ? 0L : (Long) value;
  }
}
