"""A faster ``__init__`` for the frozen, slotted dataclasses built once or more per record on the hot path.

``@dataclass(frozen=True)`` generates an ``__init__`` that stores every field through ``object.__setattr__`` (a
method call per field, because the class's own ``__setattr__`` refuses). For a slotted class the slot's member
descriptor can store the field directly, at about half the cost; with ``Record``, ``ConsumerRecord``,
``StampedRecord`` and ``ProcessorRecordContext`` built per record this is a measurable share of the per-record
cost. The replacement takes the same parameters with the same defaults and stores the same values in the same
order; instances stay frozen (``__setattr__``/``__delattr__`` are untouched), and ``dataclasses.replace``, equality,
hashing, ordering and pickling work as before because they only read the fields or go through ``__init__``.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Sequence
from typing import Any, TypeVar

try:
    from streamproc.engine import _bulk_kernel
except ImportError:  # not built (a source checkout without `make install`): build_slotted calls the class
    _bulk_kernel = None  # type: ignore[assignment]

T = TypeVar("T")

#: Set (to anything) to keep the generated Python ``__init__`` (the definition) instead of the kernel's.
PURE_PYTHON_INIT_ENV = "STREAMPROC_PURE_PYTHON_INIT"


def fast_frozen_init(cls: type[T]) -> type[T]:
    """Replace ``cls.__init__`` by one storing through the slot descriptors; unsupported shapes are left alone.

    Only plain fields are supported (no ``default_factory``, ``init=False``, ``kw_only``, ``InitVar`` or
    ``__post_init__``); anything else keeps the dataclass-generated ``__init__``, which is equally correct.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        return cls
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    namespace: dict[str, Any] = {}
    parameters: list[str] = []
    body: list[str] = []
    for field in fields:
        if not field.init or field.kw_only or field.default_factory is not dataclasses.MISSING:
            return cls
        descriptor = getattr(cls, field.name, None)
        setter = getattr(descriptor, "__set__", None)
        if setter is None or type(descriptor).__name__ != "member_descriptor":
            return cls
        namespace[f"_set_{field.name}"] = setter
        if field.default is dataclasses.MISSING:
            parameters.append(field.name)
        else:
            namespace[f"_default_{field.name}"] = field.default
            parameters.append(f"{field.name}=_default_{field.name}")
        body.append(f"    _set_{field.name}(self, {field.name})")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + ("\n".join(body) if body else "    pass")
    exec(source, namespace)  # the same technique ``dataclasses`` itself uses to build ``__init__``
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)  # keeps inspect.signature as it was
    #: The fields, in order, this ``__init__`` stores through their slot descriptors and nothing else (the compiled
    #: replay loop builds a ``Record`` the same way without the call: ``bulk_replay._record_slots``).
    init.__slot_fields__ = tuple(field.name for field in fields)
    cls.__init__ = _compiled(cls, init, fields) or init  # type: ignore[method-assign]
    return cls


def _compiled(cls: type, init: Any, fields: Sequence[dataclasses.Field[Any]]) -> Any:
    """The kernel's ``SlottedInit`` doing what ``init`` (the generated Python ``__init__``) does, without its frame
    (≈ 0.2 µs per instance, several instances per record), or ``None`` without the kernel (or with
    ``STREAMPROC_PURE_PYTHON_INIT`` set). It carries ``init``'s signature, names and ``__slot_fields__``;
    ``tests/unit/engine/test_slotted_init.py`` checks both build equal instances and raise the same ``TypeError``s."""
    if _bulk_kernel is None or os.environ.get(PURE_PYTHON_INIT_ENV):
        return None
    names = tuple(field.name for field in fields)
    defaults = tuple(field.default for field in fields if field.default is not dataclasses.MISSING)
    if any(field.default is dataclasses.MISSING for field in fields[len(fields) - len(defaults) :]):
        return None  # a default before a field without one: not a shape a dataclass allows, but not ours to judge
    compiled: Any = _bulk_kernel.SlottedInit(tuple(getattr(cls, name) for name in names), names, defaults)
    compiled.__signature__ = inspect.signature(init)
    compiled.__qualname__ = init.__qualname__
    compiled.__name__ = "__init__"
    compiled.__module__ = init.__module__
    compiled.__doc__ = init.__doc__
    compiled.__slot_fields__ = init.__slot_fields__
    compiled.__wrapped__ = init
    return compiled


def build_slotted(cls: type[T], columns: Sequence[list[Any]]) -> list[T]:
    """``list(map(cls, *columns))``: one instance per row of the equal-length column lists, in the fields' order.

    For a class whose ``__init__`` is :func:`fast_frozen_init`'s (it only stores its arguments through the slot
    descriptors) the compiled kernel builds the same objects without calling ``__init__`` per row; otherwise, or
    without the kernel, the class is called per row (the definition; ``tests/unit/engine/test_slotted_init.py``
    checks both give equal objects).
    """
    fields = getattr(cls.__init__, "__slot_fields__", None)
    if (
        _bulk_kernel is None
        or fields is None
        or cls.__new__ is not object.__new__
        or len(fields) != len(columns)
        or not all(type(column) is list for column in columns)
    ):
        return list(map(cls, *columns))
    descriptors = tuple(cls.__dict__[name] for name in fields)
    return _bulk_kernel.build_slotted(cls, descriptors, tuple(columns))
