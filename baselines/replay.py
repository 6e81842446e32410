"""The replay agent: replays a recorded trajectory, then ends the episode as the record did.

Source (the ``path`` option, ``--replay`` on the command line, or the ``SREZERO_REPLAY`` environment
variable), one of:

* an episode record (``srezero run --out x.json`` or a sweep's ``seed-NNNN.json``): its
  trajectory's actions are replayed as they were, whatever the episode;
* an action file (``.jsonl`` or ``.txt``): one action per line, a JSON object or a text call;
  blank lines and lines starting with ``#`` are skipped;
* a run directory (or its ``episodes/`` folder, or one agent's folder in it): the record of the
  same episode (matched on the briefing's opaque episode id) is replayed; an episode with no record
  is an agent error. With several agents in the directory, name one with ``agent``.

When the actions run out it resolves, unless the source is a record of an episode that ended
truncated without a resolve (an MCP session that was abandoned, a harness's step cap): then it stops
the episode the same way (:class:`~srezero.agents.protocol.StopEpisode`). Replaying a deterministic
agent's record on the same task and seed reproduces its result exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from srezero.agents.protocol import StopEpisode
from srezero.episode import Briefing, Observation
from srezero.replay import ended_without_resolve, recorded_actions

ENV_VAR = "SREZERO_REPLAY"


def _load_lines(path: Path) -> list[Any]:
    out: list[Any] = []
    for line in path.read_text(encoding="utf-8").splitlines():
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
    return out


class ReplayAgent:
    def __init__(self, path: str | None = None, agent: str | None = None) -> None:
        src = path or os.environ.get(ENV_VAR)
        if not src:
            raise ValueError(f"the replay agent needs a source: --replay PATH or {ENV_VAR}=PATH")
        self.path = Path(src)
        if not self.path.exists():
            raise ValueError(f"replay source {self.path} does not exist")
        self.agent = agent
        # each episode's script: the actions, and whether to stop (not resolve) when they run out
        self._by_episode: dict[str, tuple[list[Any], bool]] | None = None
        self._fixed: tuple[list[Any], bool] | None = None
        if self.path.is_file():
            if self.path.suffix == ".json":
                record = orjson.loads(self.path.read_bytes())
                self._fixed = recorded_actions(record), ended_without_resolve(record)
            else:
                self._fixed = _load_lines(self.path), False

    def settings(self) -> dict[str, Any]:
        return {"source": self.path.name, "agent": self.agent}

    def _index(self) -> dict[str, tuple[list[Any], bool]]:
        if self._by_episode is None:
            root = self.path / "episodes" if (self.path / "episodes").is_dir() else self.path
            files = sorted(root.rglob("seed-*.json")) or sorted(root.rglob("*.json"))
            index: dict[str, tuple[list[Any], bool]] = {}
            for p in files:
                rec = orjson.loads(p.read_bytes())
                if not isinstance(rec, dict) or "episode_id" not in rec:
                    continue
                if self.agent and rec.get("agent") != self.agent:
                    continue
                eid = rec["episode_id"]
                if eid in index:
                    raise ValueError(f"{self.path}: two records for episode {eid}; choose one agent with agent=...")
                index[eid] = recorded_actions(rec), ended_without_resolve(rec)
            self._by_episode = index
        return self._by_episode

    def reset(self, task_info: Briefing, seed: int, tool_specs: list[dict[str, Any]]) -> None:
        script = self._fixed if self._fixed is not None else self._index().get(task_info.episode_id)
        if script is None:
            raise LookupError(f"{self.path} has no record of episode {task_info.episode_id}")
        self.queue = list(script[0])
        self.stop_at_end = script[1]

    def act(self, observation: Observation) -> Any:
        if not self.queue:
            if self.stop_at_end:
                raise StopEpisode("the recorded episode ended here without a resolve")
            return {"tool": "resolve", "args": {"note": "replay finished"}}
        return self.queue.pop(0)
