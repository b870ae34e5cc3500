"""Kafka Streams applications written elsewhere, ported to streamproc (docs/porting.md's worked examples)."""
