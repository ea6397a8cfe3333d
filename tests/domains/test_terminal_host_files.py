"""Host-side files of the terminal sandbox cannot be redirected by another local user.

The attack these tests replay (issue 30, item 1): an ordinary user predicts the session
directory of a root ``collect`` from ``/proc/<pid>/stat``, makes it first, and then swaps
what root writes there for links, so root writes an action's text into any file.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from agentworld.domains.terminal import roots
from agentworld.domains.terminal.hostfiles import (
    UnsafeDirectoryError,
    check_parent,
    private_dir,
    write_file,
)
from agentworld.domains.terminal.sandbox import write_identity

OTHER_UID = 65534  # nobody
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as a second user needs root")


def _as_other_user(fn) -> None:
    """Run ``fn()`` in a child process as uid/gid :data:`OTHER_UID`; fail if it fails."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 1
        try:
            os.setgroups([])
            os.setresgid(OTHER_UID, OTHER_UID, OTHER_UID)
            os.setresuid(OTHER_UID, OTHER_UID, OTHER_UID)
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def shared_tmp():
    """A world-writable sticky directory, like ``/tmp`` (made there: pytest's own temporary
    directories cannot be entered by another user)."""
    base = Path(tempfile.mkdtemp(prefix="aw-shared-"))
    base.chmod(0o1777)
    yield base
    shutil.rmtree(base)


@as_root
def test_a_session_directory_made_first_by_another_user_is_not_used(shared_tmp: Path):
    pid = os.getpid()
    predicted = shared_tmp / f"agentworld-run-{pid}-{roots._start_time(pid)}"
    _as_other_user(lambda: (predicted.mkdir(), predicted.chmod(0o777)))
    session = Path(roots._session_dir(str(shared_tmp), pid))
    try:
        info = session.lstat()
        assert session != predicted and session.name.startswith(predicted.name + "-")
        assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o711
        assert list(predicted.iterdir()) == []  # nothing of root's went into the planted one
    finally:
        roots._session_dir.cache_clear()
        session.rmdir()


@as_root
def test_a_parent_another_user_could_rename_in_is_refused(tmp_path: Path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # world-writable, no sticky bit
    with pytest.raises(UnsafeDirectoryError, match="no sticky bit"):
        private_dir(open_dir, "x-")
    owned = tmp_path / "owned"
    owned.mkdir()
    os.chown(owned, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeDirectoryError, match=f"owned by uid {OTHER_UID}"):
        check_parent(owned)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(UnsafeDirectoryError, match="not a directory"):
        check_parent(link)


def test_write_file_replaces_a_planted_link_and_never_follows_it(tmp_path: Path):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "action").symlink_to(target)
    write_file(inbox, "action", b"echo pwned\n", 0o644)
    assert target.read_text() == "precious\n"
    written = inbox / "action"
    assert not written.is_symlink() and written.read_text() == "echo pwned\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    assert sorted(p.name for p in inbox.iterdir()) == ["action"]  # no temporary left
    linked = tmp_path / "linked"
    linked.symlink_to(inbox)
    with pytest.raises(OSError):  # the directory itself may not be a link
        write_file(linked, "action", b"x", 0o644)


def test_identity_files_are_not_written_through_planted_entries(tmp_path: Path):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    meta = private_dir(tmp_path, "meta-")
    (meta / "passwd").symlink_to(target)
    (meta / "home").symlink_to(tmp_path)  # a directory link: mkdir must refuse it
    with pytest.raises(FileExistsError):
        write_identity(meta, None)
    assert target.read_text() == "precious\n"
    assert not (tmp_path / "agent").exists()


@as_root
def test_sandbox_uids_avoid_subordinate_ranges(monkeypatch):
    from agentworld.domains.terminal import sandbox

    assert all(1_000_000_000 <= sandbox.sandbox_uid() < 1_001_000_000 for _ in range(100))
    taken = ((1_000_000_000, 1_000_999_000),)  # all but the last 1,000 uids
    monkeypatch.setattr(sandbox, "_subordinate_ranges", lambda: taken)
    assert all(sandbox.sandbox_uid() >= 1_000_999_000 for _ in range(50))
