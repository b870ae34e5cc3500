"""The demo application's topology (``make demo``): order totals per customer, with the Processor API.

Importable on Spark executors as ``streamproc_dev.demo_topology:order_totals`` (it ships with the package).
"""

from __future__ import annotations

import json
from typing import Any

from streamproc import Processor, ProcessorContext, Record, Stores, Topology, serde_for
from streamproc.state.stores import ValueAndTimestamp

ORDERS = "demo-orders"
TOTALS = "demo-order-totals-out"
STORE = "totals"
_STRING = serde_for("String")
_LONG = serde_for("Long")


class SumAmounts(Processor):
    """Adds each order's ``amount`` to its customer's total (a timestamped store) and forwards the new total."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store: Any = context.get_state_store(STORE)

    def process(self, record: Record[Any, Any]) -> None:
        amount = int(json.loads(record.value)["amount"])
        old = self.store.get(record.key)
        total = amount + (0 if old is None else old.value)
        self.store.put(record.key, ValueAndTimestamp(total, record.timestamp))
        self.context.forward(Record(record.key, total, record.timestamp))


def order_totals() -> Topology:
    """``demo-orders`` → sum per customer (persistent, logged store ``totals``) → ``demo-order-totals-out``."""
    t = Topology()
    t.add_source("orders", ORDERS, key_deserializer=_STRING.deserializer, value_deserializer=_STRING.deserializer)
    t.add_processor("sum", SumAmounts, "orders")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store(STORE), _STRING, _LONG
        ),
        "sum",
    )
    t.add_sink("totals", TOTALS, "sum", key_serializer=_STRING.serializer, value_serializer=_LONG.serializer)
    return t
