package sluice.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system for the test JVMs, without the processes it forks when its native
 * library is absent (pyspark's jars carry none): a `chmod` for every file and directory it creates
 * with a permission, a `readlink` for every link status (FileContext asks two per rename). Spark's
 * checkpoints write and rename a few files per micro-batch, so a test run forked some 120,000 of
 * them, each costing CPU on two busy cores. The same two steps are done here through java.nio;
 * everything else (writes, renames, checksums, listing) stays Hadoop's own.
 */
public class ForklessRawLocalFileSystem extends RawLocalFileSystem {
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ
  };

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    int mode = permission.toShort();
    for (int i = 0; i < BITS.length; i++) if ((mode & (1 << i)) != 0) set.add(BITS[i]);
    Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    // a link is left to Hadoop's way (tests make none); anything else is its own status
    if (Files.isSymbolicLink(pathToFile(f).toPath())) return super.getFileLinkStatus(f);
    return getFileStatus(f);
  }
}
