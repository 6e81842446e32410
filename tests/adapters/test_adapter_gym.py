"""The Gymnasium front end: API conformance, equality with the core API, seeding, vector envs."""

from __future__ import annotations

import copy
import pickle
import warnings

import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv  # noqa: E402

import srezero  # noqa: E402
from srezero.adapters.gym import CHARSET, ENV_ID, IncidentEnv, sanitize  # noqa: E402
from tests.adapters.conftest import SEED, TASK, core_rollout  # noqa: E402

MAKE_ID = f"srezero.adapters.gym:{ENV_ID}"


def test_check_env_passes_for_every_curated_task() -> None:
    ids = [t.id for t in srezero.list_tasks()]
    assert ids
    for tid in ids:
        env = gym.make(MAKE_ID, task=tid, seed=7)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped)
        assert not [str(w.message) for w in caught], tid
        env.close()


def test_seeded_rollout_equals_core_api(oracle) -> None:
    # the oracle plan with an invalid call, a text call and a kubectl command mixed in
    actions = ['query_metrics(target=3)', "get_topology()", "kubectl get pods", *oracle.actions]
    ref = core_rollout(TASK, SEED, actions)
    env = gym.make(MAKE_ID, task=TASK, seed=SEED)
    obs, info = env.reset()
    assert obs == ref.page and info["briefing"]["episode_id"].startswith("ep-")
    assert {t["name"] for t in info["tool_specs"]} == {t["name"] for t in srezero.tool_specs()}
    texts, rewards, ends = [], [], []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        texts.append(obs)
        rewards.append(reward)
        ends.append((terminated, truncated))
        if terminated or truncated:
            break
    assert texts == ref.texts and rewards == ref.rewards and ends == ref.ends
    assert ends[-1] == (True, False)
    assert info["result"] == ref.result and info["result"]["invalid_actions"] == 1
    assert sum(rewards) == pytest.approx(ref.result["marks"] / 100)


def test_numpy_seeds_work_everywhere_and_bools_nowhere() -> None:
    """A review: gym.make took np.int64 but reset(seed=np.int64) raised; reset(seed=True) played seed 1."""
    import numpy as np

    env = gym.make(MAKE_ID, task=TASK, seed=np.int64(SEED))
    assert env.reset()[1]["seed"] == SEED
    assert env.reset(seed=np.int64(SEED + 1))[1]["seed"] == SEED + 1
    with pytest.raises(ValueError, match="reset seed must be"):
        env.reset(seed=True)


def test_reset_info_has_every_key_a_step_info_has() -> None:
    """Vector envs batch info key by key: a key missing at reset was marked absent for that row."""
    env = gym.make(MAKE_ID, task=TASK, seed=SEED)
    _, reset_info = env.reset()
    _, *_, step_info = env.step("get_alerts()")
    assert set(step_info) - {"result"} <= set(reset_info)
    assert reset_info["tool"] is None and reset_info["invalid"] is False and reset_info["sim_time_s"] == 0.0


@pytest.mark.parametrize("gamma", [1.0, 0.99, 0.9])
def test_discounted_shaping_pays_what_the_sparse_reward_pays(gamma: float) -> None:
    """A review: with a discounting learner, shaping built for gamma = 1 made stalling pay (0.031 against
    0.002 for resolving at once with nothing fixed). Built for the learner's gamma, the discounted
    return of every trajectory is gamma ** (T - 1) * marks / 100, exactly what sparse rewards give."""
    env = gym.make(MAKE_ID, task="inc-002", gamma=gamma)
    env.reset(seed=3)
    plan = env.unwrapped.episode.oracle_plan()
    for actions in (plan, [*plan[1:4], "resolve()"], plan[1:4], ["scale(service='worker', replicas=1)", *plan]):
        env.reset(seed=3)
        ret, discount, steps = 0.0, 1.0, 0
        for action in [*actions, *["get_alerts()"] * 40]:
            _, reward, terminated, truncated, info = env.step(action)
            ret, discount, steps = ret + discount * reward, discount * gamma, steps + 1
            if terminated or truncated:
                break
        assert ret == pytest.approx(gamma ** (steps - 1) * info["result"]["marks"] / 100, abs=1e-9), actions
    with pytest.raises(ValueError, match="gamma must be a number in \\(0, 1\\]"):
        srezero.make(TASK, SEED, gamma=0.0)


def test_budget_truncates_with_the_score_in_info() -> None:
    env = gym.make(MAKE_ID, task=TASK, seed=SEED)
    env.reset()
    for _ in range(env.unwrapped.episode.spec.budget.steps):
        _obs, _reward, terminated, truncated, info = env.step("get_alerts()")
        if terminated or truncated:
            break
    assert truncated and not terminated
    assert info["result"]["truncated"] is True and "marks" in info["result"]
    final = gym.make(MAKE_ID, task=TASK, seed=SEED, budget_terminates=True)  # for learners that bootstrap
    final.reset()
    for _ in range(final.unwrapped.episode.spec.budget.steps):
        _obs, _reward, terminated, truncated, info = final.step("get_alerts()")
    assert terminated and not truncated and info["result"]["truncated"] is True


def test_sampled_actions_are_invalid_steps_not_crashes() -> None:
    env = gym.make(MAKE_ID, task=TASK, seed=SEED)
    env.reset(seed=3)
    env.action_space.seed(0)
    for _ in range(5):
        obs, _reward, _terminated, _truncated, info = env.step(env.action_space.sample())
        assert info["ok"] is False and obs.startswith("error:")
        assert obs in env.observation_space


def test_unseeded_resets_replay_from_the_first_seed() -> None:
    def pages(env: gym.Env) -> list[str]:
        return [env.reset()[0] for _ in range(3)]

    a = pages(gym.make(MAKE_ID, task=TASK, seed=11))
    b = pages(gym.make(MAKE_ID, task=TASK, seed=11))
    assert a == b and len(set(a)) == 3
    assert a[0] == core_rollout(TASK, 11, []).page  # the first episode plays the make() seed


def test_reset_options_switch_task_and_reject_unknown_keys() -> None:
    env = gym.make(MAKE_ID, task="inc-001", seed=2)
    obs, _ = env.reset(seed=2, options={"task": TASK})
    assert obs == core_rollout(TASK, 2, []).page
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"difficulty": "hard"})
    with pytest.raises(ValueError, match="task=ID"):
        IncidentEnv()
    for bad, message in (("inc-999", "unknown task 'inc-999'"), (None, "not None"), ("", "not ''"),
                         (3, "not 3"), ("gen:nope", "not a valid generated task id")):
        with pytest.raises(ValueError, match=message):  # leaves the env on its task, not half-switched
            env.reset(options={"task": bad})
        assert env.unwrapped.task == TASK and env.unwrapped.episode.spec.id == TASK
    with pytest.raises(ValueError, match="reset options must be a dict"):
        env.reset(options=["task"])
    with pytest.raises(ValueError, match="task must be a task id"):
        IncidentEnv(task=7)
    with pytest.raises(ValueError, match="unknown task"):
        IncidentEnv(task="inc-999")
    for seed in (-1, True, 2.5, "7", "abc"):  # a review: 2.5 played seed 2, "7" seed 7
        with pytest.raises(ValueError, match="seed must be None or an integer from 0"):
            IncidentEnv(task=TASK, seed=seed)
    with pytest.raises(ValueError, match="from 0 to 2\\*\\*63 - 1"):  # vector envs batch seeds as int64
        IncidentEnv(task=TASK, seed=2**63)
    for key in ("Description", "Actions", "Observations", "Rewards", "Episode end"):  # the env card
        assert f"**{key}.**" in IncidentEnv.__doc__


def test_a_refused_seed_with_a_task_option_leaves_the_running_episode_alone() -> None:
    actions = ["get_alerts()", 'get_status(service="database")']
    ref = core_rollout(TASK, SEED, actions)
    env = gym.make(MAKE_ID, task=TASK)
    env.reset(seed=SEED)
    env.step(actions[0])
    for bad in (-1, 1.5, True):  # refused seeds; the task switch must not happen first
        with pytest.raises(ValueError, match="reset seed must be None or an integer from 0"):
            env.reset(seed=bad, options={"task": "inc-003"})
        assert env.unwrapped.task == TASK and env.unwrapped.episode.spec.id == TASK
    assert env.step(actions[1])[0] == ref.texts[1]  # the episode goes on; the step does not raise


def test_sync_vector_env_steps_each_episode_like_the_core(oracle) -> None:
    other = core_rollout(TASK, SEED + 1)
    venv = SyncVectorEnv([lambda: gym.make(MAKE_ID, task=TASK) for _ in range(2)])
    obs, _ = venv.reset(seed=[SEED, SEED + 1])
    assert obs == (oracle.page, other.page)
    plans = (oracle.actions, other.actions)
    results: dict[int, dict] = {}
    for i in range(max(map(len, plans))):
        actions = tuple(p[i] if i < len(p) else "get_alerts()" for p in plans)
        obs, _rewards, _terminated, _truncated, info = venv.step(actions)
        for k in range(2):
            if i < len(plans[k]) and info.get("_result", [False, False])[k]:
                results[k] = _unbatch(info["result"], k)
            if i < len(plans[k]):
                assert obs[k] == (oracle, other)[k].texts[i]
    for got, ref in zip((results[0], results[1]), (oracle.result, other.result)):
        for key in ("marks", "success", "steps", "invalid_actions", "evidence_coverage", "ttd_s", "ttm_s"):
            assert got[key] == ref[key], key
        assert got["diagnosis"]["score"] == ref["diagnosis"]["score"]
    venv.close()


def test_sync_vector_env_batches_info_when_sub_environments_call_different_tools() -> None:
    import json

    venv = SyncVectorEnv([lambda: gym.make(MAKE_ID, task=TASK) for _ in range(2)])
    venv.reset(seed=[SEED, SEED + 1])
    for actions in (("get_alerts()", 'get_config(service="database")'), ('get_config(service="database")', "bogus"),
                    ("get_topology()", "get_alerts()")):
        *_, info = venv.step(actions)
        for k, action in enumerate(actions):
            assert info["ok"][k] == (action != "bogus")
            data = json.loads(info["data"][k])
            assert data is None if action == "bogus" else data is not None
    venv.close()


def _unbatch(batched: dict, k: int) -> dict:
    """Sub-environment k's dict out of a vector env's info (dicts are batched key by key)."""
    return {key: _unbatch(v, k) if isinstance(v, dict) else v[k] for key, v in batched.items()
            if not key.startswith("_")}


def test_sanitize_keeps_simulator_text_and_maps_the_rest() -> None:
    text = "p99 ▁▂▃█ 12 ms ≤ 30 °C\n└─ ok"
    assert sanitize(text) == text
    assert sanitize("a\u202eb\U0001F600") == "a?b?"
    assert set(sanitize("x" * 200_000)) <= set(CHARSET)


def test_unseeded_vector_resets_play_different_episodes_and_a_seed_stays_deterministic() -> None:
    venv = gym.make_vec(MAKE_ID, num_envs=3, vectorization_mode="sync", task=TASK)
    obs, info = venv.reset()  # no seed anywhere: OS entropy per sub-environment
    assert len(set(info["seed"])) == 3 and len(set(obs)) == 3
    for k, sub in enumerate(venv.envs):  # info["seed"] is the episode seed each one played
        assert sub.unwrapped.episode.seed == info["seed"][k]
        assert obs[k] == core_rollout(TASK, int(info["seed"][k]), []).page
    venv.close()

    def seeded() -> tuple[tuple[str, ...], list[int]]:
        v = gym.make_vec(MAKE_ID, num_envs=2, vectorization_mode="sync", task=TASK)
        pages, inf = v.reset(seed=5)
        v.step(("resolve()",) * 2)
        v.step(("get_alerts()",) * 2)  # next-step autoreset: the follow-up seeds come from np_random
        nxt = [e.unwrapped.episode.seed for e in v.envs]
        v.close()
        return pages, [int(s) for s in inf["seed"]] + nxt

    first, second = seeded(), seeded()
    assert first == second and first[1][:2] == [5, 6]
    assert gym.make(MAKE_ID, task=TASK).reset()[1]["seed"] != gym.make(MAKE_ID, task=TASK).reset()[1]["seed"]


def test_async_vector_env_without_shared_memory_equals_sync() -> None:
    fns = [lambda: gym.make(MAKE_ID, task=TASK) for _ in range(2)]
    sync = SyncVectorEnv(fns)
    asyn = AsyncVectorEnv(fns, shared_memory=False, context="fork")
    try:
        assert sync.reset(seed=[SEED, SEED + 1])[0] == asyn.reset(seed=[SEED, SEED + 1])[0]
        for actions in (("get_alerts()", "get_topology()"), ("bogus", 'get_config(service="database")')):
            s_obs, s_rew, *_ = sync.step(actions)
            a_obs, a_rew, *_ = asyn.step(actions)
            assert s_obs == a_obs and list(s_rew) == list(a_rew)
            assert all(len(o) < 20_000 for o in a_obs)  # real text, not a decoded empty buffer
    finally:
        asyn.close()
        sync.close()


def test_async_vector_env_with_shared_memory_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="shared_memory=False") as caught:
        AsyncVectorEnv([lambda: gym.make(MAKE_ID, task=TASK)], shared_memory=True)
    assert "shared_memory=False" in str(caught.value.__cause__)


def test_deepcopy_pickle_and_clone_continue_like_the_original() -> None:
    def fresh() -> gym.Env:
        env = gym.make(MAKE_ID, task=TASK, seed=3)
        env.reset()
        action = {"tool": "get_config", "args": {"service": "database"}}
        env.step("get_alerts()")
        env.step(action)
        action["args"]["service"] = "nope"  # mutating a stepped action later must not change the copy
        env.step('restart(target="database")')
        return env

    def go_on(env: gym.Env) -> list:
        out = [env.step(a)[:4] for a in ("wait(seconds=120)", 'get_status(service="database")', "resolve()")]
        return [*out, env.reset()[0], env.unwrapped.episode.trajectory]  # the next unseeded reset too

    reference = go_on(fresh())
    for copier in (copy.deepcopy, lambda e: pickle.loads(pickle.dumps(e)), lambda e: e.unwrapped.clone()):
        original = fresh()
        twin = copier(original)
        assert go_on(twin) == reference
        assert go_on(original) == reference  # the original is untouched by its copy
    unstarted = copy.deepcopy(gym.make(MAKE_ID, task=TASK, seed=4))
    assert unstarted.reset()[0] == core_rollout(TASK, 4, []).page
