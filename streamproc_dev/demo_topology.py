"""The demo application "orders" (``make demo``), with the Processor API: the twin of the real Kafka Streams app
``conformance/src/main/java/dev/streamproc/oracle/DemoOrdersApp.java``, with the same node, store and topic names
(``DemoOrdersApp describe`` prints the same description), so that streamproc's hand-off lands where that app resumes.

    demo-orders (String customer → JSON order; a value that is not JSON is dropped: LogAndContinue)
      ├─ count-per-customer (store customer-counts) → to-customer-counts → demo-customer-counts (String → Long)
      └─ by-region-product (key = the order's region/product, value = its amount in cents)
           → <application.id>-revenue-by-region-product-repartition
           → daily-revenue (tumbling one-day windows, grace 28 days, store daily-revenue, retention 30 days)
           → to-daily-revenue → demo-daily-revenue (String "region/product@yyyy-mm-dd" → Long cents)

Importable on Spark executors and Airflow workers as ``streamproc_dev.demo_topology:orders_app``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from streamproc import Processor, ProcessorContext, Record, Stores, TaskConfig, Topology, serde_for
from streamproc.engine.deserialization_handler import LogAndContinueExceptionHandler
from streamproc.state.stores import TimestampedKeyValueStore, TimestampedWindowStore, ValueAndTimestamp

log = logging.getLogger(__name__)

ORDERS = "demo-orders"
CUSTOMER_COUNTS = "demo-customer-counts"
DAILY_REVENUE = "demo-daily-revenue"
COUNT_STORE = "customer-counts"
REVENUE_STORE = "daily-revenue"
#: the repartition topic: ``<application.id>-revenue-by-region-product-repartition``, as the DSL's ``repartition``
#: names it
REPARTITION = "revenue-by-region-product"
DAY_MS = 86_400_000
#: Orders may be settled up to four weeks late. A grace this long is also what makes the daily sums one answer: a
#: live Kafka Streams app runs the repartition's upstream tasks at different speeds (the busiest input partition
#: lags days of event time behind the quietest), so with a grace of hours which records come "too late" depends on
#: that interleaving, and two Kafka Streams runs over the same input disagree (conformance/FINDINGS.md).
GRACE_MS = 28 * DAY_MS
RETENTION_MS = 30 * DAY_MS
_STRING = serde_for("String")
_LONG = serde_for("Long")
_JSON = serde_for("Json")


def window_key(key: str, window_start: int) -> str:
    """``eu-west/grinder@2026-11-03``: the output key of a region/product's daily window."""
    return f"{key}@{datetime.fromtimestamp(window_start / 1000, UTC).date().isoformat()}"


class CountPerCustomer(Processor):
    """Counts each customer's orders in ``customer-counts``; forwards the new count."""

    store: TimestampedKeyValueStore[str, int]

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(COUNT_STORE)  # type: ignore[assignment]

    def process(self, record: Record[Any, Any]) -> None:
        old = self.store.get(record.key)
        count = 1 if old is None else old.value + 1
        self.store.put(record.key, ValueAndTimestamp(count, record.timestamp))
        self.context.forward(Record(record.key, count, record.timestamp, record.headers))


class ByRegionProduct(Processor):
    """Re-keys an order by its region and product (``eu-west/grinder``), with its amount (cents) as the value."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        order = record.value
        key = f"{order['region']}/{order['product']}"
        self.context.forward(Record(key, int(order["amount_cents"]), record.timestamp, record.headers))


class DropNullKeys(Processor):
    """The filter the DSL's ``repartition`` puts before its sink: a record without a key is not repartitioned."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is not None:
            self.context.forward(record)


class DailyRevenue(Processor):
    """Sums amounts per region/product and day while stream time has not passed the window's end plus the grace
    period; a later record is dropped (logged), as a DSL windowed aggregation drops it. The stored timestamp is the
    window's latest record timestamp, so it does not depend on the order in which upstream tasks' records arrive."""

    store: TimestampedWindowStore[str, int]

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.store = context.get_state_store(REVENUE_STORE)  # type: ignore[assignment]

    def process(self, record: Record[Any, Any]) -> None:
        window_start = record.timestamp - record.timestamp % DAY_MS
        stream_time = self.context.current_stream_time_ms()
        if window_start + DAY_MS + GRACE_MS <= stream_time:
            log.warning(
                "daily-revenue: dropping a record of %s at %d, its window closed (stream time %d)",
                record.key, record.timestamp, stream_time,
            )  # fmt: skip
            return
        old = self.store.fetch_at(record.key, window_start)
        total = (0 if old is None else old.value) + record.value
        timestamp = record.timestamp if old is None else max(old.timestamp, record.timestamp)
        self.store.put(record.key, ValueAndTimestamp(total, timestamp), window_start)
        self.context.forward(Record(window_key(record.key, window_start), total, record.timestamp, record.headers))


def orders_topology() -> Topology:
    """The topology of ``DemoOrdersApp``: two sub-topologies joined by the ``revenue-by-region-product`` topic."""
    t = Topology()
    t.add_source("orders", ORDERS, key_deserializer=_STRING.deserializer, value_deserializer=_JSON.deserializer)
    t.add_processor("count-per-customer", CountPerCustomer, "orders")
    t.add_processor("by-region-product", ByRegionProduct, "orders")
    t.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.persistent_timestamped_key_value_store(COUNT_STORE), _STRING, _LONG
        ),
        "count-per-customer",
    )
    t.add_sink(
        "to-customer-counts", CUSTOMER_COUNTS, "count-per-customer",
        key_serializer=_STRING.serializer, value_serializer=_LONG.serializer,
    )  # fmt: skip
    repartition = f"{REPARTITION}-repartition"
    t.add_processor(f"{repartition}-filter", DropNullKeys, "by-region-product")
    t.add_internal_topic(repartition)
    t.add_sink(
        f"{repartition}-sink", repartition, f"{repartition}-filter",
        key_serializer=_STRING.serializer, value_serializer=_LONG.serializer,
    )  # fmt: skip
    t.add_source(
        f"{repartition}-source", repartition,
        key_deserializer=_STRING.deserializer, value_deserializer=_LONG.deserializer,
    )  # fmt: skip
    t.add_processor("daily-revenue", DailyRevenue, f"{repartition}-source")
    t.add_state_store(
        Stores.timestamped_window_store_builder(
            Stores.persistent_timestamped_window_store(REVENUE_STORE, RETENTION_MS, DAY_MS), _STRING, _LONG
        ),
        "daily-revenue",
    )
    t.add_sink(
        "to-daily-revenue", DAILY_REVENUE, "daily-revenue",
        key_serializer=_STRING.serializer, value_serializer=_LONG.serializer,
    )  # fmt: skip
    return t


def orders_app() -> tuple[Topology, TaskConfig]:
    """The topology with the app's ``deserialization.exception.handler``: LogAndContinue (a corrupt order is dropped
    and counted, the task goes on), as ``DemoOrdersApp`` configures Kafka Streams."""
    return orders_topology(), TaskConfig(deserialization_exception_handler=LogAndContinueExceptionHandler())
