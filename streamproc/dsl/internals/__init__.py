"""The DSL's processors, one module per Kafka Streams class they mirror (``kstream.internals.*``)."""
