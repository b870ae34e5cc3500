package org.apache.kafka.streams.state.internals;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.state.internals.metrics.RocksDBMetricsRecorder;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Opens a real Kafka Streams 4.3.1 {@link RocksDBStore} (its package-private {@code openDB}, as
 * {@code RocksDBStoreTest} does), lets the store itself write its {@code offsets} column family
 * ({@code AbstractColumnFamilyAccessor#open}/{@code commit}/{@code close}, driven through the store's
 * {@code commit(Map)} and {@code close()}, the calls {@code ProcessorStateManager#commit}/{@code close} make), and
 * reads that column family back: while the store is open through the store's own database handle, after the close
 * from disk with RocksDB's read-only API. Placed in Kafka's package only to reach {@code openDB} and the handles.
 */
public final class Ks43OffsetsProbe {
    private static final HexFormat HEX = HexFormat.of();
    /** {@code RocksDBStore.OFFSETS_COLUMN_FAMILY_NAME}. */
    public static final String OFFSETS_COLUMN_FAMILY = new String(RocksDBStore.OFFSETS_COLUMN_FAMILY_NAME,
        StandardCharsets.UTF_8);

    private Ks43OffsetsProbe() {
    }

    /**
     * The {@code offsets} column family (key hex -> value hex) of store {@code storeName} of task {@code taskId}
     * under {@code taskDir}, after {@code commit(changelogOffsets)} (skipped when {@code null}), read while the
     * store is open ({@code readWhileOpen}) or after {@code close()}.
     */
    public static Map<String, String> offsetsColumnFamily(final File taskDir, final TaskId taskId,
                                                          final String storeName,
                                                          final Map<TopicPartition, Long> changelogOffsets,
                                                          final boolean readWhileOpen) throws RocksDBException {
        final Time time = Time.SYSTEM;
        final StreamsMetricsImpl streamsMetrics = new StreamsMetricsImpl(new Metrics(), "oracle-ks43", time);
        final RocksDBMetricsRecorder recorder = new RocksDBMetricsRecorder("rocksdb-state", storeName);
        recorder.init(streamsMetrics, taskId);
        final RocksDBStore store = new RocksDBStore(storeName, RocksDBStore.DB_FILE_DIR, recorder);
        final Map<String, Object> configs = Map.of(
            StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE,
            StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, "INFO");
        store.openDB(configs, taskDir);
        Map<String, String> entries = null;
        try {
            if (changelogOffsets != null) {
                store.commit(changelogOffsets);
            }
            if (readWhileOpen) {
                final ColumnFamilyHandle offsets = ((AbstractColumnFamilyAccessor) store.cfAccessor)
                    .offsetColumnFamilyHandle();
                entries = read(store.db, offsets);
            }
        } finally {
            store.close();
        }
        if (entries != null) {
            return entries;
        }
        return readFromDisk(new File(new File(taskDir, RocksDBStore.DB_FILE_DIR), storeName));
    }

    private static Map<String, String> readFromDisk(final File dbDir) throws RocksDBException {
        final List<byte[]> families;
        try (Options options = new Options()) {
            families = RocksDB.listColumnFamilies(options, dbDir.getAbsolutePath());
        }
        final List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        int offsetsIndex = -1;
        for (int i = 0; i < families.size(); i++) {
            descriptors.add(new ColumnFamilyDescriptor(families.get(i)));
            if (new String(families.get(i), StandardCharsets.UTF_8).equals(OFFSETS_COLUMN_FAMILY)) {
                offsetsIndex = i;
            }
        }
        if (offsetsIndex < 0) {
            throw new IllegalStateException("no " + OFFSETS_COLUMN_FAMILY + " column family in " + dbDir);
        }
        final List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions options = new DBOptions();
             RocksDB db = RocksDB.openReadOnly(options, dbDir.getAbsolutePath(), descriptors, handles)) {
            try {
                return read(db, handles.get(offsetsIndex));
            } finally {
                handles.forEach(ColumnFamilyHandle::close);
            }
        }
    }

    private static Map<String, String> read(final RocksDB db, final ColumnFamilyHandle handle) {
        final Map<String, String> entries = new TreeMap<>();
        try (RocksIterator it = db.newIterator(handle)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                entries.put(HEX.formatHex(it.key()), HEX.formatHex(it.value()));
            }
        }
        return entries;
    }
}
