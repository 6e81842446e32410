"""The replay agent: replays a recorded trajectory, then ends the episode as the record did.

Source (the ``path`` option, ``--replay`` on the command line, or the ``SREZERO_REPLAY`` environment
variable), one of:

* an episode record (``.json``: ``srezero run --out x.json``, ``srezero play --record``, a sweep's
  ``seed-NNNN.json``): its trajectory's actions are replayed on the episode it records. Another task
  or seed is refused (by :meth:`ReplayAgent.check_episodes`, which ``run`` and ``sweep`` call before
  any episode, or when the episode starts), unless ``any_episode`` (``--agent-arg any_episode=true``)
  says to play its actions there anyway;
* an action file (``.jsonl`` or ``.txt``): one action per line, a JSON object or a text call;
  blank lines and lines starting with ``#`` are skipped; any episode;
* a run directory (or its ``episodes/`` folder, or one agent's folder in it): the record of the
  same episode (matched on the briefing's opaque episode id) is replayed; an episode with no record
  is refused the same way. When several agents recorded the same episodes, name one with ``agent``
  (``--agent-arg agent=NAME``).

Anything else (another kind of file, a JSON file that is no record, a folder without records) is
refused when the agent is created, before any episode. When the actions run out it resolves,
unless the source is a record of an episode that ended truncated without a resolve (an MCP session
that was abandoned, a harness's step cap): then it stops the episode the same way
(:class:`~srezero.agents.protocol.StopEpisode`). Replaying a deterministic agent's record on the
same task and seed reproduces its result exactly.
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from srezero.agents.protocol import StopEpisode
from srezero.episode import Briefing, Observation
from srezero.replay import ended_without_resolve, recorded_actions

ENV_VAR = "SREZERO_REPLAY"
ACTION_FILES = (".jsonl", ".txt")
#: What a source may be, for the error that refuses another one.
ACCEPTED = ("an episode record (.json: `srezero run --out`, `srezero play --record`, a sweep's seed-NNNN.json), "
            "an action file (.jsonl or .txt, one action per line) or a run directory")


@dataclass(frozen=True)
class _Script:
    """One source's actions, whether to stop (not resolve) when they run out, and the episode it records."""

    actions: list[Any]
    stop_at_end: bool
    where: Path
    task_id: str | None = None
    seed: int | None = None
    episode_id: str | None = None

    def names(self) -> str:
        return f"{self.task_id} seed {self.seed}"


def _load_lines(path: Path) -> list[Any]:
    out: list[Any] = []
    for line in _read_text(path).splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("{"):
            try:
                out.append(orjson.loads(s))
                continue
            except orjson.JSONDecodeError:
                pass  # replayed as text: the episode reports it as an invalid action
        out.append(s)
    if out and not any(map(_is_action, out)):  # a file of something else, not a session with typos
        raise ValueError(f"{path}: none of its {len(out)} line(s) is an action such as get_alerts() or "
                         f'{{"tool": "get_alerts", "args": {{}}}}; the replay agent reads {ACCEPTED}')
    return out


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text file; the replay agent reads {ACCEPTED}") from None


def _is_action(action: Any) -> bool:
    from srezero.tools.parse import parse_action
    from srezero.tools.registry import ToolError

    try:
        parse_action(action)
    except ToolError:
        return False
    return True


def _script(record: Any, where: Path) -> _Script | None:
    """A record's script, or None when ``record`` is no episode record (no trajectory)."""
    if not isinstance(record, dict) or not isinstance(record.get("trajectory"), list):
        return None
    seed = record.get("seed")
    return _Script(recorded_actions(record), ended_without_resolve(record), where, record.get("task_id"),
                   seed if isinstance(seed, int) else None, record.get("episode_id"))


def _load_record(path: Path) -> _Script:
    try:
        record = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc}); the replay agent reads {ACCEPTED}") from None
    script = _script(record, path)
    if script is None:
        raise ValueError(f"{path}: not an episode record (no trajectory); the replay agent reads {ACCEPTED}")
    return script


def _seeds_text(seeds: list[int]) -> str:
    shown = ", ".join(map(str, seeds[:6]))
    return f"seed {shown}" if len(seeds) == 1 else f"seeds {shown}{', ...' if len(seeds) > 6 else ''}"


def _some(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


#: Folders read in this process: folder -> (signature, episode id -> agent label -> record). A sweep
#: creates a replay agent per episode, and reading a folder of 1,325 records takes about half a second,
#: so a folder is read once per process and again only when one of its folders changed: every srezero
#: writer renames a finished record into place, which changes the mtime of the folder it lands in.
_FOLDERS: dict[Path, tuple[tuple[tuple[str, int], ...], dict[str, dict[str | None, _Script]]]] = {}


def _signature(root: Path) -> tuple[tuple[str, int], ...]:
    """Every folder under ``root`` (itself included) with its mtime: a record added, replaced or removed
    anywhere changes it (symlinked folders are not followed)."""
    out, stack = [], [str(root)]
    while stack:
        folder = stack.pop()
        out.append((folder, os.stat(folder).st_mtime_ns))
        with os.scandir(folder) as entries:
            stack.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
    return tuple(sorted(out))


def _read_folder(root: Path) -> dict[str, dict[str | None, _Script]]:
    """Each record in ``root`` by episode id and agent label (cached, see :data:`_FOLDERS`); refuses two
    records of one agent for one episode."""
    key = root.resolve()
    signature = _signature(key)
    hit = _FOLDERS.get(key)
    if hit is not None and hit[0] == signature:
        return hit[1]
    files = sorted(root.rglob("seed-*.json")) or sorted(root.rglob("*.json"))
    found: dict[str, dict[str | None, _Script]] = {}
    for p in files:
        try:
            record = orjson.loads(p.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # not a record (a folder may hold other JSON); it cannot be the one to replay
        script = _script(record, p)
        if script is None or not isinstance(record.get("episode_id"), str):
            continue
        label = None if record.get("agent") is None else str(record["agent"])
        same = found.setdefault(record["episode_id"], {})
        if label in same:
            of = f" of agent {label}" if label is not None else ""
            raise ValueError(f"{root}: two records{of} for {script.names()}: {same[label].where} and "
                             f"{p}; give the one to replay with --replay FILE")
        same[label] = script
    # a folder changed in the last seconds may change again within its clock's granularity, unseen
    # (git's "racy clean" case): such a read is not kept
    settled = time.time_ns() - _RACY_NS
    if all(mtime < settled for _, mtime in signature):
        _FOLDERS[key] = (signature, found)
    return found


#: How recent a folder's change must be for a read of it not to be cached (:func:`_read_folder`).
_RACY_NS = 2_000_000_000


def _holdings(scripts: list[_Script]) -> str:
    """What a folder's records cover, briefly: ``inc-001 seeds 0, 1; inc-003 seed 0``."""
    by_task: dict[str, set[int]] = {}
    for s in scripts:
        by_task.setdefault(str(s.task_id), set()).update([] if s.seed is None else [s.seed])
    parts = [f"{t} {_seeds_text(sorted(seeds))}" for t, seeds in sorted(by_task.items())[:8]]
    return "; ".join(parts) + ("; ..." if len(by_task) > 8 else "")


class ReplayAgent:
    def __init__(self, path: str | None = None, agent: str | None = None, any_episode: bool = False) -> None:
        src = path or os.environ.get(ENV_VAR)
        if not src:
            raise ValueError(f"the replay agent needs a source: --replay PATH or {ENV_VAR}=PATH")
        self.path = Path(src)
        if not self.path.exists():
            raise ValueError(f"replay source {self.path} does not exist")
        self.agent = agent
        if not isinstance(any_episode, bool):
            raise ValueError(f"the replay agent's any_episode is true or false, not {any_episode!r}")
        self.any_episode = any_episode
        # checked now, so that a wrong source is an error before any episode rather than one per episode
        self._fixed: _Script | None = None
        self._by_episode: dict[str, _Script] = {}
        if self.path.is_file():
            if self.path.suffix == ".json":
                self._fixed = _load_record(self.path)
            elif self.path.suffix in ACTION_FILES:
                self._fixed = _Script(_load_lines(self.path), False, self.path)
            else:
                kind = f"a {self.path.suffix} file" if self.path.suffix else "a file without an extension"
                raise ValueError(f"{self.path} is {kind}; the replay agent reads {ACCEPTED}")
        else:
            self._by_episode = self._index()

    def settings(self) -> dict[str, Any]:
        return {"source": self.path.name, "agent": self.agent}

    def _index(self) -> dict[str, _Script]:
        """Each episode's record in the folder; refuses a folder where the episode to replay could be
        ambiguous (two agents recorded the same episode), or with nothing to replay."""
        root = self.path / "episodes" if (self.path / "episodes").is_dir() else self.path
        found = _read_folder(root)
        if not found:
            raise ValueError(f"{self.path}: no episode records in this folder; the replay agent reads {ACCEPTED}")
        labels = sorted({label for same in found.values() for label in same if label is not None})
        if self.agent is not None:
            index = {eid: same[self.agent] for eid, same in found.items() if self.agent in same}
            if not index:
                named = ", ".join(labels) or "none (its records carry no agent label)"
                raise ValueError(f"{self.path}: no records of agent {self.agent!r}; the agents recorded there: "
                                 f"{named} (choose one with --agent-arg agent=NAME)")
            return index
        if any(len(same) > 1 for same in found.values()):
            raise ValueError(f"{self.path} holds records of several agents for the same episodes "
                             f"({', '.join(labels)}): choose the one to replay with --agent-arg agent=NAME, "
                             f"e.g. --agent-arg agent={labels[0]} (agent={labels[0]!r} in Python)")
        return {eid: next(iter(same.values())) for eid, same in found.items()}

    def check_episodes(self, episodes: dict[str, str]) -> None:
        """Refuse, before any episode runs, a source that cannot replay all of ``episodes`` (episode id
        -> how to name it, e.g. "inc-001 seed 3"): a folder without their records, or one record of
        another episode. The same checks :meth:`reset` makes, for a whole run at once."""
        if self._fixed is not None:
            if self.any_episode or self._fixed.episode_id is None:
                return
            other = [name for eid, name in episodes.items() if eid != self._fixed.episode_id]
            if other:
                raise ValueError(f"{self.path} records {self._fixed.names()}, not {_some(other)}: replay it "
                                 f"with --task {self._fixed.task_id} --seed {self._fixed.seed}, or add --agent-arg "
                                 "any_episode=true to play its actions on other episodes anyway")
            return
        missing = [name for eid, name in episodes.items() if eid not in self._by_episode]
        if missing:
            of = f" of agent {self.agent}" if self.agent is not None else ""
            raise ValueError(f"{self.path} has no record{of} for {_some(missing)} ({len(missing)} of the "
                             f"{len(episodes)} episode(s) to play); it holds {_holdings(list(self._by_episode.values()))}")

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        if self._fixed is not None:
            script = self._fixed
            # the episode id is all an agent learns of the episode (``seed`` is the agent's own); a record
            # without one (written by hand) cannot be checked
            other = script.episode_id is not None and script.episode_id != task_info.episode_id
            if other and not self.any_episode:
                raise ValueError(f"{self.path} records {script.names()}, another episode than this one: replay "
                                 f"it with --task {script.task_id} --seed {script.seed}, or add --agent-arg "
                                 "any_episode=true to play its actions on this episode anyway")
        else:
            found = self._by_episode.get(task_info.episode_id)
            if found is None:
                of = f" of agent {self.agent}" if self.agent is not None else ""
                raise LookupError(f"{self.path} has no record{of} for this task and seed; it holds "
                                  f"{_holdings(list(self._by_episode.values()))}")
            script = found
        self.queue = copy.deepcopy(script.actions)  # records are shared by the agents of a process
        self.stop_at_end = script.stop_at_end

    def act(self, observation: Observation) -> Any:
        if not self.queue:
            if self.stop_at_end:
                raise StopEpisode("the recorded episode ended here without a resolve")
            return {"tool": "resolve", "args": {"note": "replay finished"}}
        return self.queue.pop(0)
