"""The recording directory: scenario folders, bounded in count and bytes, written and dropped atomically.

Does disk I/O only, in the calling thread (the recorder's writer thread). A folder is written into
a ``.tmp-*`` directory, every file and the directory fsynced, then renamed into place; a folder being
dropped is renamed to ``.del-*`` first. Several worker processes may share the directory: a folder
another one dropped meanwhile is skipped, never an error.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

STALE_TEMP_SECONDS = 600.0
"""A ``.tmp-*``/``.del-*`` entry older than this was left by a process that died mid-write."""


class FolderStore:
    """``directory`` holding at most ``max_count`` folders and ``max_bytes`` bytes, oldest dropped first."""

    def __init__(self, directory: Path, *, max_count: int, max_bytes: int) -> None:
        self.directory = directory
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._swept = False

    def put(self, name: str, files: Mapping[str, bytes], size: int) -> Path:
        """Writes ``files`` (``size`` bytes in all) as the folder ``name``, after dropping the oldest
        folders to make room for it. Returns its path; raises ``OSError`` from the disk."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._sweep_stale()
        self._make_room(count=self.max_count - 1, size=self.max_bytes - size)
        return write_folder(self.directory, name, files)

    def _make_room(self, *, count: int, size: int) -> None:
        """Drops the oldest folders until at most ``count`` remain holding at most ``size`` bytes."""
        folders = scenario_folders(self.directory)
        total = sum(folder_bytes for _, folder_bytes in folders)
        for path, folder_bytes in folders:
            if len(folders) <= count and total <= size:
                break
            remove_folder(path)
            folders = folders[1:]
            total -= folder_bytes

    def _sweep_stale(self) -> None:
        """Once per store: removes ``.tmp-*``/``.del-*`` entries left by a process that died."""
        if self._swept:
            return
        self._swept = True
        cutoff = time.time() - STALE_TEMP_SECONDS
        for entry in os.scandir(self.directory):
            if entry.name.startswith((".tmp-", ".del-")) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                shutil.rmtree(entry.path, ignore_errors=True)


def write_folder(directory: Path, name: str, files: Mapping[str, bytes]) -> Path:
    """Writes ``files`` as the folder ``directory/name``, atomically: into a ``.tmp-`` directory in
    ``directory``, every file and the directory fsynced, then renamed into place. On any error the
    temporary directory is removed and the error raised; ``directory/name`` then does not exist."""
    temporary = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=directory))
    try:
        for file_name, data in files.items():
            write_file(temporary / file_name, data)
        fsync_directory(temporary)
        final = directory / name
        os.rename(temporary, final)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    fsync_directory(directory)
    return final


def write_file(path: Path, data: bytes) -> None:
    """Creates ``path`` (it must not exist) holding ``data``, flushed to disk."""
    with open(path, "xb") as handle_:
        handle_.write(data)
        handle_.flush()
        os.fsync(handle_.fileno())


def fsync_directory(path: Path) -> None:
    """Flushes a directory's entries (new names, renames) to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def scenario_folders(directory: Path) -> list[tuple[Path, int]]:
    """The recorded folders in ``directory`` (names not starting with ``.``), oldest first, each
    with the bytes its files hold. A folder that vanishes meanwhile (another worker dropped it) is
    skipped."""
    folders = []
    for entry in sorted(os.scandir(directory), key=lambda item: item.name):
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            size = sum(item.stat(follow_symlinks=False).st_size for item in os.scandir(entry.path))
        except FileNotFoundError:
            continue
        folders.append((Path(entry.path), size))
    return folders


def remove_folder(path: Path) -> None:
    """Removes a recorded folder atomically for readers: renamed to ``.del-*`` first, then deleted.
    A folder already gone (another worker dropped it) is fine."""
    doomed = path.with_name(f".del-{path.name}-{os.getpid()}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)
