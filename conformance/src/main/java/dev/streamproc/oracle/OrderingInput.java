package dev.streamproc.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.Punctuator;
import org.apache.kafka.streams.processor.api.ProcessorContext;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntSupplier;

/**
 * The optional parts of an ordering scenario's input that describe the log rather than the records (format:
 * {@code conformance/README.md}, "Transactional inputs and leader epochs"): transaction control markers, the
 * transaction a record belongs to and its outcome, the consumer's isolation level, and record leader epochs.
 *
 * <p>What a consumer hands to Kafka Streams ({@code CompletedFetch#nextFetchedRecord}, kafka-clients 4.2): control
 * batches (commit/abort markers) never, at any isolation level; records of an aborted transaction not under
 * {@code read_committed}. The consumer's position still moves past both ({@code nextFetchOffset = batch.nextOffset()}),
 * and {@code ConsumerRecords#nextOffsets} carries that position to {@code StreamTask#updateNextOffsets}, which
 * {@code StreamTask#findOffsetAndMetadata} commits when the partition's queue is empty.
 */
final class OrderingInput {
    static final String CONTROL = "control";
    static final String TXN = "txn";
    static final String ABORT = "ABORT";
    static final String READ_COMMITTED = "read_committed";
    static final String EXACTLY_ONCE_V2 = "exactly_once_v2";
    static final String COMMITTED_OFFSETS = "committed_offsets";

    private OrderingInput() {
    }

    /** A commit/abort marker entry ({@code control}) rather than a data record. */
    static boolean isControl(final JsonNode entry) {
        return entry.hasNonNull(CONTROL);
    }

    /** {@code read_committed}: {@code exactly_once_v2} forces it, else {@code config.isolation_level}. */
    static boolean readCommitted(final JsonNode config) {
        return EXACTLY_ONCE_V2.equals(config.path("processing_guarantee").asText(""))
            || READ_COMMITTED.equals(config.path("isolation_level").asText(""));
    }

    /** Transaction id -> aborted, from the control entries of every partition (all markers of a txn must agree). */
    static Map<String, Boolean> transactionOutcomes(final JsonNode scenario) {
        final Map<String, Boolean> aborted = new HashMap<>();
        for (final JsonNode p : scenario.get("partitions")) {
            for (final JsonNode r : p.get("records")) {
                if (isControl(r)) {
                    final String txn = r.get(TXN).asText();
                    final boolean abort = ABORT.equals(r.get(CONTROL).asText());
                    final Boolean before = aborted.put(txn, abort);
                    if (before != null && before != abort) {
                        throw new IllegalArgumentException("transaction " + txn + " has both commit and abort markers");
                    }
                }
            }
        }
        return aborted;
    }

    /** The entries a consumer with the scenario's isolation level returns, in offset order. */
    static List<JsonNode> delivered(final JsonNode scenario, final JsonNode partition) {
        final boolean readCommitted = readCommitted(scenario.get("config"));
        final Map<String, Boolean> aborted = transactionOutcomes(scenario);
        final List<JsonNode> out = new ArrayList<>();
        for (final JsonNode r : partition.get("records")) {
            if (isControl(r)) {
                continue;
            }
            if (readCommitted && r.hasNonNull(TXN)) {
                final Boolean abort = aborted.get(r.get(TXN).asText());
                if (abort == null) {
                    throw new IllegalArgumentException("transaction " + r.get(TXN).asText() + " has no marker");
                }
                if (abort) {
                    continue;
                }
            }
            out.add(r);
        }
        return out;
    }

    /** The consumer's position once the whole partition is fetched: the last entry's offset + 1 (0 if none). */
    static long endPosition(final JsonNode partition) {
        long end = 0;
        for (final JsonNode r : partition.get("records")) {
            end = Math.max(end, r.get("offset").asLong() + 1);
        }
        return end;
    }

    /** A record's leader epoch ({@code leader_epoch}), empty when the scenario gives none (as MockConsumer's). */
    static Optional<Integer> leaderEpoch(final JsonNode record) {
        return record.hasNonNull("leader_epoch") ? Optional.of(record.get("leader_epoch").asInt()) : Optional.empty();
    }

    static boolean wantsCommittedOffsets(final JsonNode scenario) {
        return scenario.path("expected").has(COMMITTED_OFFSETS);
    }

    /** {@code committed_offsets}: the committed offset of each scenario partition that has one, in list order. */
    static ArrayNode committedOffsets(final JsonNode scenario, final Map<TopicPartition, OffsetAndMetadata> committed,
                                      final java.util.function.Function<String, String> realTopic) {
        final ArrayNode out = Main.MAPPER.createArrayNode();
        for (final JsonNode p : scenario.get("partitions")) {
            final String topic = p.get("topic").asText();
            final int partition = p.get("partition").asInt();
            final OffsetAndMetadata c = committed == null ? null
                : committed.get(new TopicPartition(realTopic.apply(topic), partition));
            if (c != null) {
                final ObjectNode o = out.addObject();
                o.put("topic", topic);
                o.put("partition", partition);
                o.put("offset", c.offset());
            }
        }
        return out;
    }

    /**
     * {@code proc}'s {@code init()}: one {@code schedule(...)} per {@code punctuations} entry, in array order (the
     * anchored 4.2 form when {@code start_ms} is given); each call records {@code type}, {@code timestamp},
     * {@code after_record_index} (from {@code recordsSoFar}, minus one) and {@code schedule_index} in {@code fired}.
     */
    static void schedulePunctuations(final ProcessorContext<?, ?> context, final JsonNode scenario,
                                     final ArrayNode fired, final IntSupplier recordsSoFar) {
        int index = 0;
        for (final JsonNode p : scenario.path("punctuations")) {
            final PunctuationType type = PunctuationType.valueOf(p.get("type").asText());
            final Duration interval = Duration.ofMillis(p.get("interval_ms").asLong());
            final int scheduleIndex = index++;
            final Punctuator callback = ts -> {
                final ObjectNode f = fired.addObject();
                f.put("type", type.name());
                f.put("timestamp", ts);
                f.put("after_record_index", recordsSoFar.getAsInt() - 1);
                f.put("schedule_index", scheduleIndex);
            };
            if (p.hasNonNull("start_ms")) {
                context.schedule(Instant.ofEpochMilli(p.get("start_ms").asLong()), interval, type, callback);
            } else {
                context.schedule(interval, type, callback);
            }
        }
    }
}
