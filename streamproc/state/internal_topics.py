"""Names of Kafka Streams' internal topics: store changelogs and repartition topics (4.2.0).

Changelog: ``PSM.storeChangelogTopic`` (``<prefix>-<store>-changelog``, ``<prefix>-<topology>-<store>-changelog`` for
a named topology). Repartition: ``InternalTopologyBuilder.decorateTopic`` adds ``<prefix>-`` (``<prefix>-<topology>-``)
to the raw name the DSL built, which is the operation name plus ``-repartition``; ``KStreamImpl`` does not append the
suffix twice, ``KGroupedTableImpl`` (``KTable#groupBy``) always appends it. ``<prefix>`` is ``application.id`` unless
the internal ``__internal.override.topic.prefix__`` is set (``ProcessorContextUtils.topicNamePrefix``). Generated
operation names are topology.md's business (state.md §3.1).
"""

from __future__ import annotations

#: ``ProcessorStateManager.STATE_CHANGELOG_TOPIC_SUFFIX``.
STATE_CHANGELOG_TOPIC_SUFFIX = "-changelog"
#: ``KStreamImpl.REPARTITION_TOPIC_SUFFIX``.
REPARTITION_TOPIC_SUFFIX = "-repartition"
#: ``StreamsConfig.InternalConfig.TOPIC_PREFIX_ALTERNATIVE``.
TOPIC_PREFIX_ALTERNATIVE = "__internal.override.topic.prefix__"


def topic_name_prefix(application_id: str, configs: dict[str, str] | None = None) -> str:
    """``ProcessorContextUtils.topicNamePrefix``: the override prefix if configured, else ``application.id``."""
    if configs is None:
        return application_id
    return configs.get(TOPIC_PREFIX_ALTERNATIVE, application_id)


def store_changelog_topic(prefix: str, store_name: str, named_topology: str | None = None) -> str:
    """``ProcessorStateManager.storeChangelogTopic``."""
    if named_topology is None:
        return f"{prefix}-{store_name}{STATE_CHANGELOG_TOPIC_SUFFIX}"
    return f"{prefix}-{named_topology}-{store_name}{STATE_CHANGELOG_TOPIC_SUFFIX}"


def decorate_topic(prefix: str, topic: str, named_topology: str | None = None) -> str:
    """``InternalTopologyBuilder.decorateTopic``: the full name of an internal topic from its raw name."""
    if named_topology is None:
        return f"{prefix}-{topic}"
    return f"{prefix}-{named_topology}-{topic}"


def repartition_topic(
    prefix: str,
    name: str,
    named_topology: str | None = None,
    *,
    ktable_group_by: bool = False,
) -> str:
    """Full repartition topic name for the operation ``name``.

    ``KStreamImpl.createRepartitionedSource`` (stream ``groupBy``/``groupByKey``, joins, ``repartition``) appends
    ``-repartition`` unless ``name`` already ends with it; ``KGroupedTableImpl`` (``ktable_group_by=True``) always
    appends it.
    """
    raw = name if name.endswith(REPARTITION_TOPIC_SUFFIX) and not ktable_group_by else name + REPARTITION_TOPIC_SUFFIX
    return decorate_topic(prefix, raw, named_topology)
