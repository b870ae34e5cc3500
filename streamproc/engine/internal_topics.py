"""Names of Kafka Streams' internal topics: store changelogs, repartition and FK-join topics (4.2.0).

The one definition of the naming rule, used by the topology analysis, the runtime graph builder, the state
manager's changelog partitions and the conformance runner. It lives in the engine because the engine needs it and
must not import ``state`` (DESIGN.md §2: ``engine`` ← ``state``).

Every internal topic is ``InternalTopologyBuilder.decorateTopic`` of a raw name: ``<prefix>-<raw>``, or
``<prefix>-<topology>-<raw>`` for a named topology. A changelog's raw name is ``<store>-changelog``
(``ProcessorStateManager.storeChangelogTopic``); a repartition topic's is the operation name plus ``-repartition``
(``KStreamImpl`` does not append the suffix twice, ``KGroupedTableImpl`` (``KTable#groupBy``) always appends it).
``<prefix>`` is ``application.id`` unless the internal ``__internal.override.topic.prefix__`` is set
(``ProcessorContextUtils.topicNamePrefix``). Generated operation names are topology.md's business (state.md §3.1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

#: ``ProcessorStateManager.STATE_CHANGELOG_TOPIC_SUFFIX``.
STATE_CHANGELOG_TOPIC_SUFFIX: Final = "-changelog"
#: ``KStreamImpl.REPARTITION_TOPIC_SUFFIX``.
REPARTITION_TOPIC_SUFFIX: Final = "-repartition"
#: ``StreamsConfig.InternalConfig.TOPIC_PREFIX_ALTERNATIVE``.
TOPIC_PREFIX_ALTERNATIVE: Final = "__internal.override.topic.prefix__"
#: ``StreamsResetter#matchesInternalTopicFormat``: FK-join subscription topics are internal like repartition topics.
_FK_TOPIC: Final = re.compile(
    r"(.*-subscription-registration-topic|.*-subscription-response-topic"
    r"|.*KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-\d+-topic|.*KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-\d+-topic)"
)


def topic_name_prefix(application_id: str, configs: Mapping[str, str] | None = None) -> str:
    """``ProcessorContextUtils.topicNamePrefix``: the override prefix if configured, else ``application.id``."""
    if configs is None:
        return application_id
    return configs.get(TOPIC_PREFIX_ALTERNATIVE, application_id)


def internal_topic_prefix(prefix: str, named_topology: str | None = None) -> str:
    """What ``decorateTopic`` puts before a raw name (without the dash): ``<prefix>`` or ``<prefix>-<topology>``."""
    return prefix if named_topology is None else f"{prefix}-{named_topology}"


def decorate_topic(prefix: str, topic: str, named_topology: str | None = None) -> str:
    """``InternalTopologyBuilder.decorateTopic``: the full name of an internal topic from its raw name."""
    return f"{internal_topic_prefix(prefix, named_topology)}-{topic}"


def store_changelog_topic(prefix: str, store_name: str, named_topology: str | None = None) -> str:
    """``ProcessorStateManager.storeChangelogTopic``: ``<prefix>-<store>-changelog`` (named topology inserted)."""
    return decorate_topic(prefix, f"{store_name}{STATE_CHANGELOG_TOPIC_SUFFIX}", named_topology)


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


def is_internal_topic_name(raw_topic: str) -> bool:
    """A raw (undecorated) name of the shape Kafka Streams gives repartition and FK-join topics (topology.md §6.6)."""
    return raw_topic.endswith(REPARTITION_TOPIC_SUFFIX) or _FK_TOPIC.fullmatch(raw_topic) is not None
