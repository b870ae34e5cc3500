"""streamproc: Kafka Streams 4.2 semantics run as bounded batch jobs.

The public names are the ones below: a program's :class:`Topology` and :class:`Processor` (with its
:class:`ProcessorContext`, :class:`Record` and :class:`PunctuationType`), the task settings :class:`TaskConfig`,
Kafka's serdes (:func:`serde_for`, :class:`Serde`), :class:`TaskId`, the store factory :class:`Stores`, the error
root :class:`StreamprocError`, and the test driver (:class:`TopologyTestDriver`, :class:`TestRecord`). Everything
under ``streamproc.engine``, ``streamproc.state`` and the other sub-packages is internal and may change without notice.
"""

from __future__ import annotations

from streamproc.engine.processor import ClassCastError, Processor, ProcessorContext
from streamproc.engine.punctuation_queue import PunctuationType
from streamproc.engine.records import Record
from streamproc.engine.serdes import Serde, serde_for
from streamproc.engine.stream_task import TaskConfig
from streamproc.engine.task_id import TaskId
from streamproc.engine.topology import Topology
from streamproc.errors import StreamprocError
from streamproc.state.store_builders import Stores
from streamproc.testing import TestRecord, TopologyTestDriver

__all__ = [
    "ClassCastError",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "Serde",
    "Stores",
    "StreamprocError",
    "TaskConfig",
    "TaskId",
    "TestRecord",
    "Topology",
    "TopologyTestDriver",
    "serde_for",
]
