"""streamproc inside Airflow: hooks on the providers' connections, the backfill form's Params, the task bodies.

The DAGs in ``dags/`` run the same library code as ``streamproc run`` (plan, fetch, verify, process, hand-off);
this package only adds what Airflow brings: connections instead of command-line options (``kafka_default``,
``aws_default``, ``spark_default``), a typed form, the run ledger written from every step, and the approval gate.
Nothing here is imported by the library itself.
"""
