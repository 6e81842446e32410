"""The interactive front end: a ``cmd.Cmd`` loop with readline completion, history and colour.

The prompt always shows the steps and simulated minutes left. Every line goes to
:meth:`PlaySession.handle`; this module only decides how to print the reply. History persists in
``$SREZERO_PLAY_HISTORY`` or ``$XDG_STATE_HOME/srezero/play_history`` (``~/.local/state/...``).
"""

from __future__ import annotations

import cmd
import contextlib
import os
import sys
import textwrap
from pathlib import Path
from typing import IO, Any

from srezero.play import complete as comp
from srezero.play.session import PlaySession, Reply
from srezero.play.style import Style, columns, safe_input, safe_streams
from srezero.play.text import MIN_WIDTH, WIDTH

HISTORY_LINES = 1000


def history_path() -> Path:
    explicit = os.environ.get("SREZERO_PLAY_HISTORY")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "srezero" / "play_history"


class PlayShell(cmd.Cmd):
    """Reads lines, hands them to the session, prints replies; ends when the episode does."""

    intro = ""
    doc_header = ""

    def __init__(self, session: PlaySession, style: Style, stdin: IO[str] | None = None,
                 stdout: IO[str] | None = None, interactive: bool | None = None) -> None:
        super().__init__(stdin=stdin, stdout=stdout)
        self.session = session
        self.style = style
        self.finished = False
        self._matches: list[str] = []
        self._readline: Any = None
        if stdin is not None:
            self.use_rawinput = False
        #: a person at a terminal: Ctrl-D asks for confirmation. Otherwise (piped input) every command
        #: is echoed after the prompt, so the transcript on screen reads like a session.
        self.interactive = _isatty(stdin or sys.stdin) if interactive is None else interactive

    # ------------------------------------------------------------------ prompt
    @property
    def prompt(self) -> str:  # type: ignore[override]
        s = self.session
        left = s.time_left_s
        low = s.steps_left <= max(2, s.step_budget // 5) or left <= s.time_budget_s / 5
        budget = f"{s.steps_left}/{s.step_budget} steps · {int(left // 60)}m{int(left % 60):02d}s left"
        wrap = self._readline is not None and sys.stdin.isatty()  # readline's width markers, only under readline
        return (self.style.paint(f"[{budget}]", "red" if low else "yellow", prompt=wrap)
                + self.style.paint(" srezero> ", "bold", prompt=wrap))

    # ------------------------------------------------------------------ the loop
    def preloop(self) -> None:
        if not self.use_rawinput or self._readline is not None:  # not again after a ^C
            return
        try:
            import readline
        except ImportError:  # pragma: no cover - readline is missing on some platforms
            return
        self._readline = readline
        readline.set_completer_delims(comp.DELIMS)
        if "libedit" in (readline.__doc__ or ""):  # pragma: no cover - macOS system Python
            readline.parse_and_bind("bind ^I rl_complete")
        else:  # list the choices on the first Tab: a value's opening quote alone is no progress worth a beep
            readline.parse_and_bind("set show-all-if-ambiguous on")
        with contextlib.suppress(OSError, ValueError):
            readline.read_history_file(history_path())
        readline.set_history_length(HISTORY_LINES)

    def postloop(self) -> None:
        if self._readline is None:
            return
        path = history_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._readline.write_history_file(path)
        except OSError:
            pass

    def cmdloop(self, intro: Any = None) -> None:
        while not self.finished:
            try:
                super().cmdloop(intro)
            except KeyboardInterrupt:
                self.stdout.write("^C (type quit to leave)\n")
            else:
                return

    def precmd(self, line: str) -> str:
        if not self.interactive and line != "EOF":
            self.stdout.write(line + "\n")
        return line

    def onecmd(self, line: str) -> bool:
        self.session.width = help_width(self.stdout)  # help is laid out, and then fitted, at this width
        if line == "EOF":
            self.stdout.write("\n")
            # At a terminal Ctrl-D is confirmed like quit; a closed stream cannot confirm: stop now.
            # Either way the work is kept: the episode ends as it stands, with a debrief and a record.
            reply = self.session.handle("quit") if self.interactive else self.session.give_up()
        else:
            reply = self.session.handle(line)
        self.show(reply)
        if reply.done:
            self.finished = True
        return reply.done

    def emptyline(self) -> bool:
        return False

    def show(self, reply: Reply) -> None:
        s = self.style
        if reply.header:
            colour = "red" if reply.kind == "error" else "cyan"
            self.stdout.write(s.paint(fit(f"── {reply.header}", columns(self.stdout)), colour) + "\n")
        if not reply.text:
            return
        # tool output is data, kept as it is; prose fits the terminal, and help also a pipe or file
        width = self.session.width if reply.kind == "help" else columns(self.stdout)
        text = fit(reply.text, width) if reply.kind != "ok" else reply.text
        if reply.kind == "error":
            text = s.red(text)
        elif reply.kind == "hint":
            text = s.blue(text, "bold")
        self.stdout.write(text + "\n")

    # ------------------------------------------------------------------ completion
    def complete(self, text: str, state: int) -> str | None:
        if state == 0:
            rl = self._readline
            if rl is None:
                return None
            line = rl.get_line_buffer()
            begidx = rl.get_begidx()
            env = self.session.env
            try:
                self._matches = comp.candidates(line[:begidx], text, comp.Names.of(env.world))
            except Exception:  # completion must never kill the session
                self._matches = []
        return self._matches[state] if state < len(self._matches) else None


def help_width(stream: Any) -> int:
    """Columns for help: the terminal's, or :data:`~srezero.play.text.WIDTH` when output goes to a pipe or
    file (help is read there too, and its table rows run to 200 characters unwrapped)."""
    return max(MIN_WIDTH, columns(stream) or WIDTH)


def fit(text: str, width: int | None) -> str:
    """Prose for a terminal ``width`` columns wide (None: as it is), wrapped between words. Each line keeps
    its indentation; an indented line's continuation hangs four further in, so help tables stay legible.
    A word is never split (a name or a call stays whole, so it can be copied)."""
    if not width:
        return text
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip(" "))
        hang = min(indent + 4, width // 2) if indent else 0
        out += textwrap.wrap(line.strip(" "), width, initial_indent=" " * indent, subsequent_indent=" " * hang,
                             break_long_words=False, break_on_hyphens=False) or [line]
    return "\n".join(out)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def run(session: PlaySession, style: Style, out: IO[str] | None = None) -> bool:
    """Page the player, run the loop; True when the episode ended (and a debrief is due)."""
    stream = out or sys.stdout
    safe_streams(sys.stdout, sys.stderr, stream)
    safe_input(sys.stdin)
    page = session.start()
    width = columns(stream)
    first, *rest = fit(page, width).splitlines() or [""]
    stream.write(style.paint(first, "red", "bold") + "\n")
    stream.write("".join(line + "\n" for line in rest))
    stream.write(style.dim(fit("Type help for the tools, help TOOL for one, "
                               + ("hint for a hint, " if session.hints_enabled else "")
                               + "Tab to complete, quit to stop.", width)) + "\n")
    shell = PlayShell(session, style, stdout=stream)
    shell.cmdloop()
    stream.flush()  # what follows may be written through another wrapper of the same file (click.echo)
    return session.done
