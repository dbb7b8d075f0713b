"""The status run: a Spark job's result run loaded into the database, its status changes
kept, and the apps downstream told.

Its one interface is :func:`dashboard.status.runs.run_job` (the Celery tasks in ``tasks.py``
and ``manage.py spark_job`` call it): it runs ``spark_jobs``' entry points and hands the
result run to ``results.apply_status_results`` or ``rollups.apply_rollup_results``. Every
status and diagnosis it writes was decided by ``spark_jobs/evaluator/``; this stage only
carries them.
"""
