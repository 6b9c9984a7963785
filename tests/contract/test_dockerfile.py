"""The Dockerfile builds a small, pinned, non-root image that runs gunicorn (no Docker engine needed)."""

from __future__ import annotations

import fnmatch
import json
import pathlib
import re
import shlex
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from hooks.server.config import MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

COMPILERS = re.compile(r"\b(apt-get|apt|apk|yum|dnf|gcc|g\+\+|cc|clang|make|build-essential|pip)\b")


@pytest.fixture(scope="module")
def stages() -> list[list[dict[str, Any]]]:
    """The Dockerfile's instructions, one list per stage (each starting with its FROM)."""
    parser = DockerfileParser(path=str(DOCKERFILE))
    result: list[list[dict[str, Any]]] = []
    for instruction in parser.structure:
        if instruction["instruction"] == "FROM":
            result.append([])
        if instruction["instruction"] != "COMMENT":
            assert result, "instructions before the first FROM"
            result[-1].append(instruction)
    return result


def of(stage: list[dict[str, Any]], name: str) -> list[str]:
    """The values of every ``name`` instruction in ``stage``."""
    return [i["value"] for i in stage if i["instruction"] == name]


def copy_args(value: str) -> tuple[dict[str, str], list[str], str]:
    """A COPY value split into (flags, sources, destination)."""
    words = shlex.split(value)
    flags = dict(word[2:].split("=", 1) for word in words if word.startswith("--"))
    paths = [word for word in words if not word.startswith("--")]
    return flags, paths[:-1], paths[-1]


def dockerignore_excludes(path: str) -> bool:
    """Whether the build context leaves ``path`` (relative, no leading ./) out, per .dockerignore.

    Docker's rules: patterns are matched in order, the last match wins, ``!`` re-includes, and a
    directory's exclusion covers its content.
    """
    rules = []
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            rules.append((negated, line.lstrip("!").strip("/")))
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for negated, pattern in rules:
        for candidate in prefixes:
            if fnmatch.fnmatchcase(candidate, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(candidate.rsplit("/", 1)[-1], pattern[3:])
            ):
                excluded = not negated
                break
    return excluded


def test_two_stages_and_every_base_image_pinned(stages: list) -> None:
    assert len(stages) >= 2, "multi-stage: build the virtualenv apart from the runtime image"
    for stage in stages:
        (image_line,) = of(stage, "FROM")
        image = image_line.split()[0]
        name, _, tag = image.partition(":")
        assert tag and tag != "latest", f"{image}: pin a version tag"
        assert re.match(r"\d+\.\d+\.\d+", tag), f"{image}: pin the full version"
        assert name in ("python", "docker.io/library/python")
        assert re.fullmatch(r"3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", tag)


def test_build_stage_installs_the_requirements_into_a_virtualenv(stages: list) -> None:
    runs = " ".join(of(stages[0], "RUN"))
    assert "-m venv" in runs
    assert re.search(r"pip install --no-cache-dir -r \S*requirements\.txt", runs)


def test_final_stage_copies_the_venv_and_only_the_packages(stages: list) -> None:
    final = stages[-1]
    from_stage, local = [], []
    for value in of(final, "COPY"):
        flags, sources, _ = copy_args(value)
        (from_stage if "from" in flags else local).append(sources)
    assert from_stage, "the final stage copies the virtualenv from the build stage"
    copied = {source.rstrip("/") for sources in local for source in sources}
    assert copied <= {"hooks", "podread", "requirements.txt"}
    assert {"hooks", "podread"} <= copied
    assert not of(final, "ADD")


def test_every_copy_source_exists_and_is_in_the_build_context(stages: list) -> None:
    for stage in stages:
        for value in of(stage, "COPY"):
            flags, sources, _ = copy_args(value)
            if "from" in flags:
                continue
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                assert not dockerignore_excludes(source), f"COPY {source}: excluded by .dockerignore"


def test_final_stage_installs_no_compiler_or_packages(stages: list) -> None:
    for run in of(stages[-1], "RUN"):
        assert not COMPILERS.search(run), f"final stage: {run!r}"


def test_final_stage_runs_as_a_numeric_non_root_user(stages: list) -> None:
    users = of(stages[-1], "USER")
    assert users, "the final stage must set USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) != 0
    assert not group or (group.isdigit() and int(group) != 0)


def test_final_stage_environment(stages: list) -> None:
    parser = DockerfileParser(path=str(DOCKERFILE))
    env = parser.envs  # the final stage's
    assert env.get("PYTHONDONTWRITEBYTECODE") == "1"
    assert env.get("PYTHONUNBUFFERED") == "1"
    assert env.get("MALLOC_ARENA_MAX") == str(MALLOC_ARENA_MAX), "the value hooks/server/config.py measured"
    # glibc reads MALLOC_MMAP_THRESHOLD_ with the trailing underscore; without it the variable is ignored
    assert env.get("MALLOC_MMAP_THRESHOLD_") == str(MALLOC_MMAP_THRESHOLD), "the value hooks/server/config.py measured"
    assert of(stages[-1], "EXPOSE") == ["8080 9090"]


def test_cmd_starts_gunicorn_with_the_config_and_the_app_factory(stages: list) -> None:
    (cmd,) = of(stages[-1], "CMD")
    argv = json.loads(cmd)  # exec form: gunicorn is PID 1 and gets SIGTERM
    assert not of(stages[-1], "ENTRYPOINT")
    assert argv[0] == "gunicorn"
    assert argv[argv.index("--config") + 1] == "hooks/server/gunicorn.conf.py"
    assert argv[argv.index("--bind") + 1] == "0.0.0.0:8080"
    assert argv[-1] == "hooks.wsgi:production_app()"
    (workdir,) = of(stages[-1], "WORKDIR")
    destinations = {copy_args(v)[2].rstrip("/") for v in of(stages[-1], "COPY")}
    assert f"{workdir.rstrip('/')}/hooks" in destinations, "the config path is relative to WORKDIR"


def test_dockerignore_keeps_the_context_small() -> None:
    for path in (".venv", ".venv/bin/python", "tests", "tests/contract/test_dockerfile.py", ".git", ".git/HEAD",
                 "hooks/__pycache__", "podread/__pycache__/reader.cpython-311.pyc"):
        assert dockerignore_excludes(path), f"{path} must not be in the build context"
    for path in ("hooks/server/app.py", "podread/reader.py", "requirements.txt"):
        assert not dockerignore_excludes(path), f"{path} is needed by the build"


def test_image_user_and_port_match_the_deployment() -> None:
    deployment = yaml.safe_load((ROOT / "manifests" / "deployment.yaml").read_text(encoding="utf-8"))
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    parser = DockerfileParser(path=str(DOCKERFILE))
    users = [i["value"] for i in parser.structure if i["instruction"] == "USER"]
    user, _, group = users[-1].partition(":")
    assert container["securityContext"]["runAsUser"] == int(user)
    assert container["securityContext"]["runAsGroup"] == int(group or user)
    assert [p["containerPort"] for p in container["ports"]] == [8080, 9090], "hooks, then metrics"
