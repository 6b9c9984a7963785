"""Settings.from_env: defaults, accepted spellings, and start-up errors that name the variable."""

from __future__ import annotations

import pytest

from hooks.server.config import RECENT_STATUS_SECONDS, Settings


def test_defaults_with_an_empty_environment() -> None:
    settings = Settings.from_env({})
    assert settings == Settings(
        resync_seconds=5.0,
        max_body_bytes=4 * 1024 * 1024,
        log_level="INFO",
        hook_token_file=None,
        max_json_depth=64,
        port=8080,
    )


def test_blank_values_mean_default() -> None:
    names = ["NVCRE_RESYNC_SECONDS", "NVCRE_MAX_BODY_BYTES", "NVCRE_LOG_LEVEL", "NVCRE_HOOK_TOKEN_FILE",
             "NVCRE_MAX_JSON_DEPTH", "PORT"]
    assert Settings.from_env(dict.fromkeys(names, "  ")) == Settings()


def test_every_variable_is_read() -> None:
    settings = Settings.from_env({
        "NVCRE_RESYNC_SECONDS": "2.5",
        "NVCRE_MAX_BODY_BYTES": "1024",
        "NVCRE_LOG_LEVEL": "debug",
        "NVCRE_HOOK_TOKEN_FILE": "/var/run/secrets/hook/token",
        "NVCRE_MAX_JSON_DEPTH": "32",
        "PORT": "9000",
    })
    assert settings == Settings(2.5, 1024, "DEBUG", "/var/run/secrets/hook/token", 32, 9000)


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVCRE_RESYNC_SECONDS", "7")
    assert Settings.from_env().resync_seconds == 7.0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NVCRE_RESYNC_SECONDS", "0"),
        ("NVCRE_RESYNC_SECONDS", "-1"),
        ("NVCRE_RESYNC_SECONDS", "nan"),
        ("NVCRE_RESYNC_SECONDS", "inf"),
        ("NVCRE_RESYNC_SECONDS", "soon"),
        ("NVCRE_MAX_BODY_BYTES", "0"),
        ("NVCRE_MAX_BODY_BYTES", "4MiB"),
        ("NVCRE_MAX_BODY_BYTES", "1.5"),
        ("NVCRE_LOG_LEVEL", "verbose"),
        ("NVCRE_MAX_JSON_DEPTH", "0"),
        ("NVCRE_MAX_JSON_DEPTH", "5000"),
        ("PORT", "0"),
        ("PORT", "65536"),
        ("PORT", "http"),
        ("NVCRE_METRICS_PORT", "0"),
        ("NVCRE_METRICS_PORT", "metrics"),
    ],
)
def test_bad_values_name_the_variable_and_the_value(name: str, value: str) -> None:
    with pytest.raises(ValueError) as raised:
        Settings.from_env({name: value})
    assert name in str(raised.value)
    assert repr(value) in str(raised.value)


def test_settings_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().port = 1  # type: ignore[misc]


def test_the_metrics_port_and_the_previous_token_file_are_read() -> None:
    settings = Settings.from_env({"NVCRE_METRICS_PORT": "9191", "NVCRE_HOOK_TOKEN_FILE": "/t/token",
                                  "NVCRE_HOOK_PREVIOUS_TOKEN_FILE": "/t/previous"})
    assert (settings.metrics_port, settings.hook_token_file, settings.hook_previous_token_file) == (
        9191, "/t/token", "/t/previous")
    assert Settings.from_env({}).metrics_port == 9090


def test_a_previous_token_file_without_a_current_one_is_a_startup_error() -> None:
    with pytest.raises(ValueError, match="NVCRE_HOOK_PREVIOUS_TOKEN_FILE"):
        Settings.from_env({"NVCRE_HOOK_PREVIOUS_TOKEN_FILE": "/t/previous"})


def test_the_recent_status_window_is_read_and_defaults_to_thirty_seconds() -> None:
    """``NVCRE_RECENT_STATUS_SECONDS``: the freshness check's window (``hooks.server.freshness``);
    production keeps 30 s, a test's own server may shorten it; zero or less stops the server."""
    assert Settings.from_env({}).recent_status_seconds == RECENT_STATUS_SECONDS == 30.0
    assert Settings.from_env({"NVCRE_RECENT_STATUS_SECONDS": "3"}).recent_status_seconds == 3.0
    for bad in ("0", "-1", "nan", "soon"):
        with pytest.raises(ValueError, match=f"NVCRE_RECENT_STATUS_SECONDS={bad!r}"):
            Settings.from_env({"NVCRE_RECENT_STATUS_SECONDS": bad})
