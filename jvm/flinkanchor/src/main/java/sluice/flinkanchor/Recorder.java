package sluice.flinkanchor;

import java.io.IOException;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Duration;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * A Java Flight Recorder recording of this JVM around the jobs asked for between `record` and
 * `dump` (bench/flink_profile.py), so that Flink's side is profiled as Sluice's is in the Spark
 * driver: the JDK's `profile` settings with running threads sampled every `periodMs`, started
 * after a warm-up job, so class loading and the first compilations are outside it.
 */
final class Recorder {
  private Recording recording;

  void start(long periodMs) throws IOException, ParseException {
    if (recording != null) throw new IllegalStateException("a recording is running: dump it first");
    recording = new Recording(Configuration.getConfiguration("profile"));
    recording.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(periodMs));
    recording.start();
  }

  void dump(Path to) throws IOException {
    if (recording == null) throw new IllegalStateException("no recording is running: record first");
    try {
      recording.stop();
      recording.dump(to);
    } finally {
      recording.close();
      recording = null;
    }
  }
}
