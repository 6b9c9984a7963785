"""Bearer-token authentication of /sync and /finalize: required, compared in constant time, rotatable;
probes and metrics stay open."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient
from prometheus_client import REGISTRY

import hooks.server.auth
from hooks.server.app import create_app
from hooks.server.auth import BearerToken
from hooks.server.config import Settings
from tests.server.test_app_http import NOW, empty_reader, error_of, job_request

TOKEN = "s3cret-token"


def write_token(path: Path, token: str, *, bump: int = 0) -> None:
    """Writes the token file; ``bump`` moves its mtime forward so a same-size rewrite is still seen."""
    path.write_text(token + "\n")
    if bump:
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + bump * 1_000_000_000))


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    write_token(path, TOKEN)
    return path


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes, bytes]]:
    """Every ``hmac.compare_digest`` the token check makes, in order (it still compares)."""
    seen: list[tuple[bytes, bytes]] = []
    real = hooks.server.auth.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hooks.server.auth.hmac, "compare_digest", spy)
    return seen


@pytest.fixture
def client(token_file: Path) -> FlaskClient:
    app = create_app(empty_reader(), clock=lambda: NOW, settings=Settings(hook_token_file=str(token_file)))
    return app.test_client()


def sync(client: FlaskClient, authorization: str | None, path: str = "/sync") -> Any:
    headers = {} if authorization is None else {"Authorization": authorization}
    return client.post(path, data=orjson.dumps(job_request()), content_type="application/json", headers=headers)


def failures() -> float:
    return REGISTRY.get_sample_value("nvcre_hook_auth_failures_total") or 0.0


@pytest.mark.parametrize("path", ["/sync", "/finalize"])
def test_the_right_token_is_accepted(client: FlaskClient, path: str) -> None:
    assert sync(client, f"Bearer {TOKEN}", path).status_code == 200


def test_the_scheme_is_case_insensitive(client: FlaskClient) -> None:
    assert sync(client, f"bearer {TOKEN}").status_code == 200


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", f"Basic {TOKEN}", TOKEN, "Bearer wrong", f"Bearer {TOKEN}x", "Bearer ü"],
    ids=["missing", "empty", "no-credentials", "blank", "basic", "no-scheme", "wrong", "longer", "non-ascii"],
)
def test_no_right_token_is_401_and_nothing_is_decided(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch, authorization: str | None
) -> None:
    def must_not_decide(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("decided without authentication")

    monkeypatch.setattr("hooks.server.handler.decide", must_not_decide)
    before = failures()
    response = sync(client, authorization)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    error_of(response)
    assert failures() == before + 1


def test_the_comparison_is_constant_time(client: FlaskClient, calls: list[tuple[bytes, bytes]]) -> None:
    assert sync(client, "Bearer wrong").status_code == 401
    assert sync(client, f"Bearer {TOKEN}").status_code == 200
    assert calls == [(b"wrong", TOKEN.encode()), (TOKEN.encode(), TOKEN.encode())]


def test_a_rotated_token_is_picked_up(client: FlaskClient, token_file: Path) -> None:
    assert sync(client, f"Bearer {TOKEN}").status_code == 200
    write_token(token_file, "rotated-token", bump=1)
    assert sync(client, f"Bearer {TOKEN}").status_code == 401
    assert sync(client, "Bearer rotated-token").status_code == 200


def test_a_secret_volume_swap_is_picked_up(tmp_path: Path) -> None:
    """Kubernetes updates a mounted Secret by re-pointing a symlink to a new directory."""
    for version, token in (("v1", "first"), ("v2", "second")):
        (tmp_path / version).mkdir()
        write_token(tmp_path / version / "token", token)
    (tmp_path / "..data").symlink_to("v1")
    (tmp_path / "token").symlink_to("..data/token")
    bearer = BearerToken(str(tmp_path / "token"))
    assert bearer.allows("Bearer first")
    (tmp_path / "..data_tmp").symlink_to("v2")
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    assert bearer.allows("Bearer second")
    assert not bearer.allows("Bearer first")


def test_a_vanished_or_emptied_file_keeps_the_last_token(token_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    bearer = BearerToken(str(token_file))
    write_token(token_file, "", bump=1)
    assert bearer.allows(f"Bearer {TOKEN}")
    token_file.unlink()
    assert bearer.allows(f"Bearer {TOKEN}")
    assert bearer.allows(f"Bearer {TOKEN}")
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert len(warnings) == 2, warnings
    assert all(str(token_file) in message for message in warnings)


def test_probes_stay_open_and_the_hook_port_serves_no_metrics(client: FlaskClient) -> None:
    for path in ("/healthz", "/readyz"):
        assert client.get(path).status_code == 200, path
    assert client.get("/metrics").status_code == 404, "metrics have a port of their own"
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


def test_without_a_token_file_no_header_is_needed() -> None:
    client = create_app(empty_reader(), clock=lambda: NOW, settings=Settings()).test_client()
    assert sync(client, None).status_code == 200


@pytest.mark.parametrize("content", [None, "", "  \n"], ids=["missing", "empty", "blank"])
def test_a_missing_or_empty_token_file_is_a_startup_error(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as raised:
        create_app(empty_reader(), clock=lambda: NOW, settings=Settings(hook_token_file=str(path)))
    assert str(path) in str(raised.value)
    assert "NVCRE_HOOK_TOKEN_FILE" in str(raised.value)


# ---- two tokens during a rotation, the placeholder refused -----------------------------------------

PLACEHOLDER = "REPLACE-ME-this-placeholder-token-is-public"


def secret_volume(tmp_path: Path, version: str, keys: dict[str, str]) -> None:
    """Writes ``keys`` as kubelet writes a Secret volume: a new directory, then ``..data`` swapped
    to it in one rename, and one ``<key> -> ..data/<key>`` symlink per key (kept when it exists)."""
    (tmp_path / version).mkdir()
    for key, value in keys.items():
        (tmp_path / version / key).write_text(value)
    (tmp_path / "..data_tmp").symlink_to(version)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    for key in ("token", "previous"):
        link = tmp_path / key
        if key in keys and not link.is_symlink():
            link.symlink_to(f"..data/{key}")
        elif key not in keys and link.is_symlink():
            link.unlink()


def test_the_previous_token_is_accepted_beside_the_current_one_while_it_is_there(tmp_path: Path) -> None:
    secret_volume(tmp_path, "v1", {"token": "old", "previous": ""})
    bearer = BearerToken(str(tmp_path / "token"), str(tmp_path / "previous"))
    assert bearer.tokens() == (b"old",)
    secret_volume(tmp_path, "v2", {"token": "new", "previous": "old"})  # rotation step 1
    assert bearer.allows("Bearer old") and bearer.allows("Bearer new")
    assert bearer.tokens() == (b"new", b"old")
    secret_volume(tmp_path, "v3", {"token": "new", "previous": ""})  # the last step
    assert bearer.allows("Bearer new")
    assert not bearer.allows("Bearer old"), "the old token is refused at the end"
    secret_volume(tmp_path, "v4", {"token": "newer"})  # a Secret without the key at all: no previous
    assert bearer.tokens() == (b"newer",)


def test_a_previous_file_that_appears_later_is_read(tmp_path: Path) -> None:
    """The ``previous`` symlink of a key new to the Secret appears after the ``..data`` swap; its
    appearance alone changes the signature, so the token is not lost until the next change."""
    write_token(tmp_path / "token", "new")
    bearer = BearerToken(str(tmp_path / "token"), str(tmp_path / "previous"))
    assert not bearer.allows("Bearer old")
    write_token(tmp_path / "previous", "old")
    assert bearer.allows("Bearer old")


def test_each_token_is_compared_in_constant_time_and_all_of_them_every_time(
        tmp_path: Path, calls: list[tuple[bytes, bytes]]) -> None:
    write_token(tmp_path / "token", "new")
    write_token(tmp_path / "previous", "old")
    bearer = BearerToken(str(tmp_path / "token"), str(tmp_path / "previous"))
    assert bearer.allows("Bearer new") and bearer.allows("Bearer old") and not bearer.allows("Bearer nope")
    assert calls == [(b"new", b"new"), (b"new", b"old"), (b"old", b"new"), (b"old", b"old"),
                     (b"nope", b"new"), (b"nope", b"old")], "no early exit on the first match"


@pytest.mark.parametrize("token", [PLACEHOLDER, "replace-me", "REPLACE-ME-with-openssl-rand"])
def test_the_placeholder_token_is_a_startup_error_naming_the_secret(tmp_path: Path, token: str) -> None:
    write_token(tmp_path / "token", token)
    with pytest.raises(ValueError) as raised:
        create_app(empty_reader(), clock=lambda: NOW, settings=Settings(hook_token_file=str(tmp_path / "token")))
    message = str(raised.value)
    assert "placeholder" in message and "nvcre-system/nvcre-hooks-token" in message
    assert "openssl rand -hex 32" in message and "kubectl -n nvcre-system create secret generic" in message


def test_a_missing_token_file_says_which_secret_to_create(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        BearerToken(str(tmp_path / "token"))
    assert "nvcre-system/nvcre-hooks-token" in str(raised.value) and "openssl rand -hex 32" in str(raised.value)


def test_a_placeholder_written_later_is_never_accepted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_token(tmp_path / "token", TOKEN)
    bearer = BearerToken(str(tmp_path / "token"), str(tmp_path / "previous"))
    write_token(tmp_path / "token", PLACEHOLDER, bump=1)  # an old manifest applied over the real Secret
    write_token(tmp_path / "previous", PLACEHOLDER)
    assert not bearer.allows(f"Bearer {PLACEHOLDER}")
    assert bearer.allows(f"Bearer {TOKEN}"), "the last good token stays in force"
    assert any("placeholder" in record.getMessage() for record in caplog.records if record.levelname == "WARNING")


def test_the_app_accepts_both_tokens_of_a_rotation(tmp_path: Path) -> None:
    write_token(tmp_path / "token", "new")
    write_token(tmp_path / "previous", "old")
    settings = Settings(hook_token_file=str(tmp_path / "token"), hook_previous_token_file=str(tmp_path / "previous"))
    client = create_app(empty_reader(), clock=lambda: NOW, settings=settings).test_client()
    assert sync(client, "Bearer new").status_code == 200
    assert sync(client, "Bearer old").status_code == 200
    (tmp_path / "previous").unlink()
    assert sync(client, "Bearer old").status_code == 401
    assert sync(client, "Bearer new").status_code == 200
