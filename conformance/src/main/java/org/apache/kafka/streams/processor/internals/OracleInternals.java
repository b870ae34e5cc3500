package org.apache.kafka.streams.processor.internals;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;

import java.io.File;
import java.lang.reflect.Field;
import java.util.Set;

/**
 * The oracle's window onto package-private Kafka Streams 4.2 methods, placed in Kafka's own package exactly as
 * Kafka's unit tests ({@code StreamTaskTest}, {@code ProcessorStateManagerTest}) reach them. Read-only: every
 * method only asks a real object what it holds; nothing here computes a Kafka Streams answer.
 */
public final class OracleInternals {
    private OracleInternals() {
    }

    /** {@code PartitionGroup#partitionTimestamp} of the task's partition group (what {@code findOffsetAndMetadata} encodes). */
    public static long partitionTime(final StreamTask task, final TopicPartition partition)
        throws ReflectiveOperationException {
        return partitionGroup(task).partitionTimestamp(partition);
    }

    /** {@code PartitionGroup#headRecordOffset}: the offset of the head buffered record, {@code null} when empty. */
    public static Long headRecordOffset(final StreamTask task, final TopicPartition partition)
        throws ReflectiveOperationException {
        return partitionGroup(task).headRecordOffset(partition);
    }

    private static AbstractPartitionGroup partitionGroup(final StreamTask task) throws ReflectiveOperationException {
        final Field f = StreamTask.class.getDeclaredField("partitionGroup");
        f.setAccessible(true);
        return (AbstractPartitionGroup) f.get(task);
    }

    /** {@code StateDirectory#checkpointFileFor}: the task's {@code .checkpoint} file. */
    public static File checkpointFileFor(final StateDirectory stateDirectory, final TaskId taskId) {
        return stateDirectory.checkpointFileFor(taskId);
    }

    /** {@code ProcessorStateManager#changelogPartitions}. */
    public static Set<TopicPartition> changelogPartitions(final ProcessorStateManager stateManager) {
        return stateManager.changelogPartitions();
    }

    /** {@code ProcessorTopology#isRepartitionTopic}. */
    public static boolean isRepartitionTopic(final ProcessorTopology topology, final String topic) {
        return topology.isRepartitionTopic(topic);
    }

    /** {@code TopologyMetadata.Subtopology#nodeGroupId}: the sub-topology id a {@code TopicsInfo} belongs to. */
    public static int subtopologyId(final TopologyMetadata.Subtopology subtopology) {
        return subtopology.nodeGroupId;
    }
}
