"""``make dev`` (tests/cluster/dev.py) at startup, without a cluster (issue 23, item 5): it prints where
the hooks listen, their metrics port and their log file; it runs them with the production defaults
and passes ``NVCRE_*`` on; a stop signal (SIGINT even when started in the background) stops it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hooks.server.config import Settings
from podread.cache import DEFAULT_TTL_SECONDS
from podread.live import DEFAULT_TIMEOUT_SECONDS
from tests.cluster import dev
from tests.e2e.server import DEFAULT_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_the_hooks_get_the_production_defaults_not_the_tests_timeouts() -> None:
    env = dev.hook_env({})
    assert float(env["NVCRE_CACHE_TTL_SECONDS"]) == DEFAULT_TTL_SECONDS == 5
    assert float(env["NVCRE_RESYNC_SECONDS"]) == Settings().resync_seconds == 5
    assert float(env["NVCRE_API_TIMEOUT_SECONDS"]) == DEFAULT_TIMEOUT_SECONDS == 3
    assert set(DEFAULT_ENV) <= set(env), "every short test setting is overridden"


def test_nvcre_variables_of_the_environment_are_passed_on_but_not_the_token_files() -> None:
    env = dev.hook_env({"NVCRE_LOG_LEVEL": "DEBUG", "NVCRE_CACHE_MODE": "ttl", "HOME": "/root",
                        "NVCRE_HOOK_TOKEN_FILE": "/elsewhere"})
    assert env["NVCRE_LOG_LEVEL"] == "DEBUG" and env["NVCRE_CACHE_MODE"] == "ttl"
    assert "HOME" not in env and "NVCRE_HOOK_TOKEN_FILE" not in env


def test_startup_prints_the_port_the_metrics_the_log_and_why_the_deployment_is_not_ready() -> None:
    hooks: Any = SimpleNamespace(url="http://127.0.0.1:41234", metrics_port=41235,
                                 log_path=Path("/tmp/nvcre-e2e-x/gunicorn.log"))
    lines = dev.startup_lines(hooks, dev.hook_env({}))
    text = "\n".join(lines)
    assert "hooks: http://127.0.0.1:41234" in text
    assert "hooks metrics: http://127.0.0.1:41235/metrics" in text
    assert "hooks log: /tmp/nvcre-e2e-x/gunicorn.log" in text
    assert "NVCRE_CACHE_TTL_SECONDS=5 " in text and "NVCRE_RESYNC_SECONDS=5" in text
    assert "0/2" in text and "no kubelet" in text
    assert "http://127.0.0.1:9999/metrics" in "\n".join(
        dev.startup_lines(hooks, dev.hook_env({"NVCRE_METRICS_PORT": "9999"})))


def test_the_docs_show_what_startup_prints() -> None:
    """docs/operations.md section 10 shows the startup lines; each prefix is one ``startup_lines`` prints."""
    shown = (ROOT / "docs" / "operations.md").read_text()
    hooks: Any = SimpleNamespace(url="u", metrics_port=1, log_path=Path("l"))
    for line in dev.startup_lines(hooks, dev.hook_env({})):
        prefix = line.split(":")[0] + ":"
        assert f"\n{prefix}" in shown, prefix


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_stops_it_cleanly_even_with_sigint_ignored(signum: int) -> None:
    """Started as ``make dev &`` from a script, SIGINT arrives ignored; dev.py installs its own handler.
    ``run`` is replaced by a wait here: the signal must end it through ``main``'s clean path."""
    script = ("import signal, sys, time\n"
              "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "from tests.cluster import dev\n"
              "def run(*args):\n"
              "    print('ready', flush=True)\n"
              "    time.sleep(30)\n"
              "    print('not stopped', flush=True)\n"
              "dev.run = run\n"
              "sys.exit(dev.main([]))\n")
    child = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signum)
    out, err = child.communicate(timeout=20)
    assert child.returncode == 0, err
    assert "not stopped" not in out
    assert f"stopping ({signal.Signals(signum).name})" in err and err.rstrip().endswith("stopped")


def test_a_stop_leaves_no_control_plane_folder_and_keeps_the_hooks_log(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    """The stop is caught inside the control plane's block (ControlPlane keeps its folder when its
    block ends in an exception), and the hooks' log is copied out of their temporary folder."""
    exits: list[object] = []

    class Plane:
        started_in, logs_dir = 1.0, tmp_path / "logs"

        def __enter__(self) -> Plane:
            return self

        def __exit__(self, kind: object, exc: object, tb: object) -> None:
            exits.append(exc)

    def serve(*args: object) -> None:
        raise dev.Stop("SIGTERM")

    monkeypatch.setattr(dev, "ControlPlane", Plane)
    monkeypatch.setattr(dev, "serve", serve)
    dev.run(str(tmp_path / "kubeconfig"), None)
    assert exits == [None], "the control plane's block ended cleanly, so it removes its folder"

    log = tmp_path / "gunicorn.log"
    log.write_text("a log line\n")
    stopped: list[bool] = []
    hooks: Any = SimpleNamespace(log_path=log, stop=lambda: stopped.append(True))
    dev.keep_log(hooks, tmp_path / "hooks.log")
    assert stopped == [True] and (tmp_path / "hooks.log").read_text() == "a log line\n"


def test_the_options_apply_their_samples_and_overlays() -> None:
    base = {p.name for p in dev.Options().samples()}
    assert "job-multinode.yaml" in base and "job-queued.yaml" not in base and "job-gang.yaml" not in base
    both = {p.name for p in dev.Options(kueue=True, gang=True).samples()}
    assert both == base | {"job-queued.yaml", "job-gang.yaml"}
    assert all(path.is_file() for path in dev.OVERLAY_RBAC.values())
    flowing = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    assert 'make dev DEV_ARGS="--kueue --gang"' in flowing
