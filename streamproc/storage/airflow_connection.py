"""S3 settings from an Airflow AWS connection, for stores created inside Airflow tasks.

Airflow users keep endpoints and credentials in connections, not in environment variables. The Amazon provider's
``AwsBaseHook`` already resolves a connection (login/password, role assumption, profiles, ``extra``) into a boto3
session; this module only turns that session into :class:`~streamproc.storage.object_store.S3ObjectStore`
options, so that streamproc never re-implements the provider's credential rules.
"""

from __future__ import annotations

from typing import Any

from streamproc.errors import ConfigError


def s3_options_from_connection(conn_id: str) -> dict[str, Any]:
    """``load_store("s3://…", **s3_options_from_connection("aws_default"))``: endpoint, credentials and region."""
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError as exc:
        raise ConfigError(
            "an Airflow connection needs apache-airflow-providers-amazon; install it or pass S3 settings directly"
        ) from exc
    try:
        from airflow.sdk.bases.hook import BaseHook

        BaseHook.get_connection(conn_id)  # the AWS hook would fall back to ambient credentials for a missing one
        hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
        session = hook.get_session()
        credentials = session.get_credentials()
        endpoint_url = hook.conn_config.endpoint_url
        region = hook.conn_region_name or session.region_name
    except Exception as exc:  # the provider raises its own and Airflow's errors for a missing or bad connection
        raise ConfigError(f"Airflow connection '{conn_id}' cannot be used for S3: {exc}") from exc
    options: dict[str, Any] = {"endpoint_url": endpoint_url, "region": region}
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        options.update(access_key_id=frozen.access_key, secret_access_key=frozen.secret_key, session_token=frozen.token)
    return {key: value for key, value in options.items() if value is not None}
