"""One month as one unit of work (ingest, compare, hints, lake, reports), shared by
`congruency run` and the Airflow DAG (dags/congruency_monthly.py)."""
