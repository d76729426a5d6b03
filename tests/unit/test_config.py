"""Settings: environment parsing, defaults, and the Celery timing invariant."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reposync.config import Settings, read_env_file, url_has_password
from reposync.errors import ConfigurationError


def test_environment_values_are_parsed_and_typed():
    """REPOSYNC_* variables become typed fields."""
    settings = Settings.from_env(
        {
            "REPOSYNC_DATA_DIR": "/srv/rs",
            "REPOSYNC_LEASE_TTL": "12.5",
            "REPOSYNC_BATCH_MAX_ITEMS": "7",
        }
    )
    assert settings.data_dir == Path("/srv/rs")
    assert settings.lease_ttl == 12.5
    assert settings.batch_max_items == 7
    assert settings.effective_database_url == "sqlite:////srv/rs/reposync.db"


def test_overrides_beat_the_environment():
    """Command-line values win over the environment."""
    settings = Settings.from_env({"REPOSYNC_DATA_DIR": "/a"}, data_dir="/b")
    assert settings.data_dir == Path("/b")


def test_invalid_number_names_the_variable():
    """A malformed value is a configuration error naming the variable."""
    with pytest.raises(ConfigurationError, match="REPOSYNC_LEASE_TTL='soon'"):
        Settings.from_env({"REPOSYNC_LEASE_TTL": "soon"})


def test_time_limits_must_stay_below_the_visibility_timeout():
    """soft < hard < visibility timeout, or the broker redelivers running tasks."""
    with pytest.raises(ConfigurationError, match="VISIBILITY_TIMEOUT"):
        Settings(task_soft_time_limit=10, task_time_limit=20, visibility_timeout=15)


def test_the_lfs_size_cap_defaults_to_2_gib_and_is_read_from_the_environment():
    """REPOSYNC_LFS_MAX_OBJECT_SIZE: 2 GiB unless set; a negative cap is refused."""
    assert Settings().lfs_max_object_size == 2 * 1024**3
    assert Settings.from_env({"REPOSYNC_LFS_MAX_OBJECT_SIZE": "1000"}).lfs_max_object_size == 1000
    with pytest.raises(ConfigurationError):
        Settings.from_env({"REPOSYNC_LFS_MAX_OBJECT_SIZE": "-1"})


def test_the_asset_size_cap_defaults_to_2_gib_and_is_read_from_the_environment():
    """REPOSYNC_MAX_ASSET_BYTES: 2 GiB (GitHub's per asset) unless set; below 1 is refused."""
    assert Settings().max_asset_bytes == 2 * 1024**3
    assert Settings.from_env({"REPOSYNC_MAX_ASSET_BYTES": "1000"}).max_asset_bytes == 1000
    for value in ("0", "-1", "2G"):
        with pytest.raises(ConfigurationError, match="REPOSYNC_MAX_ASSET_BYTES"):
            Settings.from_env({"REPOSYNC_MAX_ASSET_BYTES": value})


def test_the_ref_updates_per_push_setting_is_read_and_may_not_be_negative():
    """REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH: 0 (the forge's own) unless set."""
    assert Settings().git_max_ref_updates_per_push == 0
    read = Settings.from_env({"REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH": "2000"})
    assert read.git_max_ref_updates_per_push == 2000
    with pytest.raises(ConfigurationError, match="REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH"):
        Settings.from_env({"REPOSYNC_GIT_MAX_REF_UPDATES_PER_PUSH": "-1"})


def test_git_stall_seconds_are_300_unless_set_and_never_negative():
    """REPOSYNC_GIT_STALL_SECONDS: 300 unless set, 0 turns the guard off (its
    environment: tests/unit/git/test_environment.py)."""
    assert Settings().git_stall_seconds == 300.0
    assert Settings.from_env({"REPOSYNC_GIT_STALL_SECONDS": "0"}).git_stall_seconds == 0
    with pytest.raises(ConfigurationError, match="REPOSYNC_GIT_STALL_SECONDS"):
        Settings.from_env({"REPOSYNC_GIT_STALL_SECONDS": "-5"})


def test_idempotency_keys_live_a_day_and_a_request_holds_its_key_less_long():
    """REPOSYNC_IDEMPOTENCY_TTL / _LOCK: 24 h and 10 min by default; the lock must be
    positive and shorter than the key's life (a held key would outlive its record)."""
    assert (Settings().idempotency_ttl, Settings().idempotency_lock) == (86400.0, 600.0)
    assert Settings.from_env({"REPOSYNC_IDEMPOTENCY_TTL": "3600"}).idempotency_ttl == 3600.0
    for lock, ttl in (("0", "100"), ("200", "100"), ("-1", "100")):
        with pytest.raises(ConfigurationError, match="REPOSYNC_IDEMPOTENCY_LOCK"):
            Settings.from_env({"REPOSYNC_IDEMPOTENCY_LOCK": lock, "REPOSYNC_IDEMPOTENCY_TTL": ttl})


def test_webhook_settings_are_read_and_the_rotation_must_end():
    """The secret, the previous one and the end of the overlap (an aware ISO time)."""
    settings = Settings.from_env(
        {
            "REPOSYNC_GITHUB_WEBHOOK_SECRET": "new",
            "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET": "old",
            "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL": "2026-12-31T12:00:00Z",
            "REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS": "0.5",
        }
    )
    assert settings.github_webhook_previous_secret_until is not None
    assert settings.github_webhook_previous_secret_until.isoformat() == "2026-12-31T12:00:00+00:00"
    assert settings.webhook_debounce_seconds == 0.5
    assert Settings().webhook_debounce_seconds == 2.0
    assert Settings().github_webhook_secret == ""


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"REPOSYNC_GITHUB_WEBHOOK_SECRET": "n", "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET": "o"},
            "PREVIOUS_SECRET_UNTIL",
        ),
        (
            {
                "REPOSYNC_GITHUB_WEBHOOK_SECRET": "n",
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL": "2026-12-31T12:00:00Z",
            },
            "PREVIOUS_SECRET is empty",
        ),
        (
            {
                "REPOSYNC_GITHUB_WEBHOOK_SECRET": "n",
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET": "o",
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL": "2026-12-31T12:00:00",
            },
            "UTC offset",
        ),
        ({"REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL": "soon"}, "is not valid"),
        (
            {
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET": "o",
                "REPOSYNC_GITHUB_WEBHOOK_PREVIOUS_SECRET_UNTIL": "2026-12-31T12:00:00Z",
            },
            "without REPOSYNC_GITHUB_WEBHOOK_SECRET",
        ),
        ({"REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS": "-1"}, "DEBOUNCE"),
        ({"REPOSYNC_WEBHOOK_DELIVERY_RETENTION_DAYS": "1"}, "RETENTION"),
    ],
)
def test_webhook_settings_that_cannot_work_are_refused_by_name(env, message):
    """A rotation without an end, an end without an offset, ...: a clear error."""
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env(env)


def test_the_sign_in_throttle_and_proxy_hops_are_read_and_checked():
    """Defaults: 10 refusals a minute, no proxy; values are read; nonsense is refused."""
    default = Settings.from_env({})
    assert (default.auth_failure_limit, default.auth_failure_window, default.proxy_hops) == (
        10,
        60.0,
        0,
    )
    read = Settings.from_env(
        {
            "REPOSYNC_AUTH_FAILURE_LIMIT": "5",
            "REPOSYNC_AUTH_FAILURE_WINDOW": "300",
            "REPOSYNC_PROXY_HOPS": "2",
        }
    )
    assert (read.auth_failure_limit, read.auth_failure_window, read.proxy_hops) == (5, 300.0, 2)
    for env in (
        {"REPOSYNC_AUTH_FAILURE_LIMIT": "0"},
        {"REPOSYNC_AUTH_FAILURE_WINDOW": "0"},
        {"REPOSYNC_PROXY_HOPS": "-1"},
    ):
        with pytest.raises(ConfigurationError, match="REPOSYNC_AUTH_FAILURE_LIMIT"):
            Settings.from_env(env)


def test_connect_github_settings_come_together():
    """Client id, secret and App slug: all three or none, each missing one named."""
    whole = Settings.from_env(
        {
            "REPOSYNC_GITHUB_CLIENT_ID": "Iv1.abc",
            "REPOSYNC_GITHUB_CLIENT_SECRET": "s3cret",
            "REPOSYNC_GITHUB_APP_SLUG": "reposync-prod",
            "REPOSYNC_GITHUB_OAUTH_URL": "https://ghe.example",
            "REPOSYNC_GITHUB_CONNECT_WAIT": "5",
        }
    )
    assert whole.github_connect_enabled
    assert whole.github_oauth_url == "https://ghe.example"
    assert not Settings().github_connect_enabled
    with pytest.raises(ConfigurationError, match="missing: REPOSYNC_GITHUB_CLIENT_SECRET"):
        Settings(github_client_id="Iv1.abc", github_app_slug="reposync")
    with pytest.raises(ConfigurationError, match="not a GitHub App slug"):
        Settings(github_client_id="a", github_client_secret="b", github_app_slug="Repo Sync")
    with pytest.raises(ConfigurationError, match="REPOSYNC_GITHUB_OAUTH_URL"):
        Settings(github_oauth_url="github.com")
    with pytest.raises(ConfigurationError, match="CONNECT_STATE_TTL"):
        Settings(github_connect_state_ttl=0)


# -- settings files (what an installed hook reads) -------------------------------------------


def test_an_env_file_reads_reposync_settings_with_export_and_quotes(tmp_path):
    """The format of a systemd or compose env file: comments, ``export``, one level of
    quotes."""
    path = tmp_path / "hooks.env"
    path.write_text(
        "# where the database is\n"
        "export REPOSYNC_DATABASE_URL='postgresql://u:p@h/db'\n"
        'REPOSYNC_BROKER_URL="redis://h:6379/0"\n'
        "\n"
        "REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS=1\n"
    )
    path.chmod(0o600)

    assert read_env_file(path) == {
        "REPOSYNC_DATABASE_URL": "postgresql://u:p@h/db",
        "REPOSYNC_BROKER_URL": "redis://h:6379/0",
        "REPOSYNC_WEBHOOK_DEBOUNCE_SECONDS": "1",
    }


@pytest.mark.parametrize(
    ("text", "mode", "message"),
    [
        ("REPOSYNC_X=1\n", 0o640, "chmod 600"),
        ("REPOSYNC_X=1\nPATH=/tmp\n", 0o600, ":2: expected REPOSYNC_NAME=value"),
        ("REPOSYNC_X 1\n", 0o600, ":1: expected"),
    ],
)
def test_an_env_file_others_may_read_or_a_bad_line_is_refused(tmp_path, text, mode, message):
    path = tmp_path / "hooks.env"
    path.write_text(text)
    path.chmod(mode)
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        read_env_file(path)


def test_a_missing_env_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="cannot read the settings file"):
        read_env_file(tmp_path / "nowhere.env")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://u:secret@h/db", True),
        ("postgresql+psycopg://u@h/db", False),
        ("redis://:secret@h:6379/0", True),
        ("sqlite:////tmp/x.db", False),
        ("", False),
    ],
)
def test_which_urls_carry_a_password(url, expected):
    assert url_has_password(url) is expected


@pytest.mark.parametrize(
    ("environment", "in_process"),
    [
        ({}, True),  # the embedded mode, no broker: the API runs its Runs itself
        ({"REPOSYNC_BROKER_URL": "redis://h:6379/0"}, False),
        ({"REPOSYNC_DATABASE_URL": "postgresql://h/rs"}, False),  # the distributed mode
        ({"REPOSYNC_EXECUTOR": "celery"}, False),
        ({"REPOSYNC_EXECUTOR": "In-Process", "REPOSYNC_DATABASE_URL": "postgresql://h/rs"}, True),
    ],
)
def test_who_executes_the_apis_runs(environment, in_process):
    """Issue 25: ``auto`` runs in-process on the embedded database unless a broker is
    configured; Celery's broker stays the local Redis when none is given."""
    settings = Settings.from_env(environment)
    assert settings.runs_in_process is in_process
    assert settings.effective_broker_url == environment.get(
        "REPOSYNC_BROKER_URL", "redis://127.0.0.1:6379/0"
    )


def test_an_unknown_executor_is_refused():
    """Anything but auto, celery or in-process is a configuration error naming them."""
    with pytest.raises(ConfigurationError, match="auto, celery, in-process"):
        Settings.from_env({"REPOSYNC_EXECUTOR": "threads"})
