"""Loads the streamproc plugin from ``$AIRFLOW_HOME/plugins`` (where the package's entry point is not used).

Copy or link this file into the plugins folder of an Airflow deployment that has streamproc installed but does not
load entry-point plugins. Use one of the two: Airflow loads the plugins folder first and reports the entry point's
second registration of the same name as a plugin import error.
"""

from streamproc.airflow.plugin import StreamprocPlugin

__all__ = ["StreamprocPlugin"]
