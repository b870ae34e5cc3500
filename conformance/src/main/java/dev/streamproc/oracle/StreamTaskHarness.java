package dev.streamproc.oracle;

import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TopologyConfig;
import org.apache.kafka.streams.internals.StreamsConfigUtils;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.InternalProcessorContext;
import org.apache.kafka.streams.processor.internals.InternalTopologyBuilder;
import org.apache.kafka.streams.processor.internals.ProcessorContextImpl;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.ProcessorTopology;
import org.apache.kafka.streams.processor.internals.RecordCollector;
import org.apache.kafka.streams.processor.internals.RecordCollectorImpl;
import org.apache.kafka.streams.processor.internals.StateDirectory;
import org.apache.kafka.streams.processor.internals.StreamTask;
import org.apache.kafka.streams.processor.internals.StreamsProducer;
import org.apache.kafka.streams.processor.internals.Task;
import org.apache.kafka.streams.processor.internals.metrics.StreamsMetricsImpl;
import org.apache.kafka.streams.processor.internals.metrics.TaskMetrics;
import org.apache.kafka.streams.state.internals.ThreadCache;

import java.util.Collection;
import java.util.HashSet;
import java.util.function.Consumer;

/**
 * A real Kafka Streams 4.2 {@link StreamTask} on a real {@link ProcessorTopology}, constructed the way
 * {@code TopologyTestDriver#setupTask} does it: real {@link ProcessorStateManager}, {@link StateDirectory},
 * {@link RecordCollectorImpl} over a {@link MockProducer}, {@link ProcessorContextImpl}, metrics and thread cache.
 * The caller wires the topology (sources, processors, stores) on Kafka's {@link InternalTopologyBuilder}, and owns
 * the {@link MockConsumer} (assignment, beginning offsets, committed offsets) before the task is built.
 *
 * <p>Shared by {@link TaskRunner} (ordering scenarios) and {@link StateOpsRunner} (state scenarios on a task).
 */
final class StreamTaskHarness {
    final TaskId taskId;
    final StreamsConfig config;
    final InternalTopologyBuilder builder;
    final ProcessorTopology topology;
    final Metrics metrics;
    final StreamsMetricsImpl streamsMetrics;
    final StateDirectory stateDirectory;
    final ProcessorStateManager stateManager;
    final InternalProcessorContext<?, ?> context;
    final StreamTask task;

    private StreamTaskHarness(final TaskId taskId, final StreamsConfig config, final InternalTopologyBuilder builder,
                              final ProcessorTopology topology, final Metrics metrics,
                              final StreamsMetricsImpl streamsMetrics, final StateDirectory stateDirectory,
                              final ProcessorStateManager stateManager, final InternalProcessorContext<?, ?> context,
                              final StreamTask task) {
        this.taskId = taskId;
        this.config = config;
        this.builder = builder;
        this.topology = topology;
        this.metrics = metrics;
        this.streamsMetrics = streamsMetrics;
        this.stateDirectory = stateDirectory;
        this.stateManager = stateManager;
        this.context = context;
        this.task = task;
    }

    /**
     * Builds the task. {@code wiring} adds the topology's nodes to Kafka's builder; the builder then decorates
     * internal topic names with the application id ({@code rewriteTopology}) and builds the one topology of the
     * task. {@code persistentStateDirectory}: whether {@link StateDirectory} creates its directories (Kafka passes
     * whether the topology has persistent stores).
     */
    static StreamTaskHarness build(final StreamsConfig config, final TaskId taskId,
                                   final Collection<TopicPartition> partitions,
                                   final MockConsumer<byte[], byte[]> consumer, final Time time,
                                   final LogContext logContext, final boolean persistentStateDirectory,
                                   final Consumer<InternalTopologyBuilder> wiring) {
        final String threadId = Thread.currentThread().getName();
        final Metrics metrics = new Metrics(new MetricConfig().recordLevel(Sensor.RecordingLevel.DEBUG), time);
        final StreamsMetricsImpl streamsMetrics = new StreamsMetricsImpl(metrics, "oracle-client", time);
        TaskMetrics.droppedRecordsSensor(threadId, taskId.toString(), streamsMetrics);

        final InternalTopologyBuilder builder = new InternalTopologyBuilder(new TopologyConfig(config));
        wiring.accept(builder);
        builder.rewriteTopology(config);
        final ProcessorTopology topology = builder.buildTopology();

        final ThreadCache cache = new ThreadCache(logContext, 0L, streamsMetrics);
        final ByteArraySerializer bytes = new ByteArraySerializer();
        final MockProducer<byte[], byte[]> producer = new MockProducer<>(Cluster.empty(), true, null, bytes, bytes);
        final StreamsProducer streamsProducer = new StreamsProducer(producer,
            StreamsConfigUtils.processingMode(config), time, logContext);
        final StateDirectory stateDirectory = new StateDirectory(config, time, persistentStateDirectory, false);
        final ProcessorStateManager stateManager = new ProcessorStateManager(taskId, Task.TaskType.ACTIVE, false,
            logContext, stateDirectory, new TaskRunner.NoChangelogRegister(), topology.storeToChangelogTopic(),
            new HashSet<>(partitions), false);
        final RecordCollector collector = new RecordCollectorImpl(logContext, taskId, streamsProducer,
            config.productionExceptionHandler(), streamsMetrics, topology);
        final InternalProcessorContext<?, ?> context = new ProcessorContextImpl(taskId, config, stateManager,
            streamsMetrics, cache);
        final StreamTask task = new StreamTask(taskId, new HashSet<>(partitions), topology, consumer,
            builder.topologyConfigs().getTaskConfig(), streamsMetrics, stateDirectory, cache, time, stateManager,
            collector, context, logContext, false);
        return new StreamTaskHarness(taskId, config, builder, topology, metrics, streamsMetrics, stateDirectory,
            stateManager, context, task);
    }
}
