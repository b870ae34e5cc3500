"""A first run's internal topics, as Kafka Streams 4.2 creates them at its first start (``--create-internal-topics``).

A batch that backfills history before the application ever ran must leave the repartition and changelog topics the
application will accept at its first rebalance: the same names and partition counts (the topology analysis computes
them with Kafka Streams' rules, ``RepartitionTopics``/``ChangelogTopics``) and the same configs, which decide what
the broker keeps. Kafka Streams' ``InternalTopicManager#makeReady`` creates each missing topic with
``NewTopic(name, partitions, replication.factor)`` and the configs of its ``InternalTopicConfig``:

- every internal topic: ``message.timestamp.type=CreateTime`` (``InternalTopicConfig``);
- repartition (and FK-join subscription) topics: ``cleanup.policy=delete``, ``retention.ms=-1``,
  ``segment.bytes=52428800`` (``RepartitionTopicConfig``);
- key-value store changelogs: ``cleanup.policy=compact`` (``UnwindowedUnversionedChangelogTopicConfig``);
- window and session store changelogs: ``cleanup.policy=compact,delete``, ``retention.ms`` = the store's retention +
  ``windowstore.changelog.additional.retention.ms`` (default one day), unless the store's own log config sets it
  (``WindowedChangelogTopicConfig``);
- versioned store changelogs: ``cleanup.policy=compact``, ``min.compaction.lag.ms`` = history retention + one day
  (``VersionedChangelogTopicConfig``).

Precedence as in Kafka Streams: those defaults < the application's ``topic.*`` settings < the store's log config
(``withLoggingEnabled(config)``). ``describe()`` does not say which kind a store is, so the kind of every store whose
changelog is created must be given (topology.md §7.5: a missing item the plan needs is an error, not a default).
Pure: the Kafka adapter (:mod:`streamproc.kafka.internal_topics`) creates what this module lists.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from streamproc.engine.topology_analysis import TopologyAnalysis
from streamproc.errors import ConfigError, PlanError

#: ``StreamsConfig.REPLICATION_FACTOR_CONFIG`` and its default (-1: the broker's ``default.replication.factor``).
REPLICATION_FACTOR_CONFIG: Final = "replication.factor"
DEFAULT_REPLICATION_FACTOR: Final = -1
#: ``StreamsConfig.WINDOW_STORE_CHANGE_LOG_ADDITIONAL_RETENTION_MS_CONFIG`` and its default (one day).
ADDITIONAL_RETENTION_CONFIG: Final = "windowstore.changelog.additional.retention.ms"
DEFAULT_ADDITIONAL_RETENTION_MS: Final = 86_400_000
#: ``StreamsConfig.TOPIC_PREFIX``: application settings applied to every internal topic Kafka Streams creates.
TOPIC_PREFIX: Final = "topic."
#: ``VersionedChangelogTopicConfig``: the history retention plus this fixed day is the changelog's compaction lag.
VERSIONED_ADDITIONAL_LAG_MS: Final = 86_400_000
_LONG_MAX: Final = 2**63 - 1

#: ``InternalTopicConfig.INTERNAL_TOPIC_DEFAULT_OVERRIDES``.
_INTERNAL_DEFAULTS: Final = {"message.timestamp.type": "CreateTime"}
#: ``RepartitionTopicConfig.REPARTITION_TOPIC_DEFAULT_OVERRIDES``.
_REPARTITION_DEFAULTS: Final = {
    **_INTERNAL_DEFAULTS,
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
}


class ChangelogKind(enum.Enum):
    """What a store's changelog keeps, as ``InternalTopologyBuilder#createChangelogTopicConfig`` tells them apart."""

    KEY_VALUE = "key_value"
    WINDOW = "window"
    SESSION = "session"
    VERSIONED = "versioned"
    #: logging disabled: no changelog
    UNLOGGED = "unlogged"


@dataclass(frozen=True, slots=True)
class StoreKind:
    """A store's kind with the retention its changelog config needs (window/session retention, versioned history)
    and its log config (``withLoggingEnabled(config)``)."""

    kind: ChangelogKind
    retention_ms: int | None = None
    log_config: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, store: str) -> StoreKind:
        """``key_value``, ``unlogged``, ``window:<retention ms>``, ``session:<retention ms>``,
        ``versioned:<history retention ms>`` (the ``--store-kind NAME=KIND`` value)."""
        name, _, number = text.partition(":")
        try:
            kind = ChangelogKind(name)
        except ValueError:
            kind = None
        needs_ms = kind in (ChangelogKind.WINDOW, ChangelogKind.SESSION, ChangelogKind.VERSIONED)
        if kind is None or needs_ms != bool(number) or (number and not number.isdigit()):
            raise ConfigError(
                f"store '{store}': kind '{text}' is not one of key_value, unlogged, window:<retention ms>, "
                "session:<retention ms>, versioned:<history retention ms>"
            )
        return cls(kind, int(number) if number else None)


@dataclass(frozen=True, slots=True)
class InternalTopicSettings:
    """What decides the configs of created internal topics: store kinds and the application's settings."""

    store_kinds: Mapping[str, StoreKind] = field(default_factory=dict)
    replication_factor: int = DEFAULT_REPLICATION_FACTOR
    additional_retention_ms: int = DEFAULT_ADDITIONAL_RETENTION_MS
    #: the application's ``topic.*`` settings, prefix removed
    topic_defaults: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_streams_settings(
        cls, settings: Mapping[str, str], store_kinds: Mapping[str, StoreKind]
    ) -> InternalTopicSettings:
        """From the application's StreamsConfig entries that matter here: ``replication.factor``,
        ``windowstore.changelog.additional.retention.ms`` and ``topic.*``; anything else is refused (it would be
        silently ignored otherwise)."""
        replication, additional, defaults = DEFAULT_REPLICATION_FACTOR, DEFAULT_ADDITIONAL_RETENTION_MS, {}
        for key, value in settings.items():
            if key.startswith(TOPIC_PREFIX) and len(key) > len(TOPIC_PREFIX):
                defaults[key.removeprefix(TOPIC_PREFIX)] = value
            elif key in (REPLICATION_FACTOR_CONFIG, ADDITIONAL_RETENTION_CONFIG):
                try:
                    number = int(value)
                except ValueError:
                    raise ConfigError(f"{key} must be an integer, not '{value}'") from None
                if key == REPLICATION_FACTOR_CONFIG:
                    replication = number
                else:
                    additional = number
            else:
                raise ConfigError(
                    f"streams setting '{key}' does not decide internal topics; give {REPLICATION_FACTOR_CONFIG}, "
                    f"{ADDITIONAL_RETENTION_CONFIG} or {TOPIC_PREFIX}<topic config>"
                )
        return cls(dict(store_kinds), replication, additional, defaults)


def internal_topic_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """The entries of an application's settings that decide its internal topics (the rest are other components')."""
    return {
        key: value
        for key, value in settings.items()
        if key in (REPLICATION_FACTOR_CONFIG, ADDITIONAL_RETENTION_CONFIG)
        or (key.startswith(TOPIC_PREFIX) and len(key) > len(TOPIC_PREFIX))
    }


@dataclass(frozen=True, slots=True)
class NewInternalTopic:
    """One internal topic to create: ``NewTopic(name, partitions, replication factor).configs(configs)``."""

    name: str
    role: str  # "repartition" or "changelog"
    partitions: int
    replication_factor: int
    configs: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "configs": dict(sorted(self.configs.items())),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> NewInternalTopic:
        try:
            configs = data["configs"]
            topic = cls(
                str(data["name"]), str(data["role"]), int(data["partitions"]), int(data["replication_factor"]),
                {str(k): str(v) for k, v in configs.items()},
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanError(f"{where}: not an internal topic ({exc!r})") from None
        return topic

    def describe(self) -> str:
        configs = ", ".join(f"{k}={v}" for k, v in sorted(self.configs.items()))
        replication = "broker default" if self.replication_factor < 0 else str(self.replication_factor)
        return f"{self.name} ({self.role}, {self.partitions} partition(s), replication {replication}; {configs})"


def _add_exact(a: int, b: int) -> int:
    """``Math.addExact`` with Kafka Streams' fallback to ``Long.MAX_VALUE`` on overflow."""
    return min(a + b, _LONG_MAX)


def repartition_configs(settings: InternalTopicSettings) -> dict[str, str]:
    """``RepartitionTopicConfig#getProperties`` (no per-topic configs: the DSL sets none)."""
    return {**_REPARTITION_DEFAULTS, **settings.topic_defaults}


def changelog_configs(store: str, kind: StoreKind, settings: InternalTopicSettings) -> dict[str, str]:
    """The changelog's configs for the store's kind (module docstring), with Kafka Streams' precedence."""
    log_config = dict(kind.log_config)
    if kind.kind in (ChangelogKind.WINDOW, ChangelogKind.SESSION):
        configs = {**_INTERNAL_DEFAULTS, "cleanup.policy": "compact,delete", **settings.topic_defaults, **log_config}
        if "retention.ms" not in log_config:
            assert kind.retention_ms is not None
            configs["retention.ms"] = str(_add_exact(kind.retention_ms, settings.additional_retention_ms))
        return configs
    configs = {**_INTERNAL_DEFAULTS, "cleanup.policy": "compact", **settings.topic_defaults, **log_config}
    if kind.kind is ChangelogKind.VERSIONED and "min.compaction.lag.ms" not in log_config:
        assert kind.retention_ms is not None
        configs["min.compaction.lag.ms"] = str(_add_exact(kind.retention_ms, VERSIONED_ADDITIONAL_LAG_MS))
    return configs


def internal_topics_to_create(
    analysis: TopologyAnalysis, existing: Collection[str], settings: InternalTopicSettings
) -> tuple[NewInternalTopic, ...]:
    """The application's internal topics that do not exist yet, with Kafka Streams' counts and configs, by name.

    Existing ones are left alone (the analysis already checked their partition counts). A store whose changelog is
    missing and whose kind was not given is refused, naming every such store.
    """
    present = set(existing)
    repartition = {t for sub in analysis.subtopologies for t in sub.repartition_source_topics}
    changelog_store = {s.changelog_topic: s.name for sub in analysis.subtopologies for s in sub.stores}
    unknown = sorted(
        store
        for topic, store in changelog_store.items()
        if topic not in present and topic in analysis.internal_topics and store not in settings.store_kinds
    )
    if unknown:
        raise PlanError(
            f"creating the changelogs of store(s) {', '.join(unknown)} needs each store's kind (describe() does not "
            "show it; it decides compaction and retention): pass --store-kind NAME=key_value|window:<retention "
            "ms>|session:<retention ms>|versioned:<history ms>|unlogged for each"
        )
    topics = []
    for name, partitions in sorted(analysis.internal_topics.items()):
        if name in present:
            continue
        if name in changelog_store:
            kind = settings.store_kinds[changelog_store[name]]
            if kind.kind is ChangelogKind.UNLOGGED:
                continue
            configs, role = changelog_configs(changelog_store[name], kind, settings), "changelog"
        elif name in repartition:
            configs, role = repartition_configs(settings), "repartition"
        else:
            continue
        topics.append(NewInternalTopic(name, role, partitions, settings.replication_factor, configs))
    return tuple(topics)


def store_kinds_of(topology: Any) -> dict[str, StoreKind]:
    """The kinds of a Python ``Topology``'s stores, from their builders (what ``--store-kind`` says by hand)."""
    from streamproc.state.store_builders import StoreBuilder
    from streamproc.state.store_type import StoreType

    kinds: dict[str, StoreKind] = {}
    names = {s for node in topology.nodes for s in topology.stores_of(node.name)}
    for name in sorted(names):
        builder = topology.store(name)
        if not isinstance(builder, StoreBuilder):
            continue
        definition = builder.definition()
        if not builder.logging_enabled:
            kinds[name] = StoreKind(ChangelogKind.UNLOGGED)
        elif definition.store_type is StoreType.SESSION:
            kinds[name] = StoreKind(ChangelogKind.SESSION, definition.retention_ms, dict(builder.log_config))
        elif definition.store_type.windowed:
            kinds[name] = StoreKind(ChangelogKind.WINDOW, definition.retention_ms, dict(builder.log_config))
        else:
            kinds[name] = StoreKind(ChangelogKind.KEY_VALUE, log_config=dict(builder.log_config))
    return kinds
