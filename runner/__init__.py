"""One month as one unit of work (ingest, compare, hints, lake, reports), shared by
`congruency run` and the Airflow DAG (dags/congruency_monthly.py)."""

#: The steps of a month, in order; a step may read what the ones before it wrote (here, not in
#: state.py, so `congruency run --help` names them without loading the steps).
STEPS = ("ingest", "compare", "sensitivity", "hints", "lake", "reports")
