"""Settings: environment-driven, SQLite in WAL by default, production passes check --deploy."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=full_env,
        capture_output=True, text=True, check=False, timeout=120,
    )


def test_production_settings_pass_check_deploy(tmp_path: Path) -> None:
    result = _manage(
        "check", "--deploy", "--fail-level", "WARNING",
        env={
            "DJANGO_SETTINGS_MODULE": "dashboard.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "DJANGO_ALLOWED_HOSTS": "lagwatch.example.com",
            "LAGWATCH_DATA_DIR": str(tmp_path),
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path: Path) -> None:
    result = _manage(
        "check",
        env={"DJANGO_SETTINGS_MODULE": "dashboard.settings.production",
             "LAGWATCH_DATA_DIR": str(tmp_path)},
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_a_malformed_setting_names_the_variable(tmp_path: Path) -> None:
    result = _manage(
        "check", env={"DJANGO_DEBUG": "maybe", "LAGWATCH_DATA_DIR": str(tmp_path)}
    )
    assert result.returncode != 0
    assert "DJANGO_DEBUG must be a boolean" in result.stderr


def test_default_database_is_sqlite_in_wal_mode_under_the_data_dir(tmp_path: Path) -> None:
    code = (
        "from django.db import connection; c = connection.cursor();"
        "c.execute('PRAGMA journal_mode'); jm = c.fetchone()[0];"
        "c.execute('PRAGMA busy_timeout'); bt = c.fetchone()[0];"
        "import json; print(json.dumps({'jm': jm, 'bt': bt, 'name': str(connection.settings_dict['NAME'])}))"
    )
    result = _manage("shell", "-c", code, env={"LAGWATCH_DATA_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout.strip().splitlines()[-1])
    assert info["jm"] == "wal"
    assert info["bt"] == 20000
    assert info["name"] == str(tmp_path / "lagwatch.sqlite3")


def test_database_url_selects_postgresql(tmp_path: Path) -> None:
    code = "from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    result = _manage(
        "shell", "-c", code,
        env={"DATABASE_URL": "postgres://u:p@db.example:5432/lw", "LAGWATCH_DATA_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("django.db.backends.postgresql")
