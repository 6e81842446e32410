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

Seeding follows Gymnasium: ``reset(seed=s)`` plays episode seed ``s``. Without a seed given to
``gym.make`` (the default), an unseeded ``reset()`` seeds ``self.np_random`` from OS entropy, so the
sub-environments of a vector env play different episodes; with ``seed=s``, the first unseeded
``reset()`` plays ``s``. Later unseeded resets draw the next episode seed from ``self.np_random``,
so a run is reproducible from its first seed, which ``info["seed"]`` reports at every reset.
Do not pass ``seed=`` to ``gym.make_vec``: every sub-environment gets the same one and they play
the same episodes forever; seed the vector env instead (``envs.reset(seed=5)`` seeds them 5, 6,
7, ...). Seeds are non-negative integers below 2**63 (numpy's too); anything else is a ValueError.
``reset(options={"task": ID})`` switches task.

``AsyncVectorEnv`` needs ``shared_memory=False``: Gymnasium cannot pass ``Text`` observations
through shared memory, and this env refuses it rather than let every observation be garbage.
``copy.deepcopy``, ``pickle`` and :meth:`IncidentEnv.clone` rebuild the env by replaying its seed
and actions (a live simulation holds generators, which cannot be copied).
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
import orjson
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils.shared_memory import create_shared_memory

import srezero
from srezero.adapters._common import tool_declarations
from srezero.episode import _checked_seed
from srezero.tools.parse import MAX_ACTION_CHARS, recordable

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


class ObservationText(spaces.Text):
    """The observation space: a ``Text`` space that ``AsyncVectorEnv`` cannot put in shared memory.

    Gymnasium 1.x reads a ``Text`` space out of shared memory once, when ``AsyncVectorEnv`` starts,
    as immutable strings, so every later observation would be the empty buffer decoded (100,000
    tabs). Refusing here turns that silent garbage into Gymnasium's own error at construction,
    which tells the user to pass ``shared_memory=False``."""


@create_shared_memory.register(ObservationText)
def _refuse_shared_memory(space: ObservationText, n: int = 1, ctx: ModuleType = multiprocessing) -> None:
    raise CustomSpaceError("srezero observations are Text, which Gymnasium 1.x cannot read back from shared "
                           "memory: use AsyncVectorEnv(..., shared_memory=False) or "
                           "gym.make_vec(..., vector_kwargs={'shared_memory': False})")


def _seed(seed: Any, where: str) -> int | None:
    """None, or an integer (numpy's too) from 0 to 2**63 - 1 (``srezero.episode.MAX_SEED``); anything else
    is a ValueError (a float or a string was rounded or parsed, True played seed 1)."""
    if seed is None:
        return None
    try:
        value = _checked_seed(seed)
    except ValueError:
        raise ValueError(f"{where} must be None or an integer from 0 to 2**63 - 1, not {seed!r}") from None
    return value


def _make_episode(task: Any, seed: int, reward: str, where: str, gamma: float = 1.0) -> srezero.Episode:
    """``srezero.make`` with every bad task value as a ValueError that says which argument was wrong."""
    if isinstance(task, os.PathLike):
        task = os.fspath(task)
    if not isinstance(task, str | srezero.TaskSpec) or not task:
        raise ValueError(f"{where} must be a task id such as 'inc-001', a 'gen:' variant id or a path to a task "
                         f"file, not {task!r}")
    try:
        return srezero.make(task, seed, reward, gamma)
    except KeyError as exc:  # an unknown id: the core's message, under the exception type Gymnasium users expect
        raise ValueError(f"{where}: {exc.args[0]}") from None


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

    **Observations.** ``Text``: what the tool printed (at reset: the page). ``info`` carries, at reset
    and after every step, ``ok``, ``error``, ``tool``, ``invalid``, ``step``, ``steps_left``,
    ``sim_time_s``, ``time_left_s`` and ``data`` (the structured tool result as JSON text, so that
    vector envs can batch it whatever the tool); at reset also ``seed``, ``briefing`` and
    ``tool_specs``. The budget left is in ``info`` only: a policy that should see it must be given it.

    **Rewards.** ``reward="shaped"`` (default, for training): potential-based shaping that pays for
    surfacing evidence and restoring health and charges wrong writes when they happen;
    ``reward="sparse"``: 0 until the last step. With the default ``gamma=1`` an episode's rewards
    sum to ``marks / 100`` (docs/scoring.md). A learner that discounts should pass its discount as
    ``gamma``: a step then pays ``gamma * phi_t - phi_(t-1)`` and the final step ``marks / 100 -
    phi``, so the discounted return is ``gamma ** (T - 1) * marks / 100``, as with sparse rewards,
    and stalling instead of resolving never pays (with ``gamma=1`` and a discounting learner, it
    can). Shaping carries information about the hidden state: evaluate with ``sparse``.

    **Episode end.** ``terminated`` after ``resolve``; ``truncated`` when the step or simulated-time
    budget runs out (Gymnasium's convention for a time limit). A budget end is scored like a
    resolve, so its final reward is final: a learner that bootstraps a value on truncation (most
    actor-critic and Q-learning code) should treat it as terminal, or pass
    ``budget_terminates=True`` to get ``terminated`` instead. The final ``info["result"]`` is the
    scored result (marks, success, diagnosis, mitigation, ground truth). A step after the end
    repeats the end's flags with reward 0 and changes nothing. The horizon is the task's step
    budget (``env.unwrapped.episode.spec.budget.steps``; 40 on every curated task), so the
    registration sets no ``max_episode_steps``: a shorter ``TimeLimit`` cuts an episode before it is
    scored. Seeding: see the module docstring.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 - Gymnasium reads this class attribute

    def __init__(self, task: str | None = None, seed: int | None = None, render_mode: str | None = None,
                 reward: str = "shaped", gamma: float = 1.0, budget_terminates: bool = False) -> None:
        if task is None:
            ids = ", ".join(t.id for t in srezero.list_tasks())
            raise ValueError(f"pass task=ID to gym.make (one of: {ids}) or a path to a task file")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None")
        self.render_mode = render_mode
        # None (the default): unseeded resets use OS entropy, so a vector env's sub-environments differ
        self._seed = _seed(seed, "seed")
        self.reward_mode = reward  # "shaped" for training; "sparse" to evaluate (shaping reveals hidden state)
        self.gamma = gamma  # the learner's discount: shaping built for it cannot make stalling pay
        self.budget_terminates = bool(budget_terminates)  # a budget end is final: say so to bootstrapping learners
        self._episode = _make_episode(task, self._seed or 0, reward, "task", gamma)  # reset() sets the episode seed
        self.task = task
        self._started = False
        self._last_text = ""
        self._actions: list[Any] = []  # every action since the last reset: clone() replays them
        self.observation_space = ObservationText(OBS_MAX_CHARS, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_ACTION_CHARS, min_length=1, charset=CHARSET)

    @property
    def episode(self) -> srezero.Episode:
        """The core episode behind this environment (trajectory, result, tool specs).

        For harness code only: it also exposes ``ground_truth()`` and ``oracle_plan()``, which an
        agent under evaluation must never see."""
        return self._episode

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"reset options must be a dict such as {{'task': 'inc-003'}}, not {type(options).__name__}")
        options = dict(options or {})
        seed = _seed(seed, "reset seed")  # before anything changes: Gymnasium took True as 1, refused np.int64
        unknown = sorted(map(repr, set(options) - {"task"}))
        if unknown:
            raise ValueError(f"unknown reset option(s) {', '.join(unknown)}; the only option is 'task'")
        if "task" in options:  # build first: a bad task id leaves this env as it was
            episode = _make_episode(options["task"], self._seed or 0, self.reward_mode, "reset option 'task'",
                                    self.gamma)
            self.task, self._episode = options["task"], episode
        if seed is None and not self._started:
            seed = self._seed  # the first episode plays the seed given to gym.make (None: OS entropy)
        super().reset(seed=seed)
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self._started = True
        self._actions = []
        obs, info = self._episode.reset(seed=episode_seed)
        info = {**info, "seed": episode_seed, "tool_specs": tool_declarations(), "tool": None, "invalid": False,
                "sim_time_s": 0.0, **self._obs_info(obs)}  # the keys of every step's info, for vector envs
        self._last_text = sanitize(obs.text)
        return self._last_text, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._episode.step(action)  # raises only before reset()
        self._actions.append(_snapshot(action))
        info = {**info, **self._obs_info(obs)}
        self._last_text = sanitize(obs.text)
        if self.budget_terminates and truncated:
            terminated, truncated = True, False
        return self._last_text, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> str | None:
        """``ansi``: the last observation's text."""
        return self._last_text if self.render_mode == "ansi" else None

    def clone(self) -> IncidentEnv:
        """An independent copy in the same state, rebuilt by replaying this episode's seed and actions.

        The copy continues exactly as this env would (the simulation is deterministic), including
        later unseeded resets. It costs one reset plus one step per action so far. Changes made to
        :attr:`episode` directly (e.g. ``finish()``) rather than through ``step`` are not replayed."""
        return copy.deepcopy(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # A live episode holds SimPy generators, which neither pickle nor deepcopy can copy; the
        # episode is a function of (task, seed, actions), so a copy is rebuilt from those instead.
        config = {"task": self.task, "seed": self._seed, "render_mode": self.render_mode, "reward": self.reward_mode,
                  "gamma": self.gamma, "budget_terminates": self.budget_terminates}
        state = {"started": self._started, "episode_seed": self._episode.seed, "actions": self._actions,
                 "np_random": self._np_random, "np_random_seed": self._np_random_seed, "spec": self.spec}
        return _rebuild, (config, state)

    @staticmethod
    def _obs_info(obs: srezero.Observation) -> dict[str, Any]:
        # ``data`` is JSON text: its shape differs by tool (a list, a dict), and Gymnasium's vector envs
        # batch info key by key, which fails when one sub-environment's value is a dict and another's not
        return {"ok": obs.ok, "error": obs.error, "step": obs.step, "steps_left": obs.steps_left,
                "time_left_s": obs.time_left_s,
                "data": orjson.dumps(obs.data, default=str, option=orjson.OPT_SERIALIZE_NUMPY).decode()}


def _snapshot(action: Any) -> Any:
    """A copy of ``action`` for replay, so a caller mutating its dict later cannot change a clone."""
    if isinstance(action, str):
        return action
    try:
        return copy.deepcopy(action)
    except Exception:  # an uncopyable object is an invalid action anyway: replay an equally invalid stand-in
        return recordable(action)


def _rebuild(config: dict[str, Any], state: dict[str, Any]) -> IncidentEnv:
    env = IncidentEnv(**config)
    env.spec = state["spec"]
    if state["started"]:
        obs, _ = env._episode.reset(seed=state["episode_seed"])
        env._started, env._last_text = True, sanitize(obs.text)
        for action in state["actions"]:
            env.step(action)
    rng: np.random.Generator | None = state["np_random"]
    env._np_random = copy.deepcopy(rng)  # after the replay, which does not touch it: continues like the original
    env._np_random_seed = state["np_random_seed"]
    return env


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:IncidentEnv")
