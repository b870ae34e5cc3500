package dev.streamproc.oracle;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;

/**
 * One temporary {@code state.dir} per oracle JVM for the {@code TopologyTestDriver}s it builds. Kafka's default,
 * {@code /tmp/kafka-streams/<application.id>}, is shared by every JVM with the same application id: oracle runs in
 * parallel (pytest workers, the conformance report beside pytest) would then open each other's RocksDB files and fail
 * with {@code ProcessorStateException}.
 *
 * <p>The directory is on {@code /dev/shm} (a RAM file system) where there is one: every driver's close flushes and
 * syncs its RocksDB stores, and on a disk shared with other work that was most of a run (the 132 runs of mode
 * {@code dsl-run}: 5 min wall for 60 CPU-s on disk, 38 s in RAM, the same answers). The stores of one run are small.
 */
final class PrivateStateDir {
    static final String PATH = create();

    private PrivateStateDir() {}

    /** Removes the directory with the stores the drivers left in it (deleteOnExit takes only an empty one). */
    private static void delete(final File file) {
        final File[] children = file.listFiles();
        if (children != null) {
            for (final File child : children) {
                delete(child);
            }
        }
        file.delete();
    }

    private static String create() {
        try {
            final File ram = new File("/dev/shm");
            final File dir = ram.isDirectory() && ram.canWrite()
                    ? Files.createTempDirectory(ram.toPath(), "streamproc-oracle-state-").toFile()
                    : Files.createTempDirectory("streamproc-oracle-state-").toFile();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(dir)));
            return dir.getPath();
        } catch (final IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
