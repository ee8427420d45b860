package sluice.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** `fs.file.impl` for the test JVMs: Hadoop's checksummed local file system on a forkless one. */
public class ForklessLocalFileSystem extends LocalFileSystem {
  public ForklessLocalFileSystem() {
    super(new ForklessRawLocalFileSystem());
  }
}
