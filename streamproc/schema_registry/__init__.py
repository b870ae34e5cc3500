"""Serdes for records written through a Schema Registry in Confluent's wire format: Avro (generic and specific),
Protobuf and JSON Schema, configured with the names Confluent's Java serdes take.

Usable wherever a serde goes (``Consumed``, ``Produced``, ``Materialized``, ``Grouped``, ``Joined``, the Processor
API's sources, sinks and stores, a default serde). As in Java, a serde given to an operation is configured by the
program (``serde.configure(configs, is_key)``, or ``configs`` to the constructor); a default serde
(``default.value.serde``) is configured by ``StreamsBuilder.build(props)`` with the application's settings. Needs
``pip install 'streamproc[schema-registry]'``; each format's library is imported when a serde of it first runs.
"""

from streamproc.schema_registry.avro import GenericAvroSerde, GenericRecord, SpecificAvroSerde, specific_record
from streamproc.schema_registry.client import check_reachable, check_registries
from streamproc.schema_registry.config import SchemaRegistryConfig
from streamproc.schema_registry.json_schema import KafkaJsonSchemaSerde
from streamproc.schema_registry.protobuf import KafkaProtobufSerde
from streamproc.schema_registry.serde import SchemaRegistrySerde

__all__ = [
    "GenericAvroSerde",
    "GenericRecord",
    "KafkaJsonSchemaSerde",
    "KafkaProtobufSerde",
    "SchemaRegistryConfig",
    "SchemaRegistrySerde",
    "SpecificAvroSerde",
    "check_reachable",
    "check_registries",
    "specific_record",
]
