import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;
import org.apache.kafka.streams.processor.internals.ProcessorMetadata;

/**
 * Commits a group's offsets with metadata through Kafka's own Admin client (4.2.2, the client Kafka Streams commits
 * with), so a reader can be checked against metadata strings exactly as Kafka writes them.
 *
 * <p>Usage: {@code CommitMetadata <bootstrap> <group> <topic> <partition>:<offset>:<metadata>...}: {@code <metadata>}
 * is the UTF-8 bytes in hex, or {@code streams=<partition time>} for Kafka Streams' own
 * {@code TopicPartitionMetadata(time, new ProcessorMetadata()).encode()}.
 */
public final class CommitMetadata {
    private CommitMetadata() {
    }

    public static void main(final String[] args) throws Exception {
        final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (int i = 3; i < args.length; i++) {
            final String[] parts = args[i].split(":", 3);
            final String metadata = parts[2].startsWith("streams=")
                ? new TopicPartitionMetadata(Long.parseLong(parts[2].substring(8)), new ProcessorMetadata()).encode()
                : new String(HexFormat.of().parseHex(parts[2]), StandardCharsets.UTF_8);
            offsets.put(new TopicPartition(args[2], Integer.parseInt(parts[0])),
                new OffsetAndMetadata(Long.parseLong(parts[1]), metadata));
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            admin.alterConsumerGroupOffsets(args[1], offsets).all().get();
        }
    }
}
