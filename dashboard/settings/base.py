"""Local settings: every value comes from the environment with a working local default.

A fresh checkout runs with SQLite under ``LAGWATCH_DATA_DIR`` and Redis on localhost; a
deployment sets ``DATABASE_URL`` (PostgreSQL), ``REDIS_URL`` and secrets, and uses
``dashboard.settings.production``.
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from collectors.sample_log.object_store import S3Options
from dashboard.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parents[2]
DATA_DIR = Path(env_str("LAGWATCH_DATA_DIR", str(BASE_DIR / "var" / "data"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

# Local default only; production.py refuses to start without DJANGO_SECRET_KEY.
SECRET_KEY = env_str(
    "DJANGO_SECRET_KEY", "local-dev-only-insecure-key-lagwatch-0b3f9c2e7a1d4e8f9a6b5c4d3e2f1a0b"
)
DEBUG = env_bool("DJANGO_DEBUG", True)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "dashboard.accounts",
    "dashboard.monitoring",
    "dashboard.ingest",
    "dashboard.store",
    "dashboard.status",
    "dashboard.whatif",
    "dashboard.alerts",
    "dashboard.reports",
    "dashboard.api",
    "dashboard.ui",
    # Failed logins counted per user and address, locked out past a limit (settings/people.py).
    "axes",
    "csp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Login on every page; the few open endpoints opt out with @login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # Who changes what, from where: the audit log's signals read the request (accounts/audit.py).
    "dashboard.accounts.audit.AuditMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Content-Security-Policy on every answer (settings/people.py).
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: answers a locked-out login with its page (429).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "ui:overview"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "dashboard" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # ``may``: what the user's role allows, so pages hide what it does not.
                "dashboard.accounts.access.permissions",
            ],
        },
    },
]

# SQLite is the embedded default: WAL lets the web server read while collectors write, and the
# busy timeout turns short write contention into a wait instead of "database is locked".
SQLITE_PATH = DATA_DIR / "lagwatch.sqlite3"
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{SQLITE_PATH}"), conn_max_age=60
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": env_int("LAGWATCH_SQLITE_BUSY_TIMEOUT_S", 20),
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(BASE_DIR / "var" / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Ingest payloads are bounded (SPEC §2.3): refuse oversized bodies before parsing them.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("LAGWATCH_MAX_REQUEST_BYTES", 1024 * 1024)

# The ingest endpoint (SPEC §2.3, docs/INGEST.md) takes pushes from clients with this bearer
# token. Without one it is off (503) rather than open: anyone could write figures otherwise.
LAGWATCH_INGEST_TOKEN = env_str("LAGWATCH_INGEST_TOKEN", "")
# librdkafka documents grow with the partitions a client knows; refused (413) before reading.
LAGWATCH_INGEST_MAX_BYTES = env_int("LAGWATCH_INGEST_MAX_BYTES", 1024 * 1024)
# PRODUCER_EXPIRY (docs/INGEST.md): a topic whose producers' expired count grew this recently.
LAGWATCH_PRODUCER_EXPIRY_WINDOW_S = env_int("LAGWATCH_PRODUCER_EXPIRY_WINDOW_S", 900)

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
# kombu's Redis transport with a channel Celery 5.7 can close after a lost connection without
# the worker dying (dashboard/celery_transport.py).
CELERY_BROKER_TRANSPORT = "dashboard.celery_transport:Transport"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Collection cycles run on their own queue, consumed by one collector process with a thread
# pool: the adapters' connections and the offset history stay warm in that one process.
# Spark jobs run on their own queue "spark" (the worker consumes it beside "celery"), so a
# long run never delays the small housekeeping tasks queued behind it.
CELERY_TASK_ROUTES = {
    "dashboard.store.tasks.collect_cluster": {"queue": "collectors"},
    "dashboard.status.tasks.spark_status": {"queue": "spark"},
    "dashboard.status.tasks.spark_rollups": {"queue": "spark"},
}
# Spark jobs (SPEC §6, docs/SPARK_JOBS.md): a status run after every stored cycle (each a few
# seconds, from the previous run's state: LAGWATCH_STATUS_INCREMENTAL), and beat's every minute
# besides, which keeps the verdicts current when nothing is collected (a gap in collection is a
# verdict too); rollups every 10 minutes. A run queued longer than its interval is dropped
# (``expires``): the next one is as good.
LAGWATCH_STATUS_AFTER_CYCLE = env_bool("LAGWATCH_STATUS_AFTER_CYCLE", True)
LAGWATCH_STATUS_EVERY_S = env_int("LAGWATCH_STATUS_EVERY_S", 60)
LAGWATCH_ROLLUPS_EVERY_S = env_int("LAGWATCH_ROLLUPS_EVERY_S", 600)
LAGWATCH_SAMPLE_LOG_COMPACT_S = env_int("LAGWATCH_SAMPLE_LOG_COMPACT_S", 60)
# Every couple of seconds beat asks which clusters' poll slots have started and sends their
# cycles, in its own process (dashboard/store/beat.py: no worker thread to wait for); each
# cluster's own poll_interval_s (in the database) decides how often it is collected.
CELERY_BEAT_SCHEDULER = "dashboard.store.beat:DispatchingScheduler"
LAGWATCH_DISPATCH_S = env_int("LAGWATCH_DISPATCH_S", 2)
CELERY_BEAT_SCHEDULE = {
    "heartbeat": {
        "task": "dashboard.store.tasks.heartbeat",
        "schedule": env_int("LAGWATCH_HEARTBEAT_S", 10),
    },
    "maintain-storage": {
        "task": "dashboard.store.tasks.maintain_storage",
        "schedule": float(env_int("LAGWATCH_MAINTENANCE_S", 600)),
    },
    # The open hour of the sample log in chunks (collectors/sample_log/store.py), so the jobs
    # read a few tens of files rather than one per cycle. 0 turns it off.
    "compact-sample-log": {
        "task": "dashboard.store.tasks.compact_sample_log",
        "schedule": float(LAGWATCH_SAMPLE_LOG_COMPACT_S),
        "options": {"expires": LAGWATCH_SAMPLE_LOG_COMPACT_S},
    },
    "spark-status": {
        "task": "dashboard.status.tasks.spark_status",
        "schedule": float(LAGWATCH_STATUS_EVERY_S),
        "options": {"expires": LAGWATCH_STATUS_EVERY_S},
    },
    "spark-rollups": {
        "task": "dashboard.status.tasks.spark_rollups",
        "schedule": float(LAGWATCH_ROLLUPS_EVERY_S),
        "options": {"expires": LAGWATCH_ROLLUPS_EVERY_S},
    },
}
if LAGWATCH_SAMPLE_LOG_COMPACT_S <= 0:
    del CELERY_BEAT_SCHEDULE["compact-sample-log"]

SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
LAGWATCH_SAMPLE_LOG_URL = env_str("LAGWATCH_SAMPLE_LOG_URL", str(DATA_DIR / "samples"))
# An s3a:// sample log's store: LAGWATCH_S3_ENDPOINT, _REGION, _PATH_STYLE, _CONNECT_TIMEOUT_S,
# _REQUEST_TIMEOUT_S, _RETRIES (collectors/sample_log/object_store.py); the credentials are
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, read from the environment where they are used.
try:
    LAGWATCH_S3 = S3Options.from_environ(
        {
            "LAGWATCH_S3_ENDPOINT": env_str("LAGWATCH_S3_ENDPOINT", ""),
            "LAGWATCH_S3_REGION": env_str("LAGWATCH_S3_REGION", ""),
            "LAGWATCH_S3_PATH_STYLE": env_str("LAGWATCH_S3_PATH_STYLE", ""),
            "LAGWATCH_S3_CONNECT_TIMEOUT_S": env_str("LAGWATCH_S3_CONNECT_TIMEOUT_S", ""),
            "LAGWATCH_S3_REQUEST_TIMEOUT_S": env_str("LAGWATCH_S3_REQUEST_TIMEOUT_S", ""),
            "LAGWATCH_S3_RETRIES": env_str("LAGWATCH_S3_RETRIES", ""),
        }
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
# Where a collector keeps the batches an object store did not take, until it answers again.
LAGWATCH_SAMPLE_LOG_SPOOL_DIR = env_str(
    "LAGWATCH_SAMPLE_LOG_SPOOL_DIR", str(DATA_DIR / "sample-log-spool")
)
# Jars the Spark jobs need beyond pyspark's (spark.jars): hadoop-aws and the AWS SDK for an
# s3a:// log, a folder or comma-separated paths (deploy/spark/pom.xml fetches them).
LAGWATCH_SPARK_JARS = env_str("LAGWATCH_SPARK_JARS", "")
# Where the Spark jobs write their runs (spark_jobs/jobs.py), and how many runs of a job stay.
LAGWATCH_RESULTS_URL = env_str("LAGWATCH_RESULTS_URL", str(DATA_DIR / "results"))
LAGWATCH_SPARK_KEEP_RUNS = env_int("LAGWATCH_SPARK_KEEP_RUNS", 5)
# The status job reads this much of the log: enough to hold a stuck partition's last commit.
LAGWATCH_STATUS_LOOKBACK_S = env_int("LAGWATCH_STATUS_LOOKBACK_S", 3600)
# ...of which a group is judged from the last LAGWATCH_STATUS_SLICE_S where nothing older could
# change its verdicts, and from the whole look-back otherwise (0: always the whole look-back;
# spark_jobs/status.py: evaluate_recent). The same verdicts, less to move for most groups.
LAGWATCH_STATUS_SLICE_S = env_int("LAGWATCH_STATUS_SLICE_S", 600)
# ...once the look-back holds this many samples (by the previous run): below it, reading the
# whole look-back costs less than the slice's two passes (benchmarks/RESULTS.md).
LAGWATCH_STATUS_SLICE_FROM_ROWS = env_int("LAGWATCH_STATUS_SLICE_FROM_ROWS", 500_000)
# Each run goes on from the previous run's state and reads the log only from its cut
# (spark_jobs/state.py; the slice above is then not used); 0: every run reads the look-back.
LAGWATCH_STATUS_INCREMENTAL = env_bool("LAGWATCH_STATUS_INCREMENTAL", True)
# ...reading again the samples of the last LAGWATCH_STATUS_SETTLE_S, which may still be landing:
# a cycle's samples carry its slot's start and are written once its sources answered.
LAGWATCH_STATUS_SETTLE_S = env_int("LAGWATCH_STATUS_SETTLE_S", 60)
LAGWATCH_ROLLUPS_WINDOW_S = env_int("LAGWATCH_ROLLUPS_WINDOW_S", 7200)
# One run of a job at a time: the lock expires after this, should a worker die holding it.
LAGWATCH_SPARK_LOCK_TTL_S = env_int("LAGWATCH_SPARK_LOCK_TTL_S", 1800)
LAGWATCH_SPARK_RUNS_KEEP_DAYS = env_int("LAGWATCH_SPARK_RUNS_KEEP_DAYS", 7)
# The evaluator's thresholds (SPEC §4; defaults are Burrow's but for minimum_complete).
# minimum_complete is a percent here, since settings come from integer environment variables.
# The status job judges a partition once half a window's worth of polls has seen it: with fewer
# (a new partition, a new stack) Burrow's rules read noise (one commit spans 0 s, so "no commit
# for longer than the span" is true at once: STALL), docs/EVALUATOR.md. ``manage.py
# evaluate_window`` keeps Burrow's 0 unless its input says otherwise.
LAGWATCH_EVALUATOR = {
    "window": env_int("LAGWATCH_STATUS_WINDOW_COMMITS", 10),
    "allowed_lag": env_int("LAGWATCH_STATUS_ALLOWED_LAG", 0),
    "min_distance_s": env_int("LAGWATCH_STATUS_MIN_DISTANCE_S", 0),
    "minimum_complete": env_int("LAGWATCH_STATUS_MINIMUM_COMPLETE_PCT", 50) / 100,
}
# Collection (SPEC §2, §5): a source's answer deadline per cycle (never beyond the cluster's
# poll interval), the raw history kept in the database, the sample log's retention.
LAGWATCH_SOURCE_TIMEOUT_S = env_int("LAGWATCH_SOURCE_TIMEOUT_S", 10)
# How often the Kafka source re-reads a consumed topic's retention settings (DescribeConfigs,
# the retention forecast): they rarely change, and most cycles then ask nothing.
LAGWATCH_TOPIC_CONFIG_REFRESH_S = env_int("LAGWATCH_TOPIC_CONFIG_REFRESH_S", 300)
if LAGWATCH_TOPIC_CONFIG_REFRESH_S < 1:
    raise ImproperlyConfigured("LAGWATCH_TOPIC_CONFIG_REFRESH_S must be at least 1")
LAGWATCH_RAW_HISTORY_HOURS = env_int("LAGWATCH_RAW_HISTORY_HOURS", 6)
LAGWATCH_SAMPLE_RETENTION_DAYS = env_int("LAGWATCH_SAMPLE_RETENTION_DAYS", 30)
# Rollup history in the database (long-range charts): minute buckets, hour buckets.
LAGWATCH_ROLLUP_MINUTES_DAYS = env_int("LAGWATCH_ROLLUP_MINUTES_DAYS", 2)
LAGWATCH_ROLLUP_HOURS_DAYS = env_int("LAGWATCH_ROLLUP_HOURS_DAYS", 30)

# Error reports (the DEBUG page, mails to ADMINS) hide settings, local variables and POST
# fields whose names look secret, and secret librdkafka keys inside them (dashboard/logging.py).
DEFAULT_EXCEPTION_REPORTER_FILTER = "dashboard.logging.SecretsExceptionReporterFilter"
DEFAULT_EXCEPTION_REPORTER = "dashboard.logging.SecretsExceptionReporter"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "dashboard.logging.JsonFormatter"}},
    "filters": {
        "secrets": {"()": "dashboard.logging.RedactSecretsFilter"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
    },
    "handlers": {
        "console": {
            "class": "dashboard.logging.StderrHandler",
            "formatter": "json",
            "filters": ["secrets"],
        },
        "mail_admins": {
            "class": "django.utils.log.AdminEmailHandler",
            "level": "ERROR",
            "filters": ["require_debug_false"],
        },
    },
    "root": {"handlers": ["console"], "level": env_str("LAGWATCH_LOG_LEVEL", "INFO")},
    "loggers": {
        "kazoo": {"level": "WARNING"},
        # Django's own "django" logger has a plain console handler in DEBUG: it prints a 500's
        # traceback unredacted (an exception's message may quote a webhook URL) to the stderr
        # of the moment logging was configured. Its records go to the root's redacting
        # handler instead; mails to ADMINS stay (their report is SecretsExceptionReporter).
        "django": {"handlers": ["mail_admins"], "level": "INFO", "propagate": True},
    },
}

# -- Lag reports (SPEC §9, docs/REPORTS.md) ------------------------------------------------
# Report files built by the Celery task live here and are deleted after KEEP_DAYS (the list
# keeps the row, marked expired); the prune task runs every PRUNE_S seconds.
LAGWATCH_REPORTS_DIR = env_str("LAGWATCH_REPORTS_DIR", str(DATA_DIR / "reports"))
LAGWATCH_REPORTS_KEEP_DAYS = env_int("LAGWATCH_REPORTS_KEEP_DAYS", 7)
LAGWATCH_REPORTS_PRUNE_S = env_int("LAGWATCH_REPORTS_PRUNE_S", 3600)
CELERY_BEAT_SCHEDULE["prune-reports"] = {
    "task": "dashboard.reports.tasks.prune_reports",
    "schedule": float(LAGWATCH_REPORTS_PRUNE_S),
}
# Scheduled reports (docs/REPORTS.md, "Scheduled reports"): beat looks for due schedules every
# CHECK_S; a report up to MAIL_MAX_BYTES is attached, a larger one linked; a mail refused for now
# is tried MAIL_ATTEMPTS times, RETRY_S, 2x, 4x... apart.
LAGWATCH_REPORT_SCHEDULES_CHECK_S = env_int("LAGWATCH_REPORT_SCHEDULES_CHECK_S", 60)
LAGWATCH_REPORT_MAIL_MAX_BYTES = env_int("LAGWATCH_REPORT_MAIL_MAX_BYTES", 10 * 1024 * 1024)
LAGWATCH_REPORT_MAIL_ATTEMPTS = env_int("LAGWATCH_REPORT_MAIL_ATTEMPTS", 3)
LAGWATCH_REPORT_MAIL_RETRY_S = env_int("LAGWATCH_REPORT_MAIL_RETRY_S", 60)
CELERY_BEAT_SCHEDULE["run-report-schedules"] = {
    "task": "dashboard.reports.tasks.run_report_schedules",
    "schedule": float(LAGWATCH_REPORT_SCHEDULES_CHECK_S),
    "options": {"expires": LAGWATCH_REPORT_SCHEDULES_CHECK_S},
}

# --- Dashboard pages (dashboard/ui, docs/DASHBOARD.md) -----------------------------------------
# Plotly's JavaScript is served from the installed plotly package (no CDN, no vendored copy):
# dashboard.ui.staticfinders maps lagwatch/vendor/plotly.min.js to the package's own file.
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "dashboard.ui.staticfinders.PlotlyFinder",
]
STATICFILES_DIRS = [BASE_DIR / "dashboard" / "static"]
# How often the pages ask for fresh figures (seconds); charts every few of these.
LAGWATCH_UI_REFRESH_S = env_int("LAGWATCH_UI_REFRESH_S", 10)

# --- Alerts (SPEC §7, docs/ALERTS.md) ----------------------------------------------------------
# Email goes through Django's email backend; the SMTP server comes from the environment (an
# email channel may name its own host/port). Deliveries are Celery tasks on the default queue
# "celery", retried RETRY_BASE_S, 2x, 4x... (at most RETRY_MAX_S apart) up to MAX_ATTEMPTS.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
LAGWATCH_ALERTS_EMAIL_FROM = env_str("LAGWATCH_ALERTS_EMAIL_FROM", "lagwatch@localhost")
LAGWATCH_REPORTS_EMAIL_FROM = env_str("LAGWATCH_REPORTS_EMAIL_FROM", LAGWATCH_ALERTS_EMAIL_FROM)
# Links in notices: the dashboard's public address (empty: paths only).
LAGWATCH_BASE_URL = env_str("LAGWATCH_BASE_URL", "")
LAGWATCH_ALERTS_HTTP_TIMEOUT_S = env_int("LAGWATCH_ALERTS_HTTP_TIMEOUT_S", 10)
LAGWATCH_ALERTS_MAX_ATTEMPTS = env_int("LAGWATCH_ALERTS_MAX_ATTEMPTS", 6)
LAGWATCH_ALERTS_RETRY_BASE_S = env_int("LAGWATCH_ALERTS_RETRY_BASE_S", 10)
LAGWATCH_ALERTS_RETRY_MAX_S = env_int("LAGWATCH_ALERTS_RETRY_MAX_S", 600)
CELERY_TASK_ROUTES["dashboard.alerts.tasks.deliver"] = {"queue": "celery"}
# Retries are due times in the database, not countdown messages (dashboard/alerts/due.py):
# beat sends the due deliveries this often, and those Redis lost once it is back.
LAGWATCH_ALERTS_SWEEP_S = env_int("LAGWATCH_ALERTS_SWEEP_S", 5)
CELERY_BEAT_SCHEDULE["send-due-deliveries"] = {
    "task": "dashboard.alerts.tasks.send_due_deliveries",
    "schedule": float(LAGWATCH_ALERTS_SWEEP_S),
    "options": {"expires": LAGWATCH_ALERTS_SWEEP_S},
}
CELERY_TASK_ROUTES["dashboard.alerts.tasks.send_due_deliveries"] = {"queue": "celery"}
# Alertmanager expects its clients to re-send firing alerts (every 30 s to 3 min): beat re-posts
# every open alert to each Alertmanager channel this often; an alert not re-sent ends in
# Alertmanager after 4 intervals (docs/ALERTS.md, "Prometheus Alertmanager").
LAGWATCH_ALERTMANAGER_RESEND_S = env_int("LAGWATCH_ALERTMANAGER_RESEND_S", 60)
CELERY_BEAT_SCHEDULE["resend-to-alertmanager"] = {
    "task": "dashboard.alerts.tasks.resend_to_alertmanager",
    "schedule": float(LAGWATCH_ALERTMANAGER_RESEND_S),
    "options": {"expires": LAGWATCH_ALERTMANAGER_RESEND_S},
}
CELERY_TASK_ROUTES["dashboard.alerts.tasks.resend_to_alertmanager"] = {"queue": "celery"}

# --- API, Burrow-compatible /v3 and /metrics (SPEC §9, docs/API.md) ----------------------------
# /metrics and /v3 are open by default, like Burrow's API and Prometheus exporters. "token":
# an API token (Authorization: Bearer, any scope); "basic": HTTP basic auth with the user and
# password below (an API token works too). The API under /api/v1/ always needs a token or login.
LAGWATCH_OPEN_ENDPOINTS_AUTH = env_str("LAGWATCH_OPEN_ENDPOINTS_AUTH", "none").strip().lower()
LAGWATCH_OPEN_ENDPOINTS_USER = env_str("LAGWATCH_OPEN_ENDPOINTS_USER", "")
LAGWATCH_OPEN_ENDPOINTS_PASSWORD = env_str("LAGWATCH_OPEN_ENDPOINTS_PASSWORD", "")
if LAGWATCH_OPEN_ENDPOINTS_AUTH not in ("none", "token", "basic"):
    raise ImproperlyConfigured(
        "LAGWATCH_OPEN_ENDPOINTS_AUTH must be none, token or basic, "
        f"got {LAGWATCH_OPEN_ENDPOINTS_AUTH!r}"
    )
if LAGWATCH_OPEN_ENDPOINTS_AUTH == "basic" and not (
    LAGWATCH_OPEN_ENDPOINTS_USER and LAGWATCH_OPEN_ENDPOINTS_PASSWORD
):
    raise ImproperlyConfigured(
        "LAGWATCH_OPEN_ENDPOINTS_AUTH=basic needs LAGWATCH_OPEN_ENDPOINTS_USER and "
        "LAGWATCH_OPEN_ENDPOINTS_PASSWORD"
    )
# /metrics serves its per-group and per-partition series from an exposition built once after
# each stored cycle or Spark run (a debounced Celery task, dashboard/api/metrics/exposition.py) in
# METRICS_DIR; a scrape finding none younger than MAX_AGE_S builds it itself, as when off.
LAGWATCH_METRICS_PREBUILT = env_bool("LAGWATCH_METRICS_PREBUILT", True)
LAGWATCH_METRICS_DIR = env_str("LAGWATCH_METRICS_DIR", str(DATA_DIR / "metrics"))
LAGWATCH_METRICS_MAX_AGE_S = env_int("LAGWATCH_METRICS_MAX_AGE_S", 60)
CELERY_TASK_ROUTES["dashboard.api.metrics.tasks.build_metrics_exposition"] = {"queue": "celery"}

# Single sign-on, login limits, the audit log's client address, the Content-Security-Policy.
from dashboard.settings.people import *  # noqa: E402, F403
