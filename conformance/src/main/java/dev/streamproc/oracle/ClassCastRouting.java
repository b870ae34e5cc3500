package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

import java.util.Map;
import java.util.Properties;

/**
 * ordering.md section 11 question 7 (rule PE-1) on the real {@link TopologyTestDriver} (kafka-streams-test-utils
 * 4.2.2): where does a {@link ClassCastException} thrown by a processor go?
 *
 * <p>Topologies: {@code source -> parent -> [cast, sibling]} ({@code parent} records the record, forwards it, then
 * records again; {@code cast} casts the String value to {@code Integer}; {@code sibling} records), and
 * {@code source -> [cast, sibling]}. The processing exception handler is a recording wrapper around the real
 * {@code LogAndContinueProcessingExceptionHandler} or {@code LogAndFailProcessingExceptionHandler}; it notes
 * {@code ErrorHandlerContext#processorNodeId()}, the exception it is given, its cause, the record and the answer.
 * Two records (values {@code a}, {@code b}) are piped per case. Prints one JSON object:
 * {@code {case: {events, handler_calls, errors, dropped_records_total}}}.
 *
 * <pre>java -cp conformance/target/streamproc-oracle.jar dev.streamproc.oracle.ClassCastRouting</pre>
 */
public final class ClassCastRouting {
    static final String TOPIC = "input";
    static ArrayNode events;
    static ArrayNode handlerCalls;
    static boolean continueOnError;

    private ClassCastRouting() {
    }

    public static void main(final String[] args) throws Exception {
        final ObjectNode out = Main.MAPPER.createObjectNode();
        out.set("child_of_processor_continue", run(true, true));
        out.set("child_of_processor_fail", run(true, false));
        out.set("child_of_source_continue", run(false, true));
        System.out.println(Main.MAPPER.writeValueAsString(out));
        System.out.flush();
        System.exit(0);
    }

    static ObjectNode run(final boolean withParent, final boolean resume) {
        events = Main.MAPPER.createArrayNode();
        handlerCalls = Main.MAPPER.createArrayNode();
        continueOnError = resume;
        final Topology topology = new Topology();
        topology.addSource("source", new StringDeserializer(), new StringDeserializer(), TOPIC);
        final String parentOfCast = withParent ? "parent" : "source";
        if (withParent) {
            topology.addProcessor("parent", Parent::new, "source");
        }
        topology.addProcessor("cast", Cast::new, parentOfCast);
        topology.addProcessor("sibling", Sibling::new, parentOfCast);
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "class-cast-routing");
        props.put(StreamsConfig.STATE_DIR_CONFIG, PrivateStateDir.PATH);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        props.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, RecordingHandler.class);
        final ObjectNode result = Main.MAPPER.createObjectNode();
        final ArrayNode errors = Main.MAPPER.createArrayNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            final TestInputTopic<String, String> input = driver.createInputTopic(TOPIC, new StringSerializer(),
                new StringSerializer());
            for (final String value : new String[] {"a", "b"}) {
                try {
                    input.pipeInput("k", value, 1L);
                } catch (final RuntimeException e) {
                    final ObjectNode err = errors.addObject();
                    err.put("value", value);
                    err.put("exception", e.getClass().getSimpleName());
                    err.put("message", e.getMessage());
                    err.put("cause", e.getCause() == null ? null : e.getCause().getClass().getSimpleName());
                    err.put("cause_cause", e.getCause() == null || e.getCause().getCause() == null ? null
                        : e.getCause().getCause().getClass().getSimpleName());
                }
            }
            double dropped = 0;
            for (final Map.Entry<MetricName, ? extends Metric> m : driver.metrics().entrySet()) {
                if (m.getKey().name().equals("dropped-records-total")
                    && m.getKey().group().equals("stream-task-metrics")) {
                    dropped += ((Number) m.getValue().metricValue()).doubleValue();
                }
            }
            result.put("dropped_records_total", (long) dropped);
        }
        result.set("events", events);
        result.set("handler_calls", handlerCalls);
        result.set("errors", errors);
        return result;
    }

    /** Records the record, forwards it to its children in order, records again. */
    static final class Parent implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(final ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<String, String> record) {
            events.add("parent:" + record.value());
            context.forward(record);
            events.add("parent-after-forward:" + record.value());
        }
    }

    /** Casts the value to {@code Integer}: a {@link ClassCastException} for every String value. */
    static final class Cast implements Processor<String, Object, Void, Void> {
        @Override
        public void process(final Record<String, Object> record) {
            events.add("cast:" + record.value());
            final Integer number = (Integer) record.value();
            events.add("cast-done:" + number);
        }
    }

    static final class Sibling implements Processor<String, String, Void, Void> {
        @Override
        public void process(final Record<String, String> record) {
            events.add("sibling:" + record.value());
        }
    }

    /** Notes what the handler is given and delegates to the real LogAndContinue/LogAndFail handler. */
    public static final class RecordingHandler implements ProcessingExceptionHandler {
        private Map<String, ?> configs = Map.of();

        @Override
        public void configure(final Map<String, ?> configs) {
            this.configs = configs;
        }

        @Override
        public Response handleError(final ErrorHandlerContext context, final Record<?, ?> record,
                                    final Exception exception) {
            final ProcessingExceptionHandler delegate = continueOnError
                ? new LogAndContinueProcessingExceptionHandler() : new LogAndFailProcessingExceptionHandler();
            delegate.configure(configs);
            final Response response = delegate.handleError(context, record, exception);
            final ObjectNode call = handlerCalls.addObject();
            call.put("processor_node_id", context.processorNodeId());
            call.put("topic", context.topic());
            call.put("offset", context.offset());
            call.put("exception", exception.getClass().getSimpleName());
            call.put("message", exception.getMessage());
            call.put("cause", exception.getCause() == null ? null : exception.getCause().getClass().getSimpleName());
            call.put("record_value", String.valueOf(record.value()));
            call.put("response", response.result().name());
            return response;
        }
    }
}
