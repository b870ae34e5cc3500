"""The one error hierarchy of streamproc.

Every error a user can meet derives from :class:`StreamprocError`, so the CLI and the Airflow operators can turn
any of them into a one-line message. Task-scoped errors carry the task id, record-scoped ones the topic, partition
and offset, both as attributes and in ``str()``, in the spirit of Kafka Streams' ``StreamsException``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamproc.engine.records import TopicPartition


class StreamprocError(Exception):
    """Root of every error streamproc raises on purpose."""


class ConfigError(StreamprocError):
    """A setting is missing, malformed or contradicts another one."""


class MissingExtra(ConfigError):
    """A command or feature needs an optional dependency that is not installed; names the extra to install."""


class DevServiceError(StreamprocError):
    """A local development service (broker, S3 server) could not be fetched, started or stopped."""


class TopologyError(StreamprocError):
    """A topology is malformed: a duplicate node name, an unknown parent, an invalid store name."""


class PlanError(StreamprocError):
    """Offsets or timestamps cannot be resolved into a plan: a missing topic, an active group, lost data."""


class PlanRefusal(PlanError):
    """A plan streamproc will not make; carries the partitions/topics it concerns and structured details.

    Where the live application would fail too, ``kafka_exception`` and ``kafka_message`` say how (the simple class
    name and the message Kafka Streams would throw), so a scenario can compare the refusal with Kafka Streams.
    The refusals of the position rules are in :mod:`streamproc.plan.refusals`; the three about topics are here
    because the topology analysis (``engine``, which must not import ``plan``) raises them as well.
    """

    def __init__(
        self,
        message: str,
        *,
        partitions: Iterable[TopicPartition] = (),
        topics: Iterable[str] = (),
        details: Mapping[str, object] | None = None,
        kafka_exception: str | None = None,
        kafka_message: str | None = None,
    ) -> None:
        self.partitions: tuple[TopicPartition, ...] = tuple(sorted(set(partitions)))
        self.topics: tuple[str, ...] = tuple(sorted(set(topics)))
        self.details: dict[str, object] = dict(details or {})
        self.kafka_exception = kafka_exception
        self.kafka_message = kafka_message
        super().__init__(message)


class MissingTopic(PlanRefusal, TopologyError):
    """A source, global or internal topic is absent, or a pattern matches nothing (``MissingSourceTopicException``).

    This and the next two are a :class:`TopologyError` as well: the topology cannot run on this cluster, and code
    that analyses a topology catches that one class.
    """


class NotCopartitioned(PlanRefusal, TopologyError):
    """Co-partitioned topics differ in partition count (Kafka Streams: ``TopologyException``).

    ``details["partition_counts"]`` holds the counts that differ.
    """


class PartitionCountChanged(PlanRefusal, TopologyError):
    """A topic's partition count differs from what its changelogs, Kafka Streams or a previous plan require.

    ``details["partition_counts"]`` holds the actual counts when an existing internal topic is wrong.
    """


class FetchError(StreamprocError):
    """A planned range could not be copied to staging, e.g. its offsets were lost to retention."""


class StorageError(StreamprocError):
    """The staging store (a directory or an S3 endpoint) could not be reached or answered with an error."""


class ManifestError(StreamprocError):
    """Staged data does not match its manifest, or a manifest does not prove its range."""


class StateError(StreamprocError):
    """A state directory, store or checkpoint is unusable."""


class ProcessingError(StreamprocError):
    """Processing a task failed; carries the task id when known."""

    def __init__(self, message: str, *, task_id: str | None = None) -> None:
        self.task_id = task_id
        super().__init__(f"task [{task_id}] {message}" if task_id is not None else message)


class RecordError(ProcessingError):
    """Processing one record failed (a fatal deserialization, timestamp or processing error)."""

    def __init__(
        self,
        message: str,
        *,
        topic: str,
        partition: int,
        offset: int,
        task_id: str | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        super().__init__(f"{message} (topic=[{topic}] partition=[{partition}] offset=[{offset}])", task_id=task_id)


class RecordValidationError(StreamprocError):
    """A source record's decoded value failed the pandera schema attached to its source (``value_schema``).

    Raised inside the source node and handed to the processing exception handler like a processor's exception:
    continue drops the record (and a KIP-1034 dead letter queue record carries this message), fail ends the task.
    """


class HandoffError(StreamprocError):
    """Committing offsets, writing checkpoints or purging repartition topics failed or was refused."""


#: The Java class Kafka Streams throws for a fatal record, extractor, handler or processing error.
KAFKA_STREAMS_EXCEPTION = "org.apache.kafka.streams.errors.StreamsException"


class StreamsError(RecordError):
    """A record made its task fail where Kafka Streams throws a ``StreamsException``; quotes Kafka's message."""

    def __init__(
        self,
        kafka_message: str,
        *,
        reason: str,
        topic: str,
        partition: int,
        offset: int,
        task_id: str | None = None,
        kafka_exception: str = KAFKA_STREAMS_EXCEPTION,
    ) -> None:
        self.kafka_message = kafka_message
        self.kafka_exception = kafka_exception
        self.reason = reason
        super().__init__(kafka_message, topic=topic, partition=partition, offset=offset, task_id=task_id)


class PunctuationError(ProcessingError):
    """A punctuator failed and the processing exception handler answered FAIL (or failed itself)."""

    def __init__(
        self,
        kafka_message: str,
        *,
        processor: str,
        task_id: str | None = None,
        kafka_exception: str = KAFKA_STREAMS_EXCEPTION,
    ) -> None:
        self.kafka_message = kafka_message
        self.kafka_exception = kafka_exception
        self.processor = processor
        super().__init__(kafka_message, task_id=task_id)


class KafkaUnavailableError(StreamprocError):
    """The Kafka cluster at the bootstrap address cannot be reached (refused, unresolvable, silent, TLS/SASL)."""

    def __init__(self, bootstrap: str, cause: str) -> None:
        self.bootstrap = bootstrap
        self.cause = cause
        super().__init__(
            f"cannot reach the Kafka cluster at {bootstrap}: {cause}; check --bootstrap (and -X security "
            "settings) and that the brokers are up"
        )


class SchemaRegistryError(StreamprocError):
    """A Schema Registry refused a request that is not about one record: bad credentials, a schema incompatible with
    its subject's versions on register, a subject with no version for ``use.latest.version``. The message is the
    registry's, in one line, with its URL (never its credentials)."""


class SchemaRegistryUnavailable(SchemaRegistryError):
    """A Schema Registry did not answer (refused, unresolvable, timed out).

    Never a record's fault, so never a deserialization handler's drop: a ``LogAndContinue`` handler would otherwise
    skip every record while the registry is down (what Kafka Streams with Confluent's serde does) and the run would
    hand off offsets past records it never processed. The task fails instead, and its retry finds the registry.
    """


class LedgerError(StreamprocError):
    """The run ledger cannot be opened, migrated or written, or was asked about a run it does not hold."""


class ApplicationBusy(LedgerError):
    """Another run of the same application is active: two runs at once would plan from the same offsets and hand
    off twice. Names the active run so that the user can find it (Airflow's DAG run, or the CLI's run id)."""

    def __init__(
        self,
        application_id: str,
        *,
        run_id: str,
        started_at: str,
        dag_id: str | None = None,
        dag_run_id: str | None = None,
        hint: str = "",
    ) -> None:
        self.application_id = application_id
        self.run_id = run_id
        self.started_at = started_at
        self.dag_id = dag_id
        self.dag_run_id = dag_run_id
        where = f" (DAG {dag_id}, DAG run {dag_run_id})" if dag_id is not None else ""
        super().__init__(
            f"application {application_id!r} is busy: run {run_id}{where} started at {started_at} is still active; "
            f"wait for it to finish{hint}"
        )


class RunEnded(LedgerError):
    """A step of a run that already ended (succeeded, rejected, a dry run, skipped) was run again: it is not resumed,
    since its hand-off is done or was refused; a new run is the way on."""


class HandoffNotConfirmed(ConfigError):
    """The user answered no to the hand-off's confirmation: nothing was handed off (the run is recorded rejected)."""
