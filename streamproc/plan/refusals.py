"""The plans streamproc refuses to make (planning.md §7), one class per reason.

Where Kafka (the reset tools, or Kafka Streams at its next start) would silently lose or skip data, or fail later,
the plan step refuses with a :class:`PlanRefusal` that names the partitions and offsets and says what to do. Each
class names the Kafka behaviour it stands for, so a scenario can expect the refusal by its name. The base class and
the three refusals about topics (``MissingTopic``, ``NotCopartitioned``, ``PartitionCountChanged``) are defined in
:mod:`streamproc.errors`, because the topology analysis raises them too; they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamproc.errors import MissingTopic, NotCopartitioned, PartitionCountChanged, PlanRefusal

__all__ = [
    "BadRequest",
    "BadResetFile",
    "CommittedBeyondEnd",
    "EndBeforeStart",
    "EndBeyondHighWatermark",
    "EndBeyondLastStableOffset",
    "GroupActive",
    "MissingTopic",
    "NoCommittedOffsetToShift",
    "NoResetPolicy",
    "NotCopartitioned",
    "OffsetOutOfRange",
    "OutOfRangeRequest",
    "PartitionCountChanged",
    "PlanRefusal",
    "ResetFileMismatch",
    "UnstableOffsets",
]


class GroupActive(PlanRefusal):
    """The application's group still has members (the reset tools refuse too)."""


class StreamsGroupRefused(PlanRefusal):
    """The group is a KIP-1071 streams group (``group.protocol=streams``): its members cannot be checked yet."""


class StreamsProtocolUnsupported(PlanRefusal):
    """The application says ``group.protocol=streams`` and the cluster does not offer the streams group protocol."""


class StreamsTopologyDiffers(PlanRefusal):
    """The topology the application's streams group holds is not the user's (``plan/streams_group_topology``)."""


class UnstableOffsets(PlanRefusal):
    """OffsetFetch kept answering ``UNSTABLE_OFFSET_COMMIT`` (a transactional offset commit is pending)."""


def pending_commit_message(group_id: str, pending: Sequence[object], waited_s: float, then: str) -> str:
    """The refusal of a pending transactional offset commit, the plan's and the hand-off's: where, for how long it
    was waited for, whose it can be, and what to do."""
    where = f"on {', '.join(str(tp) for tp in pending)} " if pending else "on partitions it committed before "
    return (
        f"group '{group_id}' has a transactional offset commit pending {where}(UNSTABLE_OFFSET_COMMIT), still after "
        f"{waited_s:.0f} s: a producer's open transaction holds it (the application's, another tool's, or a killed "
        "streamproc hand-off's: run that hand-off again, it fences its transactions first); wait until that "
        f"transaction commits or aborts (the broker aborts it after the producer's transaction.timeout.ms), then {then}"
    )


class OffsetOutOfRange(PlanRefusal):
    """The committed offset is below the log start: unprocessed data was deleted."""


class CommittedBeyondEnd(PlanRefusal):
    """The committed offset is above the high watermark (log truncated or topic re-created)."""


class NoResetPolicy(PlanRefusal):
    """No committed offset and the reset policy is ``none`` (Kafka Streams: ``StreamsException``)."""


class NoCommittedOffsetToShift(PlanRefusal):
    """``shift_by`` on a partition without a committed offset (``kafka-consumer-groups.sh`` refuses too)."""


class OutOfRangeRequest(PlanRefusal):
    """``start_policy=strict`` and an explicit start outside ``[log start, latest]``."""


class EndBeyondHighWatermark(PlanRefusal):
    """An explicit end above the high watermark (a batch run does not wait for data)."""


class EndBeyondLastStableOffset(PlanRefusal):
    """An explicit end above the last stable offset of a ``read_committed`` run."""


class EndBeforeStart(PlanRefusal):
    """An end offset below the start offset."""


class BadResetFile(PlanRefusal):
    """A ``from_file`` CSV that ``StreamsResetter#parseResetPlan`` would not read (or with duplicates)."""


class ResetFileMismatch(PlanRefusal):
    """A ``from_file`` CSV that misses an input partition or lists a partition that is not an input."""


class BadRequest(PlanRefusal):
    """A malformed request: datetime or duration text, negative duration, unknown partition or mode."""
