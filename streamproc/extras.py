"""Which extra installs an optional integration, and the one-line error when it is missing.

The base install (pyarrow, rocksdict, confluent-kafka, click, SQLAlchemy/Alembic) runs the engine, ``plan``,
``fetch`` to a local store, ``verify``, ``handoff``, ``ledger`` on SQLite and a replay through
``streamproc.testing.TopologyTestDriver``. Spark, S3, PostgreSQL, pandera, Airflow and the Schema Registry serdes
are extras (pyproject.toml), imported lazily where they are used; a command that needs one checks for it first with
:func:`require`, so that the user reads which extra to install instead of a ``ModuleNotFoundError`` traceback (or a
run stopped halfway).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from streamproc.errors import MissingExtra


@dataclass(frozen=True)
class Extra:
    """One ``streamproc[<name>]`` extra: what it provides (for the message) and the top-level modules it installs."""

    name: str
    provides: str
    modules: tuple[str, ...]

    def missing(self) -> list[str]:
        """The extra's modules that are not installed (found without importing them)."""
        return [module for module in self.modules if importlib.util.find_spec(module) is None]


SPARK = Extra("spark", "Spark", ("pyspark", "rich", "pandera", "polars"))
VALIDATION = Extra("validation", "pandera", ("pandera", "polars"))
S3 = Extra("s3", "boto3", ("boto3",))
POSTGRES = Extra("postgres", "psycopg", ("psycopg",))
AIRFLOW = Extra("airflow", "Airflow", ("airflow",))
SCHEMA_REGISTRY = Extra("schema-registry", "confluent-kafka's Schema Registry serdes", ("fastavro", "authlib"))


def require(extra: Extra, what: str) -> None:
    """Raise :class:`MissingExtra` (``<what> needs Spark: pip install 'streamproc[spark]'``) when any of the
    extra's modules is not installed."""
    missing = extra.missing()
    if missing:
        install = f"pip install 'streamproc[{extra.name}]'"
        raise MissingExtra(f"{what} needs {extra.provides} ({', '.join(missing)} not installed): {install}")
