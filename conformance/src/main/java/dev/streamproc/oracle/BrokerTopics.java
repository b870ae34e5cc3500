package dev.streamproc.oracle;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Topics the live modes just created, made usable before anything reads them.
 *
 * <p>{@code createTopics} returns once the controller has the topics; the broker that leads their partitions may
 * learn of them a little later, and a {@code listOffsets} or a Kafka Streams assignment in that window fails with
 * {@code UnknownTopicOrPartitionException} or a missing source topic (a CI run lost {@code rp14} this way). Compiled
 * into both oracle jars with {@link RestorePlanRunner}, so it uses nothing else of the project.
 */
public final class BrokerTopics {
    private BrokerTopics() {
    }

    /** Returns once every partition of {@code topics} answers {@code listOffsets} on its leader. */
    public static void awaitReady(final Admin admin, final Collection<String> topics, final Duration timeout)
        throws Exception {
        final long deadline = System.currentTimeMillis() + timeout.toMillis();
        while (true) {
            try {
                final Map<TopicPartition, OffsetSpec> partitions = new HashMap<>();
                for (final TopicDescription d : admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS)
                    .values()) {
                    d.partitions().forEach(p -> partitions.put(new TopicPartition(d.name(), p.partition()),
                        OffsetSpec.latest()));
                }
                admin.listOffsets(partitions).all().get(30, TimeUnit.SECONDS);
                return;
            } catch (final ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)
                    || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }
}
