"""One month as one unit of work (ingest, compare, hints, warehouse, reports), shared by
`congruency run` and the Airflow DAG (dags/congruency_monthly.py)."""
