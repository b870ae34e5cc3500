"""``fast_frozen_init``: the replacement ``__init__`` builds the same frozen instances as the dataclass one."""

from __future__ import annotations

import dataclasses
import inspect
import os
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamproc.engine.corrupted_record import CorruptedRecord
from streamproc.engine.records import ConsumerRecord, ProcessorRecordContext, Record, TimestampType
from streamproc.engine.slotted_init import PURE_PYTHON_INIT_ENV, _bulk_kernel, fast_frozen_init
from streamproc.engine.stamped_record import StampedRecord


@dataclass(frozen=True, slots=True)
class Reference:
    a: int
    b: str = "b"
    c: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Fast:
    a: int
    b: str = "b"
    c: tuple[int, ...] = ()


fast_frozen_init(Fast)


def _generated(cls: type) -> Any:
    """The generated Python ``__init__`` (the definition): itself, or what the kernel's ``SlottedInit`` wraps."""
    return getattr(cls.__init__, "__wrapped__", cls.__init__)


def test_same_parameters_defaults_and_values_as_the_dataclass_init() -> None:
    assert str(inspect.signature(Fast.__init__)) == str(inspect.signature(Reference.__init__))
    assert str(inspect.signature(Fast)) == str(inspect.signature(Reference))
    assert _generated(Fast).__code__.co_filename == "<string>"
    assert dataclasses.astuple(Fast(1)) == dataclasses.astuple(Reference(1)) == (1, "b", ())
    assert dataclasses.astuple(Fast(1, c=(2,), b="x")) == (1, "x", (2,))
    with pytest.raises(TypeError):
        Fast()  # type: ignore[call-arg]


def test_instances_stay_frozen_and_work_with_replace_equality_hash_and_pickle() -> None:
    value = Fast(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.a = 2  # type: ignore[misc]
    assert dataclasses.replace(value, a=2) == Fast(2)
    assert hash(value) == hash(Fast(1))
    assert pickle.loads(pickle.dumps(value)) == value


def test_unsupported_shapes_keep_the_dataclass_init() -> None:
    @dataclass(frozen=True, slots=True)
    class WithFactory:
        items: list[int] = field(default_factory=list)

    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class NotFrozen:
        a: int

    for cls in (WithFactory, NoSlots, NotFrozen):
        original = cls.__init__
        fast_frozen_init(cls)
        assert cls.__init__ is original


def test_the_hot_path_values_use_it() -> None:
    for cls in (ConsumerRecord, Record, ProcessorRecordContext, StampedRecord, CorruptedRecord):
        assert _generated(cls).__code__.co_filename == "<string>", cls
        if _bulk_kernel is not None and not os.environ.get(PURE_PYTHON_INIT_ENV):
            assert type(cls.__init__) is _bulk_kernel.SlottedInit, cls
    raw = ConsumerRecord.raw("t", 0, 5, 7, b"k", None)
    assert raw.timestamp_type is TimestampType.CREATE_TIME and raw.serialized_value_size == -1
    corrupted = CorruptedRecord.of(raw)
    assert (corrupted.record, corrupted.timestamp, corrupted.raw_key, corrupted.raw_value) == (raw, -1, b"k", None)
    assert ProcessorRecordContext(1, 2, 3, None).headers == ()


def test_build_slotted_gives_the_objects_calling_the_class_per_row_gives() -> None:
    """The compiled construction from columns against the definition (``map`` over the columns)."""
    from streamproc.engine.slotted_init import _bulk_kernel, build_slotted

    columns = (list(range(500)), [f"s{i % 7}" for i in range(500)], [(i,) if i % 3 else () for i in range(500)])
    expected = list(map(Fast, *columns))
    built = build_slotted(Fast, columns)
    assert built == expected
    assert all(type(item) is Fast for item in built)
    assert [dataclasses.astuple(item) for item in built] == [dataclasses.astuple(item) for item in expected]
    assert build_slotted(Reference, columns) == list(map(Reference, *columns)) != []  # not fast_frozen_init: calls
    assert build_slotted(Fast, ([], [], [])) == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        built[0].a = 5  # type: ignore[misc]
    if _bulk_kernel is not None:
        with pytest.raises(ValueError, match="equal length"):
            build_slotted(Fast, ([1], ["x", "y"], [()]))


def _outcome(make: Any) -> Any:
    try:
        value = make()
    except TypeError as error:
        return ("TypeError", str(error).split("__init__() ")[-1])
    return (type(value), dataclasses.astuple(value))


CALLS = [
    ((1,), {}),
    ((1, "x"), {}),
    ((1, "x", (2,)), {}),
    ((1,), {"c": (3,)}),
    ((), {"a": 1, "b": "y", "c": ()}),
    ((), {"c": (), "a": 4}),
    ((), {}),
    ((1, "x", (2,), 4), {}),
    ((1,), {"a": 2}),
    ((1,), {"d": 2}),
    ((), {"b": "x"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_compiled_init_builds_and_refuses_what_the_generated_one_does(args: Any, kwargs: Any) -> None:
    """The kernel's ``SlottedInit`` against the generated ``__init__`` it stands in for, called the same way: equal
    instances, or a ``TypeError`` for the same reason (missing, unexpected, repeated, too many arguments)."""
    assert _bulk_kernel is not None, "the C kernel is not built: `make install` builds it"
    generated = _generated(Fast)

    def python_built() -> Fast:
        instance = Fast.__new__(Fast)
        generated(instance, *args, **kwargs)
        return instance

    compiled, reference = _outcome(lambda: Fast(*args, **kwargs)), _outcome(python_built)
    assert compiled[0] == reference[0]
    if compiled[0] == "TypeError":
        words = {"missing": "missing", "unexpected": "unexpected", "multiple": "multiple", "positional": "positional"}
        assert [w for w in words if w in compiled[1]] == [w for w in words if w in reference[1]], (compiled, reference)
    else:
        assert compiled == reference
        assert compiled[1] == _outcome(lambda: Reference(*args, **kwargs))[1]
