"""The play session's logic, free of any terminal: actions, help, hints and the saved record.

A :class:`PlaySession` wraps one :class:`~srezero.episode.Episode`. Every line a person types is
either a shell command (``help``, ``hint``, ``page``, ``quit``; these cost nothing and are not
actions) or an action handed to ``env.step`` unchanged, so a person is scored exactly like an agent:
the same parser (text calls and kubectl-style commands), the same costs, the same oracles.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from srezero.errors import near_misses
from srezero.play.text import WIDTH, help_row
from srezero.tools.registry import ToolSpec, load_tools

if TYPE_CHECKING:
    from srezero.episode import Episode, Observation

SHELL_COMMANDS = ("help", "hint", "page", "quit", "exit")
#: Spellings of the shell commands people type anyway (any case, with ``()``, with trailing words):
#: recognised as the command, never sent to the environment as an (invalid, step-costing) action.
SHELL_ALIASES = {"help": "help", "h": "help", "?": "help", "man": "help",
                 "hint": "hint", "hints": "hint",
                 "page": "page",
                 "quit": "quit", "exit": "quit", "q": "quit", ":q": "quit", "bye": "quit", "logout": "quit"}
_SHELL_LINE = re.compile(r"^\s*(:q|\?|[A-Za-z]+)(?![\w.-])\s*(?:\(\s*(.*?)\s*\)\s*$|(.*))$", re.S)
SHELL_HELP = {
    "help": "help: the list of tools and shell commands. help TOOL: one tool's arguments, cost and an example. "
            "help kubectl: the kubectl-style commands. Free: not an action.",
    "hint": "hint: the task's next hint, mildest first (only with --hints). Free, but recorded with the step and "
            "time it was taken. hint N shows hint N again once you have taken it.",
    "page": "page: show the page (the alert that woke you) again. Free.",
    "quit": "quit: leave. The first quit warns that the incident is still open; the second (or Ctrl-D twice at a "
            "terminal) ends the episode as it stands: it is scored as stopped early (truncated, not resolved), "
            "the debrief follows and the record is saved. Nothing is saved if you took no action. "
            "Also: exit, q.",
}
ACTION_ECHO_CHARS = 100
KIND_ORDER = ("read", "write", "submit")
KIND_TITLES = {"read": "Read tools (look around; cost a few simulated seconds)",
               "write": "Write tools (change the system; effects take simulated time)",
               "submit": "Submit tools (diagnose, then resolve to end the incident)"}


@dataclass
class Reply:
    """What the shell should print for one line, and how."""

    text: str
    kind: str = "info"  # info | ok | error | hint | help
    header: str = ""
    done: bool = False


@dataclass
class PlaySession:
    """One person's episode: the environment, the hints they took, and the record at the end."""

    env: Episode
    seed: int
    hints_enabled: bool = False
    player: str = ""
    hints_used: list[dict[str, Any]] = field(default_factory=list)
    obs: Observation | None = None
    info: dict[str, Any] = field(default_factory=dict)
    quit_requested: bool = False
    agent_label: str = ""  # the label the saved record got (set by save)
    width: int = WIDTH  # the columns help is laid out for (the shell sets the terminal's)

    @property
    def stopped_early(self) -> bool:
        """Ended with quit / end of input, before resolve() or the budget."""
        return self.env.end_cause() == "stopped"

    def start(self) -> str:
        """Reset the episode and return the page text."""
        self.obs, _ = self.env.reset(seed=self.seed)
        return self.obs.text

    # ------------------------------------------------------------------ state for the prompt
    @property
    def done(self) -> bool:
        """The episode has ended (resolved, out of budget, or stopped with quit) and has a result."""
        return bool(self.obs is not None and (self.obs.done or getattr(self.env, "result", None)))

    @property
    def steps_left(self) -> int:
        return self.obs.steps_left if self.obs is not None else 0

    @property
    def time_left_s(self) -> float:
        return self.obs.time_left_s if self.obs is not None else 0.0

    @property
    def step_budget(self) -> int:
        return self.env.spec.budget.steps

    @property
    def time_budget_s(self) -> float:
        return float(self.env.spec.budget.time_s)

    # ------------------------------------------------------------------ one line
    def handle(self, line: str) -> Reply:
        """Interpret one typed line. Never raises for bad input: errors come back as replies."""
        line = line.strip()
        if not line:
            return Reply("")
        shell = shell_command(line)
        if shell is not None:
            command, rest = shell
            if command == "quit":
                return self._quit()
            self.quit_requested = False
            if command == "help":
                return Reply(self.help(rest), "help")
            if command == "hint":
                return self.hint(rest)
            return Reply(f"PAGE {self.env.world.stamp(self.env.t0)}: {self.env.briefing.page}", "info")
        self.quit_requested = False
        return self.act(line)

    def act(self, action: str) -> Reply:
        if self.done:
            return Reply("the episode has ended", "error", done=True)
        self.obs, _reward, terminated, truncated, self.info = self.env.step(action)
        step = self.env.trajectory[-1]
        header = f"step {step['step']} · {_clock(step['sim_time_s'])} since the page"
        if step["tool"] and step["ok"]:
            header += f" · {_call(step['tool'], step['args'])}"
        else:  # an invalid call's args were not kept: show what was typed; the error says what was wrong
            header += f" · {_shorten(action, ACTION_ECHO_CHARS)}"
        ended = terminated or truncated
        if ended and truncated and not terminated:
            header += " · budget exhausted"
        return Reply(self.obs.text, "ok" if self.obs.ok else "error", header, ended)

    def _quit(self) -> Reply:
        if self.done:
            return Reply("bye", done=True)
        if self.quit_requested:
            return self.give_up()
        self.quit_requested = True
        if not self.env.trajectory:  # nothing to score or keep: say so, not that a record will be saved
            return Reply("no action taken yet: type quit again (or Ctrl-D) to leave; there is nothing to score, so "
                         "no debrief and no record", "error")
        return Reply("the incident is still open. To finish it, submit_diagnosis(...) then resolve(). "
                     "Type quit again (or Ctrl-D) to stop here: the episode ends as it stands (scored as stopped "
                     "early, not resolved), then the debrief, and the record is saved.", "error")

    def give_up(self) -> Reply:
        """End the episode as it stands (truncated, like a harness that stops early), keeping the work.

        With no action taken there is nothing to score or keep: the session just ends.
        """
        if self.done:
            return Reply("bye", done=True)
        if not self.env.trajectory:
            return Reply("no action taken: leaving without a debrief or a record", "error", done=True)
        result = self.env.finish()
        self.info = {**self.info, "result": copy.deepcopy(result)}
        return Reply("stopped before resolve(): the episode ends here as it stands (truncated); the debrief follows",
                     "error", done=True)

    # ------------------------------------------------------------------ hints
    def hint(self, arg: str = "") -> Reply:
        """The next hint. ``hint N`` shows hint N again if it was taken (free, not recorded again).
        A number that is not a hint, or one ahead of the next, is refused and uses up nothing."""
        if not self.hints_enabled:
            return Reply("hints are off; start the session with --hints to use them", "error")
        hints = self.env.spec.hints
        n, total = len(self.hints_used), len(hints)
        if not hints:
            return Reply("this task has no hints", "hint")
        arg = arg.strip()
        # words after "hint" ("hint please") still mean the next hint; a number means that hint
        wanted = int(arg) if re.fullmatch(r"[+-]?\d{1,9}", arg) else None
        usage = (f"there {'is 1 hint' if total == 1 else f'are {total} hints'}; you have taken {n}. "
                 "hint shows the next one" + ((", hint 1 the one you took again" if n == 1 else
                                               f", hint 1-{n} one you took again") if n else ""))
        if wanted is not None and not 1 <= wanted <= total:
            return Reply(f"no hint {wanted}: {usage}", "error")
        if wanted is not None and wanted <= n:
            return Reply(f"hint {wanted}/{total} (again): {hints[wanted - 1]}", "hint")
        if n >= total:
            return Reply(f"no more hints (all {total} used; hint 1-{total} shows one again)", "hint")
        if wanted is not None and wanted != n + 1:
            return Reply(f"hints come in order, mildest first: the next is hint {n + 1} (type hint); "
                         "nothing was used up", "error")
        sim = self.env.trajectory[-1]["sim_time_s"] if self.env.trajectory else 0.0
        self.hints_used.append({"hint": n + 1, "step": len(self.env.trajectory), "sim_time_s": sim, "text": hints[n]})
        return Reply(f"hint {n + 1}/{total}: {hints[n]}", "hint")

    # ------------------------------------------------------------------ help
    def help(self, topic: str = "") -> str:
        tools = load_tools()
        topic = topic.strip().strip("'\"")
        if not topic:
            return general_help(tools, self.hints_enabled, self.width)
        shell = shell_command(topic)
        if shell is not None and topic.lower() not in tools:
            return SHELL_HELP[shell[0]]
        if topic.lower() in ("kubectl", "k"):
            from srezero.tools.kubectl import SUPPORTED

            return ("kubectl-style commands map onto the same tools (same cost, same scoring):\n  kubectl "
                    + "\n  kubectl ".join(SUPPORTED)
                    + "\nDeployments: service names or lb, web, cache, db, mq, worker. See docs/play.md.")
        spec = tools.get(topic.removesuffix("()")) or tools.get(topic.removesuffix("()").lower())
        if spec is None:
            close = near_misses(topic.removesuffix("()").lower(), [*tools, "kubectl", *SHELL_HELP], n=1)
            maybe = f"did you mean help {close[0]}? " if close else ""
            return f"no help for {topic!r}; {maybe}type help for the list of tools"
        return tool_help(spec)

    # ------------------------------------------------------------------ the end
    @property
    def base_label(self) -> str:
        return f"human:{self.player}" if self.player else "human"

    def record(self, agent: str | None = None) -> dict[str, Any]:
        """The episode record in the sweep/runner shape (docs/records.md), agent "human" (or ``agent``)."""
        result = self.info.get("result") or self.env.result
        agent = agent or self.base_label
        rec: dict[str, Any] = {"schema": 1, "agent": agent, "agent_name": "human", "task_id": self.env.spec.id,
                               "seed": self.seed, "episode_id": self.env.episode_id, "status": "ok" if result else "agent_error",
                               "error": None if result else "the session ended before the episode did",
                               "result": result, "trajectory": self.env.trajectory, "hints": self.hints_used}
        try:
            from srezero.sweep.records import task_hash

            rec["task_hash"] = task_hash(self.env.spec)
        except ImportError:  # pragma: no cover - records module ships with srezero
            pass
        return rec

    def save(self, path: str | Path) -> Path:
        """Write the record to ``path``, or, if that file exists, to the next free name (``-2``, ``-3``...):
        a record is never overwritten. Another attempt at the same task and seed in that folder gets its
        own agent label (:func:`attempt_label`), so the folder still makes one report. Returns where it
        went; raises OSError when it cannot be written."""
        from srezero.sweep.records import dumps, write_atomic

        p = reserve_free_path(Path(path))
        try:
            self.agent_label = attempt_label(p, self.base_label, self.env.spec.id, self.seed)
            write_atomic(p, dumps(self.record(self.agent_label)))
        except OSError:
            with contextlib.suppress(OSError):
                if p.stat().st_size == 0:
                    p.unlink()
            raise
        return p

    def save_or_fallback(self, path: str | Path) -> tuple[Path, str]:
        """:meth:`save`, and when that fails a temporary file instead: the transcript is never lost.
        Returns the path written and a warning (empty when the wanted place worked)."""
        from srezero.sweep.records import dumps

        try:
            return self.save(path), ""
        except OSError as exc:
            import tempfile

            self.agent_label = self.base_label
            fd, tmp = tempfile.mkstemp(prefix=f"srezero-play-{self.env.spec.id}-{self.seed}-", suffix=".json")
            with os.fdopen(fd, "wb") as fh:
                fh.write(dumps(self.record()))
            return Path(tmp), f"could not save the record to {path} ({exc.strerror or exc}); saved it to {tmp} instead"


def attempt_label(path: Path, base: str, task_id: str, seed: int) -> str:
    """``base`` (``human:ada``), or ``base#2``, ``base#3``... when a record in ``path``'s folder already
    holds that label for the same task and seed: a second attempt is a separate entry in a report (which
    refuses two records of one agent, task and seed) instead of breaking it."""
    taken: set[str] = set()
    for other in sorted(path.parent.glob("*.json")):
        if other == path:
            continue
        try:
            data = orjson.loads(other.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(data, dict) and data.get("task_id") == task_id and data.get("seed") == seed:
            taken.add(str(data.get("agent")))
    if base not in taken:
        return base
    n = 2
    while f"{base}#{n}" in taken:
        n += 1
    return f"{base}#{n}"


def shell_command(line: str) -> tuple[str, str] | None:
    """``(command, rest)`` when ``line`` is a shell command in any spelling people try (``HELP``,
    ``Help get_status``, ``quit()``, ``exit()``, ``q``, ``hint 2``, ``page me``, ``quit now``); else None."""
    m = _SHELL_LINE.match(line)
    if m is None:
        return None
    command = SHELL_ALIASES.get(m.group(1).lower())
    if command is None:
        return None
    rest = (m.group(2) if m.group(2) is not None else m.group(3) or "").strip()
    return command, rest


def reserve_free_path(path: Path) -> Path:
    """``path`` if no file is there yet, else ``stem-2.json``, ``stem-3.json``...: the first name free.
    The name is reserved by creating the file exclusively, so two sessions never pick the same one."""
    path = Path(os.path.abspath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        candidate = path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        try:
            with open(candidate, "x"):
                return candidate
        except FileExistsError:
            n += 1


def cost_text(spec: ToolSpec) -> str:
    """What a tool costs in simulated time: its fixed cost, or for ``wait`` the seconds waited."""
    if spec.name == "wait":
        seconds = spec.schema["properties"]["seconds"]
        return (f"as many simulated seconds as you wait ({seconds['minimum']}-{seconds['maximum']}, "
                f"default {seconds['default']})")
    return f"{spec.cost_s:g} simulated seconds"


def general_help(tools: dict[str, ToolSpec], hints: bool, width: int = WIDTH) -> str:
    """The tool list and the shell's commands, laid out for ``width`` columns (prose is left for the
    shell to wrap; the tables are laid out here, where their columns are known)."""
    from srezero.episode import INVALID_COST_S

    lines = ["Type a tool call such as get_status(service=\"worker\"), or a kubectl-style command such as "
             "kubectl logs worker --tail 20 (help kubectl lists them). Tab completes names; arrows recall history.",
             f"Every action costs one step and the simulated seconds shown; an invalid one costs a step and "
             f"{INVALID_COST_S:g} s.", ""]
    for kind in KIND_ORDER:
        lines.append(KIND_TITLES[kind] + ":")
        for spec in tools.values():
            if spec.kind == kind:
                cost = "  Ns" if spec.name == "wait" else f"{spec.cost_s:>3.0f}s"
                lines += help_row(spec.signature(), cost, spec.description, width)
        lines.append("")
    lines.append("  (Ns: wait(seconds=N) costs the N seconds you wait.)")
    lines.append("")
    lines.append("Shell commands (free, not actions): help [TOOL|kubectl|COMMAND], page (show the page again), "
                 + ("hint (the next hint, mildest first; recorded), " if hints else "")
                 + "quit.")
    return "\n".join(lines)


def tool_help(spec: ToolSpec) -> str:
    props = spec.schema.get("properties", {})
    required = set(spec.schema.get("required", []))
    lines = [spec.signature(), f"  {spec.description}", f"  kind: {spec.kind}, costs {cost_text(spec)}"]
    if spec.params:
        lines.append("  arguments:")
    for p in spec.params:
        prop = props.get(p.name, {})
        typ = _type_of(prop)
        default = "" if p.name in required or p.default is inspect.Parameter.empty else f" (default {p.default!r})"
        lines.append(f"    {p.name}: {typ}{default}  {prop.get('description', '')}".rstrip())
    if spec.name == "submit_diagnosis":
        lines += diagnosis_help()
    lines.append(f"  example: {example_call(spec)}")
    return "\n".join(lines)


def diagnosis_help() -> list[str]:
    """The claim format: categories with their meaning and the entity forms (docs/scoring.md)."""
    from srezero.faults.base import CATEGORIES

    lines = ["  each root cause: {\"entity\": ..., \"category\": ..., \"detail\": ...}", "  categories:"]
    width = max(len(c) for c in CATEGORIES)
    lines += [f"    {name:{width}}  {meaning}" for name, meaning in CATEGORIES.items()]
    # placeholders only: a concrete key or name here could be some task's answer (tests hold this)
    lines += ["  entity, one of these forms:",
              "    service     <service>          a service from get_topology",
              "    replica     <replica>          a pod from get_status",
              "    node        <node>             a node from get_topology",
              "    disk        <node>/<device>    (or <node>:<device>), a device from node_diagnostics",
              "    config key  <service>.<key>    (or <service>:<key>), a key from get_config",
              "  detail: the concrete detail (the key and its bad value, the device, the release, the limit).",
              "  An empty list means no fault (a false alarm, or a transient that is over). The last submission counts."]
    return lines


def _type_of(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(repr(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(_type_of(p) for p in prop["anyOf"])
    typ = prop.get("type", "any")
    bounds = [f"{k.replace('imum', '')} {prop[k]}" for k in ("minimum", "maximum") if k in prop]
    if "exclusiveMinimum" in prop:
        bounds.insert(0, f"> {prop['exclusiveMinimum']}")
    if typ == "array":
        return "list of {entity, category, detail}" if "$ref" in (prop.get("items") or {}) else "list"
    return typ + (f" ({', '.join(bounds)})" if bounds else "")


#: Example argument values for help. Names that identify something (a table, a column, a device, a key)
#: are placeholders, as one could be some task's answer; services are in every task's topology anyway.
EXAMPLE_VALUES: dict[str, Any] = {"service": "worker", "target": "web_server", "entity": "database",
                                  "node": "<node>", "metric": "error_rate", "pattern": "timeout", "key": "<key>",
                                  "value": "<value>", "note": "mitigated", "summary": "...", "device": "<device>",
                                  "table": "<table>", "column": "<column>", "replicas": 4, "pid": 12345,
                                  "size_gb": 200.0, "seconds": 120}


def example_value(name: str, prop: dict[str, Any]) -> Any:
    """A value of the right type for an argument: an enum's first choice, a number for numbers..."""
    if "enum" in prop:
        return prop["enum"][0]
    if "anyOf" in prop:
        types = [p.get("type") for p in prop["anyOf"]]
        return EXAMPLE_VALUES.get(name, f"<{name}>") if "string" in types else example_value(name, prop["anyOf"][0])
    typ = prop.get("type")
    known = EXAMPLE_VALUES.get(name)
    if typ == "integer":
        return known if isinstance(known, int) else int(prop.get("minimum", 1))
    if typ == "number":
        return float(known) if isinstance(known, int | float) else 1.0
    if typ == "boolean":
        return True
    if typ == "array":
        return []
    return known if isinstance(known, str) else f"<{name}>"


def example_call(spec: ToolSpec) -> str:
    """A call with every required argument, each of a valid type (the values are only placeholders)."""
    if spec.name == "submit_diagnosis":  # placeholders only: a real-looking claim could be some task's answer
        return ('submit_diagnosis(root_causes=[{"entity": "<service.key>", "category": "misconfiguration", '
                '"detail": "<the key and its bad value>"}], summary="...")')
    props = spec.schema.get("properties", {})
    required = set(spec.schema.get("required", []))
    names = [p.name for p in spec.params if p.name in required] or (["seconds"] if spec.name == "wait" else [])
    parts = [f"{n}={example_value(n, props.get(n, {}))!r}" for n in names]
    return f"{spec.name}({', '.join(parts)})"


def _call(tool: str, args: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"{tool}({text[:120]}{'...' if len(text) > 120 else ''})"


def _shorten(action: Any, limit: int) -> str:
    text = " ".join(str(action).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}m{s % 60:02d}s"
