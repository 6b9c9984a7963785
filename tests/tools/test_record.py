"""The recorder (``NVCRE_RECORD_DIR``): scenario folders that replay to the same answer, bounds,
atomic writes, and disk errors that never touch the hook's answer."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask
from prometheus_client import REGISTRY

import hooks.server.app
import hooks.tools.record.recorder
import hooks.tools.record.store
from hooks.core.decide import decide
from hooks.core.observed import parse_request
from hooks.server.app import create_app
from hooks.server.config import Settings
from hooks.server.handler import HookResult, parse_json
from hooks.tools import replay, scenario
from hooks.tools.cli import cli
from hooks.tools.record import Recorder
from hooks.wsgi import production_app
from podread import ReadRecord, reader_from_snapshot, recording
from tests.contract.test_layout import ROOT, imports_of

PAYLOADS = Path(__file__).resolve().parents[1] / "payloads"
SCENARIOS = scenario.scenario_dirs(PAYLOADS)
STALE = PAYLOADS / "v2-finalize-stale-cache"
SETTINGS = Settings()


def answered(folder: Path) -> tuple[bytes, HookResult, datetime]:
    """A scenario's call answered as the server answers it with recording on: decided inside
    ``recording(keep_pods=True)`` over its pods.json, at its meta.json ``now``."""
    loaded = scenario.load(folder)
    assert loaded.hook and loaded.now and loaded.pods is not None
    observed = parse_request(parse_json(loaded.raw, max_bytes=SETTINGS.max_body_bytes, max_depth=64), loaded.hook)
    with recording(keep_pods=True) as reads:
        decision = decide(observed, reader_from_snapshot(loaded.pods), loaded.now,
                          resync_seconds=SETTINGS.resync_seconds)
    result = HookResult(200, decision.response, decision, reads, 0.0012, observed.namespace, observed.name)
    return loaded.raw, result, loaded.now


def failures(reason: str) -> float:
    return REGISTRY.get_sample_value("nvcre_record_failures_total", {"reason": reason}) or 0.0


def written() -> float:
    return REGISTRY.get_sample_value("nvcre_record_written_total") or 0.0


def folders(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


@pytest.fixture
def recorders() -> Iterator[list[Recorder]]:
    """Recorders made by a test, closed after it."""
    made: list[Recorder] = []
    yield made
    for recorder in made:
        recorder.close(timeout=2)


def make(recorders: list[Recorder], directory: Path, **options: int) -> Recorder:
    recorder = Recorder(directory, **options)
    recorders.append(recorder)
    return recorder


def record(recorder: Recorder, folder: Path = STALE) -> None:
    raw, result, now = answered(folder)
    assert recorder.submit("finalize" if "finalize" in folder.name else "sync", raw, result, now=now,
                           settings=SETTINGS)


# --- configuration ------------------------------------------------------------------------------


def test_recording_is_off_unless_a_directory_is_set(tmp_path: Path) -> None:
    assert Recorder.from_env({}) is None
    assert Recorder.from_env({"NVCRE_RECORD_DIR": "  "}) is None
    recorder = Recorder.from_env({"NVCRE_RECORD_DIR": str(tmp_path), "NVCRE_RECORD_MAX_COUNT": "7",
                                  "NVCRE_RECORD_MAX_BYTES": "1000"})
    assert recorder is not None
    assert (recorder.directory, recorder.max_count, recorder.max_bytes) == (tmp_path, 7, 1000)
    defaults = Recorder.from_env({"NVCRE_RECORD_DIR": str(tmp_path)})
    assert defaults is not None and (defaults.max_count, defaults.max_bytes) == (100, 16 * 1024 * 1024)


@pytest.mark.parametrize(("name", "value"), [("NVCRE_RECORD_MAX_COUNT", "0"), ("NVCRE_RECORD_MAX_COUNT", "ten"),
                                             ("NVCRE_RECORD_MAX_BYTES", "-5"), ("NVCRE_RECORD_MAX_BYTES", "1e6")])
def test_a_bad_bound_is_a_startup_error_naming_the_variable(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"{name}='{value}' is not valid"):
        Recorder.from_env({"NVCRE_RECORD_DIR": str(tmp_path), name: value})


# --- what a recorded call holds -----------------------------------------------------------------


@pytest.mark.parametrize("folder", SCENARIOS, ids=[folder.name for folder in SCENARIOS])
def test_every_recorded_call_replays_to_the_same_answer(folder: Path, tmp_path: Path,
                                                        recorders: list[Recorder]) -> None:
    recorder = make(recorders, tmp_path)
    record(recorder, folder)
    assert recorder.flush()
    (name,) = folders(tmp_path)
    loaded = scenario.load(tmp_path / name)
    replayed = replay.run(loaded, reader=reader_from_snapshot(loaded.pods or {}), hook=replay.choose_hook(loaded, None),
                          now=loaded.now or datetime.now(UTC), settings=replay.scenario_settings(loaded, SETTINGS))
    assert replayed.matches is True, replayed.diff()
    assert replayed.body == json.loads((folder / "response.json").read_text())


def test_a_recorded_folder_has_the_payloads_layout(tmp_path: Path, recorders: list[Recorder]) -> None:
    recorder = make(recorders, tmp_path)
    record(recorder)
    assert recorder.flush()
    (name,) = folders(tmp_path)
    assert name.endswith("-finalize-team-a-llama-" + name.rsplit("-", 2)[1] + "-0")
    folder = tmp_path / name
    assert sorted(path.name for path in folder.iterdir()) == ["meta.json", "pods.json", "request.json",
                                                               "response.json"]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["hook"] == "finalize" and meta["now"] == "2026-01-01T00:00:00Z"
    assert meta["code"] == 200 and meta["decision"] == "held" and meta["duration_seconds"] == 0.0012
    assert (meta["phase_before"], meta["phase_after"]) == ("Terminating", "Terminating")
    assert meta["description"] == "recorded finalize of team-a/llama: Terminating -> Terminating (held)"
    assert meta["settings"] == {"resync_seconds": 5.0, "max_body_bytes": 4 * 1024 * 1024, "max_json_depth": 64}
    assert [(r["method"], r["source"], r["pods"]) for r in meta["reads"]] == [
        ("active_job_pods", "cache", 2), ("active_job_pods", "live", 2), ("active_launcher_pods", "live", 0),
        ("attempt_jobs", "live", 0), ("attempt_jobs", "live", 0), ("active_attempt_pods", "live", 2)]
    # pods.json: what each source answered, the cache's stale view and the API server's apart
    assert json.loads((folder / "pods.json").read_text()) == json.loads((STALE / "pods.json").read_text())
    assert json.loads((folder / "request.json").read_text()) == json.loads((STALE / "request.json").read_text())
    assert json.loads((folder / "response.json").read_text()) == json.loads((STALE / "response.json").read_text())


def test_pods_are_deduplicated_and_a_failed_read_keeps_the_servers_words() -> None:
    pod = {"metadata": {"name": "p", "namespace": "a"}, "status": {"phase": "Running"}}
    newer = {"metadata": {"name": "p", "namespace": "a"}, "status": {"phase": "Succeeded"}}
    other = {"metadata": {"name": "q", "namespace": "a"}}
    reads = [
        ReadRecord("job_pods", "cache", "s", "ok", 1, 0.0, items=(pod,)),
        ReadRecord("active_job_pods", "cache", "s", "ok", 2, 0.0, items=(newer, other)),
        ReadRecord("active_job_pods", "live", "s", "error", 0, 0.0, error="active_job_pods from live: timed out"),
        ReadRecord("workload_pods", "live", "s", "error", 0, 0.0, error="something else"),
    ]
    assert scenario.pods_document(reads) == {"cache": {"pods": [pod, other]}, "live": {"error": "timed out"}}
    assert scenario.pods_document([]) == {"cache": {"pods": []}, "live": {"pods": []}}


def test_a_request_that_is_not_json_is_kept_byte_for_byte() -> None:
    assert scenario.request_bytes(b"{nope", 100) == b"{nope"
    assert scenario.request_bytes(b'{"b":1,"a":[1,2]}', 1000) == b'{\n  "b": 1,\n  "a": [\n    1,\n    2\n  ]\n}\n'
    assert scenario.request_bytes(b'{"b":1,"a":[1,2]}', 20) == b'{"b":1,"a":[1,2]}'  # indented would be over


def test_a_request_nested_deeper_than_the_indenting_encoder_can_go_is_kept_byte_for_byte() -> None:
    """``NVCRE_MAX_JSON_DEPTH`` accepts up to 1024 levels; ``json.dumps(indent=2)`` recurses on the
    Python stack and gives up before that. Such a request is kept as it came, not dropped (and not
    an exception out of the writer thread)."""
    deep = b'{"parent":' + b'{"a":' * 1000 + b"{}" + b"}" * 1001
    assert scenario.request_bytes(deep, len(deep) * 10) == deep


def test_the_writer_goes_on_after_a_call_it_could_not_write(tmp_path: Path, recorders: list[Recorder],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure ``write`` does not expect is counted (``error``) and the next call is recorded: the
    writer thread does not die with one odd call (before, every later call waited in the queue
    until it was full, then was dropped as ``queue-full``)."""
    recorder = make(recorders, tmp_path)
    before = failures("error")
    real = hooks.tools.record.recorder.scenario_files
    calls = iter([RuntimeError("boom")])

    def first_fails(call: object) -> object:
        failure = next(calls, None)
        if failure is not None:
            raise failure
        return real(call)

    monkeypatch.setattr(hooks.tools.record.recorder, "scenario_files", first_fails)
    record(recorder)
    record(recorder)
    assert recorder.flush()
    assert failures("error") == before + 1
    assert len(folders(tmp_path)) == 1


def test_reads_that_did_not_keep_their_pods_are_not_recorded(tmp_path: Path, recorders: list[Recorder]) -> None:
    raw, result, now = answered(STALE)
    bare = [ReadRecord(r.method, r.source, r.selector, r.outcome, r.pods, r.seconds, r.error) for r in result.reads]
    recorder = make(recorders, tmp_path)
    before = failures("incomplete")
    recorder.submit("finalize", raw, HookResult(200, result.body, result.decision, bare, 0.001), now=now,
                    settings=SETTINGS)
    assert recorder.flush()
    assert folders(tmp_path) == [] and failures("incomplete") == before + 1


# --- bounds -------------------------------------------------------------------------------------


def test_at_most_max_count_folders_are_kept_oldest_dropped_first(tmp_path: Path, recorders: list[Recorder]) -> None:
    recorder = make(recorders, tmp_path, max_count=3)
    kept: list[str] = []
    for _ in range(5):
        record(recorder)
        assert recorder.flush()
        kept = [*kept, *(name for name in folders(tmp_path) if name not in kept)][-3:]
        assert len(folders(tmp_path)) <= 3
    assert folders(tmp_path) == kept
    assert [name.rsplit("-", 1)[1] for name in folders(tmp_path)] == ["2", "3", "4"]


def test_at_most_max_bytes_are_kept_oldest_dropped_first(tmp_path: Path, recorders: list[Recorder]) -> None:
    probe = make(recorders, tmp_path / "probe")
    record(probe)
    assert probe.flush()
    ((_, size),) = hooks.tools.record.store.scenario_folders(tmp_path / "probe")
    recorder = make(recorders, tmp_path / "rec", max_bytes=int(size * 2.5))
    for _ in range(4):
        record(recorder)
        assert recorder.flush()
    names = folders(tmp_path / "rec")
    assert [name.rsplit("-", 1)[1] for name in names] == ["2", "3"]
    kept = hooks.tools.record.store.scenario_folders(tmp_path / "rec")
    assert sum(folder_bytes for _, folder_bytes in kept) <= size * 2.5


def test_a_call_larger_than_the_whole_budget_is_not_recorded(tmp_path: Path, recorders: list[Recorder]) -> None:
    raw, result, now = answered(STALE)
    recorder = make(recorders, tmp_path, max_bytes=len(raw) + 100)
    before = failures("too-large")
    assert recorder.submit("finalize", raw, result, now=now, settings=SETTINGS)  # the request fits, the folder not
    assert recorder.flush()
    assert folders(tmp_path) == [] and failures("too-large") == before + 1
    small = make(recorders, tmp_path, max_bytes=len(raw) - 1)
    assert not small.submit("finalize", raw, result, now=now, settings=SETTINGS)  # dropped before queueing
    assert failures("too-large") == before + 2


def test_a_full_queue_drops_the_call_without_waiting(tmp_path: Path, recorders: list[Recorder],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real_write = hooks.tools.record.store.write_folder

    def slow_write(*args, **kwargs):
        release.wait(10)
        return real_write(*args, **kwargs)

    monkeypatch.setattr(hooks.tools.record.store, "write_folder", slow_write)
    recorder = make(recorders, tmp_path, queue_size=1)
    raw, result, now = answered(STALE)
    before = failures("queue-full")
    started = time.perf_counter()
    queued = [recorder.submit("finalize", raw, result, now=now, settings=SETTINGS) for _ in range(4)]
    assert time.perf_counter() - started < 0.5
    assert queued[0] and not all(queued)
    assert failures("queue-full") == before + queued.count(False)
    release.set()
    assert recorder.flush()
    assert len(folders(tmp_path)) == queued.count(True)


# --- atomicity and disk errors ------------------------------------------------------------------


def test_a_write_failing_midway_leaves_no_folder_and_no_temporary(tmp_path: Path, recorders: list[Recorder],
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    real_write_file = hooks.tools.record.store.write_file
    seen: list[list[str]] = []

    def failing_third(path: Path, data: bytes) -> None:
        if len(list(path.parent.iterdir())) == 2:
            seen.append(folders(tmp_path))  # what a reader of the directory sees mid-write
            raise OSError(28, "No space left on device")
        real_write_file(path, data)

    monkeypatch.setattr(hooks.tools.record.store, "write_file", failing_third)
    recorder = make(recorders, tmp_path)
    before = failures("disk")
    with caplog.at_level(logging.WARNING, logger="nvcre.hooks.record"):
        record(recorder)
        assert recorder.flush()
    assert seen and all(name.startswith(".tmp-") for name in seen[0])  # never a visible half folder
    assert folders(tmp_path) == []  # and the temporary directory is gone
    assert failures("disk") == before + 1
    assert "No space left on device" in caplog.text


def test_a_failed_rename_cleans_up_too(tmp_path: Path, recorders: list[Recorder],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def no_rename(source: str, target: str) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(hooks.tools.record.store.os, "rename", no_rename)
    recorder = make(recorders, tmp_path)
    record(recorder)
    assert recorder.flush()
    assert folders(tmp_path) == []


def test_an_unusable_directory_is_counted_and_logged_not_raised(tmp_path: Path, recorders: list[Recorder],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    recorder = make(recorders, blocker / "records")
    before = failures("disk")
    with caplog.at_level(logging.WARNING, logger="nvcre.hooks.record"):
        record(recorder)
        record(recorder)
        assert recorder.flush()
    assert failures("disk") == before + 2
    messages = [r.getMessage() for r in caplog.records if r.name == "nvcre.hooks.record"]
    assert len(messages) == 1 and "not recorded in" in messages[0]  # repeated failures: counted, logged once


def test_stale_temporaries_of_a_dead_process_are_swept(tmp_path: Path, recorders: list[Recorder]) -> None:
    stale = tmp_path / ".tmp-old-123"
    stale.mkdir()
    (stale / "request.json").write_text("{}")
    fresh = tmp_path / ".tmp-someone-writing"
    fresh.mkdir()
    old = time.time() - 3600
    os.utime(stale, (old, old))
    recorder = make(recorders, tmp_path)
    record(recorder)
    assert recorder.flush()
    names = folders(tmp_path)
    assert ".tmp-old-123" not in names and ".tmp-someone-writing" in names


# --- through the app ----------------------------------------------------------------------------

RECORDED_NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
TOKEN = "s3cr3t-hook-token"


@pytest.fixture
def recording_app(tmp_path: Path) -> Iterator[tuple[Flask, Path, Recorder]]:
    """The real app with the recorder as its middleware, bearer auth on, pods from the stale-cache scenario."""
    directory = tmp_path / "records"
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    recorder = Recorder(directory)
    app = create_app(reader_from_snapshot(json.loads((STALE / "pods.json").read_text())),
                     clock=lambda: RECORDED_NOW, settings=Settings(hook_token_file=str(token_file)),
                     middleware=(recorder,))
    yield app, directory, recorder
    recorder.close(timeout=2)


def no_cluster(tmp_path: Path, **env: str) -> dict[str, str]:
    """An environment without cluster configuration (the Reader builds; its reads would fail)."""
    return {"KUBECONFIG": str(tmp_path / "no-such-kubeconfig"), "HOME": str(tmp_path), "NVCRE_CACHE_MODE": "ttl",
            **env}


def post(app: Flask, body: bytes, hook: str = "finalize", token: str = TOKEN) -> tuple[int, dict]:
    answer = app.test_client().post(f"/{hook}", data=body, content_type="application/json",
                                    headers={"Authorization": f"Bearer {token}"})
    return answer.status_code, answer.get_json()


def test_recording_is_off_by_default(tmp_path: Path) -> None:
    app = production_app(no_cluster(tmp_path))
    assert app.extensions["nvcre_middleware"] == ()


def test_the_composition_root_gives_the_recorder_to_the_app(tmp_path: Path) -> None:
    """``hooks.wsgi`` builds the recorder from NVCRE_RECORD_DIR and gives it to the app; a call through
    the app is then recorded."""
    app = production_app(no_cluster(tmp_path, NVCRE_RECORD_DIR=str(tmp_path / "records"), NVCRE_RECORD_MAX_COUNT="3"))
    (recorder,) = app.extensions["nvcre_middleware"]
    assert isinstance(recorder, Recorder) and (recorder.directory, recorder.max_count) == (tmp_path / "records", 3)
    answer = app.test_client().post("/sync", data=b'{"parent": ')
    assert answer.status_code == 400 and recorder.flush()
    recorder.close()
    assert len(folders(tmp_path / "records")) == 1


def test_create_app_reads_no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the composition root reads the environment: a record directory or a token file named there
    (one that does not exist: read, it would stop the app) changes nothing in ``create_app``."""
    monkeypatch.setenv("NVCRE_RECORD_DIR", str(tmp_path / "records"))
    monkeypatch.setenv("NVCRE_HOOK_TOKEN_FILE", str(tmp_path / "no-such-token"))
    app = create_app(reader_from_snapshot({"items": []}))
    assert app.extensions["nvcre_middleware"] == ()
    assert app.test_client().post("/sync", data=b"{}").status_code == 400, "no token asked, none read"
    with pytest.raises(ValueError, match="NVCRE_HOOK_TOKEN_FILE"):
        production_app(no_cluster(tmp_path, NVCRE_HOOK_TOKEN_FILE=str(tmp_path / "no-such-token")))


def test_the_server_never_imports_the_recorder() -> None:
    """The recorder uses the server's types; the server is given the recorder (``create_app(middleware=...)``)
    and imports no tool: only the composition root ``hooks.wsgi`` knows both."""
    server = Path(hooks.server.app.__file__).parent
    for path in sorted(server.glob("*.py")):
        module = f"hooks.server.{path.stem}"
        named = [name for _, name in imports_of(path, module)]
        assert not [name for name in named if name.startswith(("hooks.tools", "hooks.wsgi"))], path
    root = imports_of(ROOT / "hooks" / "wsgi.py", "hooks.wsgi")
    assert any(name.startswith("hooks.tools.record") for _, name in root)


def test_a_call_recorded_by_the_app_replays_to_the_same_answer(recording_app: tuple[Flask, Path, Recorder]) -> None:
    app, directory, recorder = recording_app
    code, body = post(app, (STALE / "request.json").read_bytes())
    assert code == 200
    assert recorder.flush()
    (name,) = folders(directory)
    folder = directory / name
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["now"] == "2026-01-02T03:04:05.678901Z" and meta["hook"] == "finalize"
    assert meta["decision"] == "held" and meta["code"] == 200 and meta["duration_seconds"] > 0
    assert json.loads((folder / "response.json").read_text()) == body
    everything = b"".join(path.read_bytes() for path in folder.iterdir())
    assert TOKEN.encode() not in everything and b"Authorization" not in everything
    result = CliRunner().invoke(cli, ["replay", str(folder), "--diff"], env={"NVCRE_RESYNC_SECONDS": None})
    assert result.exit_code == 0, result.output
    assert "same as response.json" in result.stderr


def test_a_bad_request_is_recorded_and_replays_to_the_same_error(recording_app: tuple[Flask, Path, Recorder]) -> None:
    app, directory, recorder = recording_app
    code, body = post(app, b'{"parent": ')
    assert code == 400
    assert recorder.flush()
    (name,) = folders(directory)
    assert (directory / name / "request.json").read_bytes() == b'{"parent": '
    assert json.loads((directory / name / "meta.json").read_text())["code"] == 400
    result = CliRunner().invoke(cli, ["replay", str(directory / name)])
    assert result.exit_code == 2 and result.stderr == f"error: {body['error']}\n"
    assert CliRunner().invoke(cli, ["replay", str(directory / name), "--diff"]).exit_code == 0


def test_a_refused_call_is_not_recorded(recording_app: tuple[Flask, Path, Recorder]) -> None:
    app, directory, recorder = recording_app
    code, _ = post(app, (STALE / "request.json").read_bytes(), token="wrong")
    assert code == 401
    assert recorder.flush()
    assert not directory.exists() or folders(directory) == []


def test_a_slow_disk_never_slows_the_answer(recording_app: tuple[Flask, Path, Recorder],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    app, _, _ = recording_app
    monkeypatch.setattr(hooks.tools.record.store, "write_folder", lambda *args: time.sleep(0.5))
    started = time.perf_counter()
    for _ in range(3):
        code, _ = post(app, (STALE / "request.json").read_bytes())
        assert code == 200
    assert time.perf_counter() - started < 1.0


def test_an_unwritable_record_dir_still_answers_and_counts_the_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the directory should be")
    recorder = Recorder(blocker / "records")
    app = create_app(reader_from_snapshot(json.loads((STALE / "pods.json").read_text())),
                     clock=lambda: RECORDED_NOW, settings=Settings(), middleware=(recorder,))
    before = failures("disk")
    with caplog.at_level(logging.WARNING, logger="nvcre.hooks.record"):
        started = time.perf_counter()
        answer = app.test_client().post("/finalize", data=(STALE / "request.json").read_bytes())
        assert answer.status_code == 200 and time.perf_counter() - started < 1.0
        assert answer.get_json()["status"]["message"] == "waiting for 1 active pod: llama-0-worker-1-0"
        assert recorder.flush()
    recorder.close()
    assert failures("disk") == before + 1
    assert "not recorded in" in caplog.text and "Not a directory" in caplog.text


def test_close_writes_what_is_queued_and_then_ignores_calls(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path)
    record(recorder)
    recorder.close()
    assert len(folders(tmp_path)) == 1
    raw, result, now = answered(STALE)
    assert not recorder.submit("finalize", raw, result, now=now, settings=SETTINGS)
    recorder.close()  # twice is fine
    assert len(folders(tmp_path)) == 1
