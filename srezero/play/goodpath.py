"""The debrief's privileged parts: the oracle's plan as "a good path", and what a partial fix still lacked.

Both read the ground truth, so only the debrief (after the episode ended) may call them. The plan
comes from a fresh episode of the same task and seed, reset to the page: the oracle plans from the
world as it was paged, before the player's actions changed it (a restart renames pods, a config edit
changes what the plan would read).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srezero.episode import Episode

#: Arguments the oracle fills with its own name; they mean nothing to a person.
_NOISE_ARGS = {("submit_diagnosis", "summary"), ("resolve", "note")}


@dataclass
class GoodPath:
    """The oracle's whole plan, and each fault's fix steps keyed like the mitigation result
    (``"<primitive>@<target>"``)."""

    plan: list[dict[str, Any]]
    fixes: dict[str, list[dict[str, Any]]]


def good_path(env: Episode) -> GoodPath:
    """The oracle's plan for ``env``'s task and seed (see the module doc for why a fresh episode)."""
    from srezero.episode import Episode

    fresh = Episode(env.spec, env.seed)
    fresh.reset(seed=env.seed)
    assert fresh.world is not None
    fixes = {f"{f.meta.name}@{f.target.name}": f.oracle_fix(fresh.world) for f in fresh.faults}
    return GoodPath(fresh.oracle_plan(), fixes)


def call_text(action: dict[str, Any]) -> str:
    """An action as the text call a person would type: strings in double quotes, JSON for lists."""
    tool = str(action["tool"])

    def value(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return repr(v)
        if isinstance(v, str | list | dict):
            return json.dumps(v, ensure_ascii=False)
        return repr(v)

    args = [f"{k}={value(v)}" for k, v in (action.get("args") or {}).items() if (tool, k) not in _NOISE_ARGS]
    return f"{tool}({', '.join(args)})"


def fault_of(write: dict[str, Any]) -> str | None:
    """The fault primitive a write was judged to work on (from the judge's reason), or None."""
    from srezero.scoring.writes import fault_of_reason

    return fault_of_reason(str(write.get("reason") or ""))


def _done(env: Episode, step: dict[str, Any], writes: list[dict[str, Any]]) -> bool:
    """Whether a fix step of the plan holds at the end: a config value that is safe now (the same
    test the mitigation oracle makes), or for any other write, the player made that write."""
    from srezero.faults.envelopes import healthy
    from srezero.scoring.writes import write_key

    args = step.get("args") or {}
    w = env.world
    if step["tool"] == "set_config" and w is not None and args.get("service") in w.services:
        return healthy(w, str(args["service"]), str(args.get("key")), args.get("value"))
    key = write_key(step["tool"], args)
    return any(write_key(wr["tool"], wr["args"]) == key for wr in writes)


def still_needed(env: Episode, result: dict[str, Any], path: GoodPath, fault: str) -> list[dict[str, Any]] | None:
    """For a fault primitive still in effect at the end: the fix steps of the good path that were not
    done (possibly none: the fix may need time it did not get). None when the fault was neutralised."""
    neutralised = (result.get("mitigation") or {}).get("neutralised") or {}
    open_faults = [k for k, ok in neutralised.items() if k.split("@", 1)[0] == fault and not ok]
    if not open_faults:
        return None
    writes = result.get("writes") or []
    missing: list[dict[str, Any]] = []
    for key in open_faults:
        steps = path.fixes.get(key, [])
        undone = [s for s in steps if s["tool"] != "wait" and not _done(env, s, writes)]
        if undone:  # a wait in the fix is time to let it work: needed again after the missing steps
            missing += [s for s in steps if (s in undone or s["tool"] == "wait") and s not in missing]
    return missing


def why_wrong(env: Episode, result: dict[str, Any], write: dict[str, Any], path: GoodPath | None) -> str:
    """Why a write judged wrong did not help, from what the write judge knew of each fault: it acted
    where no root cause is, or where one is but with something that does not cure it (then the fix that
    would have), or after the causes were already cured."""
    from srezero.scoring.naming import accepted_names, norm
    from srezero.tools.registry import target_of

    if not env.faults:
        return "nothing was broken (a false alarm), so any change only adds risk"
    if str(write.get("reason") or "").startswith("right place, unsafe value"):
        return "the right setting, but the value is outside what is safe for it"
    ttm = result.get("ttm_s")
    if ttm is not None and float(write["at"]) >= float(ttm):
        return "the root cause was already mitigated by then"
    target = norm(target_of(str(write["tool"]), write.get("args") or {}))
    judge = env.judge
    for i, fault in enumerate(judge.faults):
        if target and target in judge.related[i]:
            fix = path.fixes.get(f"{fault.meta.name}@{fault.target.name}") if path is not None else None
            cure = "; ".join(call_text(a) for a in fix) if fix else \
                "; ".join(r.description for r in fault.meta.remedies)
            # the root cause itself, or only tied to it (the service on a failing disk's node, the one a fix
            # acts on): the diagnosis calls the latter a victim, so this must not call it the cause
            where = (f"{target} is where a root cause acts, but" if target in accepted_names(env.world, env.truth[i])
                     else f"{target} is not the root cause, only tied to it ({env.truth[i].entity}), and")
            return f"{where} {write['tool']} does not cure it" + (f" (what does: {cure})" if cure else "")
    causes = " and ".join(dict.fromkeys(rc.entity for rc in env.truth))
    return f"{target or 'what it changed'} is not where the root cause is ({causes})"
