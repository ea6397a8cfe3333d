"""The visible screen: a ``pyte`` terminal emulator fed by the pty, rendered as text.

:class:`TtyScreen` is ``pyte.Screen`` plus the two things the programs of this domain need of
an xterm: the alternate screen (private modes 1049, 1047 and 47; vim, less and top draw on it,
and the shell's screen comes back when they exit, as in xterm and tmux) and answers to the
terminal's reports (device attributes, cursor position), which it queues for the pty.
:func:`render` gives the observation text as ``tmux capture-pane`` prints a pane: each row
without trailing spaces, trailing blank rows dropped.
"""

from __future__ import annotations

import copy
from typing import Any

import pyte

_ALTERNATE = {1049, 1047, 47}
_DECCKM = 1 << 5  # private mode 1, as pyte stores private modes (shifted by 5)
ROWS, COLUMNS = 24, 80  # tmux's default window size


class TtyScreen(pyte.Screen):
    """A ``pyte.Screen`` with the alternate screen and report answers.

    Args:
        columns: Width in characters.
        lines: Height in rows.
    """

    def __init__(self, columns: int = COLUMNS, lines: int = ROWS) -> None:
        self.replies = bytearray()  # what the terminal answers to the program's queries
        self._saved: tuple[Any, Any] | None = None  # (buffer, cursor) of the main screen
        super().__init__(columns, lines)

    def set_mode(self, *mode_list: int, **kwargs: Any) -> None:
        """Set modes; private 1049/1047/47 switch to a cleared alternate screen (1049 also saves
        the cursor)."""
        if kwargs.get("private") and _ALTERNATE & set(mode_list):
            if self._saved is None:
                self._saved = (copy.deepcopy(self.buffer), copy.copy(self.cursor))
                self.erase_in_display(2)
            mode_list = tuple(m for m in mode_list if m not in _ALTERNATE)
        super().set_mode(*mode_list, **kwargs)

    def reset_mode(self, *mode_list: int, **kwargs: Any) -> None:
        """Reset modes; private 1049/1047/47 bring the main screen (and its cursor) back."""
        if kwargs.get("private") and _ALTERNATE & set(mode_list):
            if self._saved is not None:
                buffer, cursor = self._saved
                self._saved = None
                self.buffer.clear()
                self.buffer.update(buffer)
                self.cursor = cursor
                self.dirty.update(range(self.lines))
            mode_list = tuple(m for m in mode_list if m not in _ALTERNATE)
        super().reset_mode(*mode_list, **kwargs)

    def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
        """Set text attributes; a private form (``CSI > 4 ; 2 m``, xterm's key modifier
        options, which vim sends) sets none."""
        if not private:
            super().select_graphic_rendition(*attrs)

    def write_process_input(self, data: str) -> None:
        """Queue a report for the program (sent to the pty by the driver)."""
        self.replies += data.encode()

    @property
    def application_cursor(self) -> bool:
        """Whether cursor keys send their application sequences (DECCKM is set)."""
        return _DECCKM in self.mode

    @property
    def alternate(self) -> bool:
        """Whether the alternate screen is shown (a full-screen program runs)."""
        return self._saved is not None


def render(screen: pyte.Screen) -> str:
    """The screen as text: its rows with trailing spaces removed, trailing blank rows dropped,
    joined by ``\\n`` (no final newline), as ``tmux capture-pane -p`` prints a pane."""
    rows = [row.rstrip() for row in screen.display]
    while rows and not rows[-1]:
        rows.pop()
    return "\n".join(rows)


def make_stream(screen: pyte.Screen) -> pyte.ByteStream:
    """A byte stream feeding ``screen`` (UTF-8, invalid bytes replaced)."""
    return pyte.ByteStream(screen)


__all__ = ["COLUMNS", "ROWS", "TtyScreen", "make_stream", "render"]
