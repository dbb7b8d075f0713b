# One image for Lagwatch's web, worker and beat services, and for the Spark master and worker:
# pyspark ships Spark's own launch scripts and jars, so the cluster runs exactly the Spark
# version the jobs were built against.
FROM python:3.11.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=dashboard.settings.production \
    LAGWATCH_DATA_DIR=/data
WORKDIR /app
COPY requirements.txt .
# Installs pyspark's launch scripts too (spark-class, spark-submit) into /usr/local/bin: the
# compose file's spark-master and spark-worker run that spark-class.
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN DJANGO_SECRET_KEY=build-only-collectstatic python manage.py collectstatic --noinput

RUN useradd --system --create-home --uid 10001 lagwatch && mkdir -p /data && chown lagwatch /data
USER lagwatch
EXPOSE 8000
CMD ["gunicorn", "dashboard.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3"]
