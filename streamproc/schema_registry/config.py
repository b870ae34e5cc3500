"""A Schema Registry serde's settings, by the names of Confluent's Java serdes (``AbstractKafkaSchemaSerDeConfig``).

A ported application keeps its configuration: the ``Map`` its Java code passed to ``serde.configure(map, isKey)``,
or the streams properties a default serde is configured with, are the same keys here. What streamproc reads:

- ``schema.registry.url``: one URL or a comma-separated list;
- ``basic.auth.credentials.source`` (``URL``, the default: user info in the URL; or ``USER_INFO``) with
  ``basic.auth.user.info`` (``user:password``; also under ``schema.registry.basic.auth.user.info``);
- ``auto.register.schemas`` (default true), ``use.latest.version`` (default false; auto-registering wins when both
  are set, as in Java), ``normalize.schemas`` (default false);
- ``key.subject.name.strategy`` / ``value.subject.name.strategy``: ``TopicNameStrategy`` (default),
  ``RecordNameStrategy`` or ``TopicRecordNameStrategy``, as Confluent's class names or their simple names;
- ``schema.registry.ssl.truststore.location`` is Java's; here ``schema.registry.ssl.ca.location`` (a PEM file).

Credentials never leave this value in text: ``repr`` hides them and :meth:`location` names the registry without
them, for every message and log line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from streamproc.errors import ConfigError

SCHEMA_REGISTRY_URL_CONFIG = "schema.registry.url"
BASIC_AUTH_CREDENTIALS_SOURCE = "basic.auth.credentials.source"
USER_INFO_CONFIG = "basic.auth.user.info"
PREFIXED_USER_INFO_CONFIG = "schema.registry.basic.auth.user.info"
AUTO_REGISTER_SCHEMAS = "auto.register.schemas"
USE_LATEST_VERSION = "use.latest.version"
NORMALIZE_SCHEMAS = "normalize.schemas"
KEY_SUBJECT_NAME_STRATEGY = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY = "value.subject.name.strategy"
SSL_CA_LOCATION = "schema.registry.ssl.ca.location"

_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
TOPIC_NAME_STRATEGY = "TopicNameStrategy"
RECORD_NAME_STRATEGY = "RecordNameStrategy"
TOPIC_RECORD_NAME_STRATEGY = "TopicRecordNameStrategy"
STRATEGIES = (TOPIC_NAME_STRATEGY, RECORD_NAME_STRATEGY, TOPIC_RECORD_NAME_STRATEGY)

#: Seconds a registry call may wait, and the attempts after the first: a registry that does not answer is one error
#: in bounded time (about 40 s at worst, at once for a refused connection), not a hang.
REQUEST_TIMEOUT_S = 10
MAX_RETRIES = 2


def _flag(configs: Mapping[str, Any], key: str, default: bool) -> bool:
    value = configs.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"{key} must be true or false, not '{value}'")


def _strategy(configs: Mapping[str, Any], key: str) -> str:
    value = str(configs.get(key, TOPIC_NAME_STRATEGY)).strip()
    name = value.removeprefix(_STRATEGY_PACKAGE)
    if name not in STRATEGIES:
        raise ConfigError(f"{key}={value}: streamproc knows {', '.join(_STRATEGY_PACKAGE + s for s in STRATEGIES)}")
    return name


def without_credentials(url: str) -> str:
    """``http://user:secret@host:8081/x`` → ``http://host:8081/x``: a URL as messages may show it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True, slots=True, repr=False)
class SchemaRegistryConfig:
    """One serde's registry settings (see the module doc); ``from_configs`` reads them from a Java-style map."""

    urls: tuple[str, ...]
    user_info: str | None = None
    auto_register: bool = True
    use_latest_version: bool = False
    normalize: bool = False
    key_subject_strategy: str = TOPIC_NAME_STRATEGY
    value_subject_strategy: str = TOPIC_NAME_STRATEGY
    ca_location: str | None = None

    @classmethod
    def from_configs(cls, configs: Mapping[str, Any]) -> SchemaRegistryConfig:
        url = str(configs.get(SCHEMA_REGISTRY_URL_CONFIG) or "").strip()
        urls = tuple(u.strip() for u in url.split(",") if u.strip())
        if not urls:
            raise ConfigError(
                f"a Schema Registry serde needs {SCHEMA_REGISTRY_URL_CONFIG} in its configs (the map given to "
                "configure(configs, is_key), or the streams settings a default serde is configured with)"
            )
        for one in urls:
            if urlsplit(one).scheme not in ("http", "https"):
                raise ConfigError(f"{SCHEMA_REGISTRY_URL_CONFIG}: '{without_credentials(one)}' is not an http(s) URL")
        source = str(configs.get(BASIC_AUTH_CREDENTIALS_SOURCE, "URL")).strip().upper()
        if source not in ("URL", "USER_INFO"):
            raise ConfigError(f"{BASIC_AUTH_CREDENTIALS_SOURCE}={source}: streamproc supports URL and USER_INFO")
        user_info = None
        if source == "USER_INFO":
            user_info = configs.get(USER_INFO_CONFIG) or configs.get(PREFIXED_USER_INFO_CONFIG)
            if not user_info or ":" not in str(user_info):
                raise ConfigError(
                    f"{BASIC_AUTH_CREDENTIALS_SOURCE}=USER_INFO needs {USER_INFO_CONFIG} as user:password"
                )
            user_info = str(user_info)
        return cls(
            urls=urls,
            user_info=user_info,
            auto_register=_flag(configs, AUTO_REGISTER_SCHEMAS, True),
            use_latest_version=_flag(configs, USE_LATEST_VERSION, False),
            normalize=_flag(configs, NORMALIZE_SCHEMAS, False),
            key_subject_strategy=_strategy(configs, KEY_SUBJECT_NAME_STRATEGY),
            value_subject_strategy=_strategy(configs, VALUE_SUBJECT_NAME_STRATEGY),
            ca_location=configs.get(SSL_CA_LOCATION),
        )

    def __repr__(self) -> str:
        return f"SchemaRegistryConfig({self.location}{', basic auth' if self.user_info else ''})"

    @property
    def location(self) -> str:
        """The registry as messages name it: its URLs without credentials."""
        return ",".join(without_credentials(u) for u in self.urls)

    def client_config(self) -> dict[str, Any]:
        """``SchemaRegistryClient``'s configuration (confluent-kafka's names)."""
        config: dict[str, Any] = {
            "url": ",".join(self.urls),
            "timeout": REQUEST_TIMEOUT_S,
            "max.retries": MAX_RETRIES,
        }
        if self.user_info is not None:
            config["basic.auth.user.info"] = self.user_info
        if self.ca_location is not None:
            config["ssl.ca.location"] = self.ca_location
        return config

    def client_key(self) -> tuple[Any, ...]:
        """What makes two serdes share one client (and its caches) in a process."""
        return (self.urls, self.user_info, self.ca_location)

    def serializer_config(self, is_key: bool) -> dict[str, Any]:
        """The serializer's configuration (confluent-kafka's names): Java's precedence, auto-register before
        use-latest-version, and the subject strategy explicitly (confluent-kafka 2.16 would ask the registry)."""
        return {
            "auto.register.schemas": self.auto_register,
            "use.latest.version": self.use_latest_version and not self.auto_register,
            "normalize.schemas": self.normalize,
            "subject.name.strategy": subject_name_strategy(self.subject_strategy(is_key)),
        }

    def subject_strategy(self, is_key: bool) -> str:
        return self.key_subject_strategy if is_key else self.value_subject_strategy


def subject_name_strategy(name: str) -> Callable[[Any, str | None], str | None]:
    """confluent-kafka's function for one of Confluent's strategy names."""
    from confluent_kafka import schema_registry

    strategies: dict[str, Callable[[Any, str | None], str | None]] = {
        TOPIC_NAME_STRATEGY: schema_registry.topic_subject_name_strategy,
        RECORD_NAME_STRATEGY: schema_registry.record_subject_name_strategy,
        TOPIC_RECORD_NAME_STRATEGY: schema_registry.topic_record_subject_name_strategy,
    }
    return strategies[name]
