"""Every file faithkit writes goes through here, so that no write follows a link into someone else's file.

An output path may already be a symbolic or hard link, to one of the command's inputs or to
anything else. Writing through it (``open(path, "w")``) would overwrite what it points at.
So a whole file is written to a new temporary file in the same folder and renamed over the
path (:func:`write_text`, :func:`replacing`): the rename replaces the link itself, and a
crash leaves the old file or the new one, never half of it. A file that grows record by
record (:func:`open_append`) cannot be renamed on every record, so it is opened with
``O_NOFOLLOW`` and refused when it has a second name (a hard link). A write that fails for
want of space or permission (ENOSPC, EDQUOT, EROFS, EIO, ...) is an
:class:`~faithkit.errors.OutputError` naming the file: the temporary file is removed and
the old file stays as it was. Every text written here passes :func:`faithkit.settings.redaction.redact`: no
secret (an API key, a password in a server's URL) reaches a file.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, cast
from collections.abc import Iterator

from ..settings import redaction
from ..errors import OutputError
from ..settings.numbers import is_non_finite


def write_text(path: str | Path, text: str) -> None:
    """Replace ``path`` by ``text`` (UTF-8, secrets redacted) all at once, never through a link; see the module
    docstring."""
    with replacing(path) as file:
        file.write(text)


def write_json(path: str | Path, value, indent: int | None = 2) -> None:
    """:func:`write_text` of ``value`` as :func:`to_json` and a newline."""
    write_text(path, to_json(value, indent=indent) + "\n")


def to_json(value, **options) -> str:
    """``json.dumps`` for what faithkit writes: JSON has no NaN or infinity, so an undefined number (an AUROC of one
    class, an agreement of one item) is written as ``null``, which faithkit reads back as undefined."""
    return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, **options)


def _finite(value):
    if is_non_finite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


@contextmanager
def replacing(path: str | Path, mode: str = "w", newline: str | None = None) -> Iterator[IO]:
    """A handle on a new file beside ``path`` that replaces ``path`` (a link: the link, not its target) when the
    block ends without an error; with an error the new file is removed and ``path`` is left as it was. Text written
    to it is redacted (:mod:`faithkit.settings.redaction`)."""
    path = Path(path)
    try:
        handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as error:
        raise write_error(path, error) from None
    try:
        os.chmod(staging, 0o666 & ~_umask())  # mkstemp makes it private; an output is shared as any new file is
        binary = "b" in mode
        with os.fdopen(handle, mode) if binary else os.fdopen(handle, mode, encoding="utf-8", newline=newline) as file:
            yield file if binary else cast(IO, redaction.RedactingText(file))
            file.flush()
            os.fsync(file.fileno())
        os.replace(staging, path)
    except OSError as error:
        Path(staging).unlink(missing_ok=True)
        if isinstance(error, OutputError):
            raise
        raise write_error(path, error) from None
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def save_figure(figure, path: str | Path) -> None:
    """A matplotlib figure saved as :func:`replacing` writes, in the format the file name says (``.png``, ``.svg``)."""
    with replacing(path, "wb") as file:
        figure.savefig(file, format=Path(path).suffix.lstrip(".") or "png")


def open_append(path: str | Path, flag: str = "--output", newline: str | None = None) -> IO:
    """``path`` opened to add lines at its end (created if missing; what is written, redacted), refusing a symbolic
    or a hard link with an :class:`OutputError` that names ``flag``, the command's option for it."""
    path = Path(path)
    refuse_link(path, flag)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as error:
        if os.path.islink(path):  # made between the check and the open
            raise OutputError(_link_message(path, "a symbolic link", flag)) from None
        raise write_error(path, error) from None
    if os.fstat(descriptor).st_nlink > 1:
        os.close(descriptor)
        raise OutputError(_link_message(path, "a hard link (the file has another name too)", flag))
    return cast(IO, redaction.RedactingText(os.fdopen(descriptor, "a", encoding="utf-8", newline=newline)))


def refuse_link(path: str | Path, flag: str = "--output") -> None:
    """An :class:`OutputError` when ``path`` is a symbolic link or a file with another name (a hard link): faithkit
    writes into no file that is also somewhere else. A missing path is fine."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(status.st_mode):
        raise OutputError(_link_message(Path(path), "a symbolic link", flag))
    if stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
        raise OutputError(_link_message(Path(path), "a hard link (the file has another name too)", flag))


def _link_message(path: Path, what: str, flag: str) -> str:
    return (
        f"{path} is {what}, and faithkit writes no file through a link (it would change the file it points "
        f"at); remove the link, or choose another {flag}"
    )


class WriteFailed(OutputError):
    """A write the system refused (a full disk, a read-only folder, ...): ``path`` and the system's ``reason``."""

    def __init__(self, path: Path, reason: str):
        super().__init__(
            f"cannot write {path}: {reason}; nothing of it was written (a file there before is "
            f"unchanged); free space or fix the folder's permissions and rerun the same command"
        )
        self.path, self.reason = path, reason


def write_error(path: Path, error: OSError) -> WriteFailed:
    return WriteFailed(path, error.strerror or str(error))


def _umask() -> int:
    """The process's umask (reading it means setting it, so it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def output_folder(path: str | Path, flag: str) -> Iterator[Path]:
    """``path`` as a command's output folder, held by this run alone for the block: made if missing; an existing
    file (or a link to one) there is one :class:`OutputError` line; ``path/.lock`` is held (a second run on the folder
    stops at once with a line saying so) and removed at the end. Write into it with this module's writers and
    :func:`replacing_folder`, which never follow a link in it."""
    from filelock import FileLock, Timeout

    path = Path(path)
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        what = "a link to a file (or to nothing)" if path.is_symlink() else "a file"
        raise OutputError(f"{flag} {path} is {what}, not a folder; give a folder (a new one is made)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot make the folder {path}: {error.strerror}; choose another {flag}") from None
    lock_path = path / ".lock"
    refuse_link(lock_path, flag)
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise OutputError(
            f"another run is writing {path} (it holds {lock_path}); wait for it to finish, or choose another {flag}"
        ) from None
    try:
        yield path
    finally:
        lock_path.unlink(missing_ok=True)  # before the release: a run that opened it meanwhile finds it held
        lock.release()


@contextmanager
def replacing_folder(path: str | Path) -> Iterator[Path]:
    """A new folder beside ``path`` for a library to save into (``save_pretrained``), put in ``path``'s place when
    the block ends without an error: what was there (a folder, or a link, never what it points at) is removed. So
    no file of it is written through a link, and a crash leaves the old folder or the new one."""
    path = Path(path)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes it private; the saved folder is shared as any new one is
    except OSError as error:
        raise write_error(path, error) from None
    try:
        yield staging
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
        os.replace(staging, path)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(error, OSError) and not isinstance(error, OutputError):
            raise write_error(path, error) from None
        raise
