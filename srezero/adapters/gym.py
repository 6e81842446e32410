"""Gymnasium front end: ``srezero/Incident-v0``, a text-in, text-out environment.

Importing this module registers the environment, so the usual call names the module::

    import gymnasium as gym
    env = gym.make("srezero.adapters.gym:srezero/Incident-v0", task="inc-001", seed=3)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step('get_alerts()')

The environment wraps :class:`srezero.episode.Episode` one to one: an action is anything the core
API accepts (a text call such as ``search_logs(service="database")``, a kubectl-style command, a
JSON/dict tool call); the observation is the text an agent reads; rewards, ``terminated`` (after
``resolve``), ``truncated`` (a budget ran out) and ``info["result"]`` at the end are the core's, so
a seeded Gymnasium rollout equals the same actions through ``srezero.make``.

Seeding follows Gymnasium: ``reset(seed=s)`` plays episode seed ``s``; the first ``reset()``
without a seed plays the ``seed`` given to ``gym.make``; later unseeded resets draw the next
episode seed from ``self.np_random``, so a run is reproducible from its first seed.
``reset(options={"task": ID})`` switches task.
"""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import orjson
from gymnasium import spaces

import srezero
from srezero.adapters._common import tool_declarations
from srezero.tools.parse import MAX_ACTION_CHARS

ENV_ID = "srezero/Incident-v0"
#: Longer observations are cut (none of the curated tasks comes near this).
OBS_MAX_CHARS = 100_000
_TRUNCATED_MARK = "\n... [observation truncated]"

# The observation/action alphabet: printable ASCII, tab and newline, Latin-1 (degrees, micro,
# plus-minus...), typographic punctuation, arrows, comparison signs, box drawing and block elements
# (trees and sparklines in tool output). Anything else a tool echoes back becomes "?".
_RANGES = ((0x09, 0x0A), (0x20, 0x7E), (0xA0, 0xFF), (0x2010, 0x2022), (0x2026, 0x2026), (0x2190, 0x2193),
           (0x2248, 0x2248), (0x2260, 0x2260), (0x2264, 0x2265), (0x2500, 0x259F))
CHARSET = "".join(chr(c) for lo, hi in _RANGES for c in range(lo, hi + 1))
_OUTSIDE = re.compile("[^" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _RANGES) + "]")


def sanitize(text: str) -> str:
    """Map text into the observation space: unknown characters become ``?``, overlong text is cut."""
    text = _OUTSIDE.sub("?", text)
    if len(text) > OBS_MAX_CHARS:
        text = text[: OBS_MAX_CHARS - len(_TRUNCATED_MARK)] + _TRUNCATED_MARK
    return text


class IncidentEnv(gym.Env[str, str]):
    """srezero/Incident-v0: one seeded production incident to investigate, mitigate and diagnose.

    **Description.** A simulated system (load balancer, web servers, cache, primary and replica
    database, message queue and workers on a few nodes) has been paged. One or more seeded faults
    (or none, on a control task) have dynamics in simulated time; ambient noise and distractors
    make red herrings. ``task`` is a curated id, a ``gen:`` variant id or a path to a task file.

    **Actions.** ``Text``: a tool call such as ``search_logs(service="database", pattern="timeout")``
    or a kubectl-style command; a dict ``{"tool": ..., "args": {...}}`` is accepted too (outside the
    declared space). Read tools cost simulated seconds; write tools change the system after
    realistic delays; ``submit_diagnosis`` records root causes; ``resolve`` ends the episode.
    ``info["tool_specs"]`` at reset lists every tool with its JSON schema. An invalid action is an
    error observation and counts as an invalid action; it never raises.

    **Observations.** ``Text``: what the tool printed (at reset: the page). ``info`` carries ``ok``,
    ``error``, ``step``, ``steps_left``, ``time_left_s`` and ``data`` (the structured tool result as
    JSON text, so that vector envs can batch it whatever the tool).

    **Rewards.** ``reward="shaped"`` (default, for training): potential-based shaping that pays for
    surfacing evidence and restoring health and charges wrong writes when they happen;
    ``reward="sparse"``: 0 until the last step. Either way an episode's rewards sum to
    ``marks / 100`` (docs/scoring.md). Shaping carries information about the hidden state:
    evaluate with ``sparse``.

    **Episode end.** ``terminated`` after ``resolve``; ``truncated`` when the step or simulated-time
    budget runs out. The final ``info["result"]`` is the scored result (marks, success, diagnosis,
    mitigation, ground truth). Seeding: see the module docstring.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 - Gymnasium reads this class attribute

    def __init__(self, task: str | None = None, seed: int = 0, render_mode: str | None = None,
                 reward: str = "shaped") -> None:
        if task is None:
            ids = ", ".join(t.id for t in srezero.list_tasks())
            raise ValueError(f"pass task=ID to gym.make (one of: {ids}) or a path to a task file")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        self.task = task
        self._seed = int(seed)
        self.reward_mode = reward  # "shaped" for training; "sparse" to evaluate (shaping reveals hidden state)
        self._episode = srezero.make(task, self._seed, reward)
        self._started = False
        self._last_text = ""
        self.observation_space = spaces.Text(OBS_MAX_CHARS, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_ACTION_CHARS, min_length=1, charset=CHARSET)

    @property
    def episode(self) -> srezero.Episode:
        """The core episode behind this environment (trajectory, result, tool specs).

        For harness code only: it also exposes ``ground_truth()`` and ``oracle_plan()``, which an
        agent under evaluation must never see."""
        return self._episode

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        options = dict(options or {})
        unknown = sorted(set(options) - {"task"})
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; the only option is 'task'")
        if "task" in options:  # build first: a bad task id leaves this env as it was
            episode = srezero.make(options["task"], self._seed, self.reward_mode)
            self.task, self._episode = options["task"], episode
        if seed is None and not self._started:
            seed = self._seed  # the first episode plays the seed given to gym.make
        super().reset(seed=seed)
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self._started = True
        obs, info = self._episode.reset(seed=episode_seed)
        info = {**info, "tool_specs": tool_declarations(), **self._obs_info(obs)}
        self._last_text = sanitize(obs.text)
        return self._last_text, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._episode.step(action)
        info = {**info, **self._obs_info(obs)}
        self._last_text = sanitize(obs.text)
        return self._last_text, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> str | None:
        """``ansi``: the last observation's text."""
        return self._last_text if self.render_mode == "ansi" else None

    @staticmethod
    def _obs_info(obs: srezero.Observation) -> dict[str, Any]:
        # ``data`` is JSON text: its shape differs by tool (a list, a dict), and Gymnasium's vector envs
        # batch info key by key, which fails when one sub-environment's value is a dict and another's not
        return {"ok": obs.ok, "error": obs.error, "step": obs.step, "steps_left": obs.steps_left,
                "time_left_s": obs.time_left_s,
                "data": orjson.dumps(obs.data, default=str, option=orjson.OPT_SERIALIZE_NUMPY).decode()}


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:IncidentEnv")
