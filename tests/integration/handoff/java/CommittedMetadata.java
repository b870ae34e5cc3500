import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.internals.TopicPartitionMetadata;

/**
 * A group's committed offsets as Kafka Streams 4.2 reads them when a task starts: per partition, one line
 * {@code <topic>-<partition> <offset> <metadata length in chars> <partition time>}, the partition time decoded by
 * Kafka Streams' own {@code TopicPartitionMetadata.decode} (-1 when it cannot decode the metadata).
 *
 * <p>Usage: {@code CommittedMetadata <bootstrap> <group>}.
 */
public final class CommittedMetadata {
    private CommittedMetadata() {
    }

    public static void main(final String[] args) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]))) {
            final Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(args[1]).partitionsToOffsetAndMetadata().get();
            final Map<String, String> lines = new TreeMap<>();
            committed.forEach((tp, om) -> lines.put(tp.topic() + "-" + tp.partition(), om.offset() + " "
                + om.metadata().length() + " " + TopicPartitionMetadata.decode(om.metadata()).partitionTime()));
            lines.forEach((tp, line) -> System.out.println(tp + " " + line));
        }
    }
}
