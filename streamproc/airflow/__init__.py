"""streamproc in Airflow 3: the DAGs' helpers, hooks and operators, and the monitoring plugin."""
