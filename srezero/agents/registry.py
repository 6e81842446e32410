"""Agent names -> classes. ``package.module:Class`` loads a user's own agent.

A user's module is imported as ``python -m`` would find it: from ``sys.path`` (``PYTHONPATH``), else
from the current directory. ``--agent-arg KEY=VALUE`` items become constructor keyword arguments
(:func:`parse_agent_args`). docs/extending.md#add-an-agent is the guide.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import site
import sys
from typing import Any

import orjson

from srezero.errors import did_you_mean

BUILTIN = {
    "random": "baselines.random_agent:RandomAgent",
    "oracle": "baselines.oracle:OracleAgent",
    "runbook": "baselines.runbook:RunbookAgent",
    "greedy": "baselines.greedy:GreedyAgent",
    "shotgun": "baselines.shotgun:ShotgunAgent",
    "replay": "baselines.replay:ReplayAgent",
    "llm-prompt": "baselines.llm:PromptAgent",
    "llm-react": "baselines.llm:ReActAgent",
}
#: Deterministic baselines run by default in a sweep (the oracle is reported apart).
DEFAULT_SWEEP = ("oracle", "random", "runbook", "greedy", "shotgun")


@functools.cache  # a sweep creates an agent per episode: import and check each name once per process
def resolve(name: str) -> type:
    """The agent class for a built-in name or ``package.module:Class``; ValueError says what is wrong."""
    ref = BUILTIN.get(name, name)
    if ":" not in ref:
        raise ValueError(f"unknown agent {name!r}{did_you_mean(name, BUILTIN)} (built-in agents: "
                         f"{', '.join(BUILTIN)}; or give package.module:Class)")
    module, _, attr = ref.partition(":")
    mod = _import(module, user=name not in BUILTIN)
    try:
        obj = getattr(mod, attr)
    except AttributeError:
        where = getattr(mod, "__file__", None) or "a namespace package"
        mine = os.path.join(os.getcwd(), *module.split(".")) + ".py"
        shadowed = (f"; {mine} was not imported because an installed module of that name comes first on "
                    "sys.path: rename your file" if os.path.isfile(mine) and where != mine else "")
        raise ValueError(f"module {module!r} ({where}) has no attribute {attr!r}{shadowed}") from None
    _check_agent_class(ref, obj)
    return obj


def user_source(name: str) -> str | None:
    """Where a ``package.module:Class`` agent's top-level module lives (its ``.py`` file or package
    directory) when it is not installed, for executors whose workers do not share this process's
    ``sys.path`` or working directory (Ray ships it to them); None for built-ins and installed modules."""
    if name in BUILTIN or ":" not in name:
        return None
    resolve(name)  # imports it, from the current directory if need be
    top = sys.modules[name.partition(":")[0].partition(".")[0]]
    if top.__name__ in ("srezero", "baselines"):
        return None
    paths = list(getattr(top, "__path__", None) or [])
    where = paths[0] if len(paths) == 1 else getattr(top, "__file__", None)
    if not where:
        return None
    installed = {os.path.realpath(p) for p in (*site.getsitepackages(), site.getusersitepackages())}
    real = os.path.realpath(where)
    return None if any(real.startswith(d + os.sep) for d in installed) else real


class _NotFound(Exception):
    """The agent's own module (or its package) is not on sys.path; a missing dependency is not this."""


def _import_or_explain(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise _NotFound(str(exc)) from None
        raise ValueError(f"cannot import agent module {module!r}: {exc}") from None
    except Exception as exc:  # a syntax error or an exception at import time, in one line
        raise ValueError(f"cannot import agent module {module!r}: {type(exc).__name__}: {exc}") from None


def _import(module: str, user: bool) -> Any:
    try:
        return _import_or_explain(module)
    except _NotFound as exc:
        if not user:
            raise ValueError(f"cannot import agent module {module!r}: {exc}") from None
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # as `python -m` does, but after the installed packages: a stray file in the current directory
        # must not shadow one of them. Kept on the path so the agent's own lazy imports work too.
        sys.path.append(cwd)
        importlib.invalidate_caches()
        try:
            return _import_or_explain(module)
        except _NotFound:
            pass
    raise ValueError(f"cannot import agent module {module!r}: no {module.replace('.', '/')}.py (or package) on "
                     f"sys.path or in the current directory {cwd}; run from the directory that holds it or "
                     "add that directory to PYTHONPATH")


def _check_agent_class(ref: str, obj: Any) -> None:
    """Fail at once, not at the first episode's ``'NoneType' object has no attribute 'reset'``."""
    missing = [f"{m}()" for m in ("reset", "act") if not callable(getattr(obj, m, None))]
    if not inspect.isclass(obj) or missing:
        what = f"a class without {' or '.join(missing)}" if inspect.isclass(obj) else f"a {type(obj).__name__}"
        raise ValueError(f"{ref}: module:Class must name a class with reset() and act(); {ref.partition(':')[2]} "
                         f"is {what} (docs/extending.md#add-an-agent)")
    for method, n, args in (("reset", 3, "briefing, seed, tool_specs"), ("act", 1, "observation")):
        try:
            sig = inspect.signature(getattr(obj, method))
        except (TypeError, ValueError):  # a C-implemented or otherwise opaque method: trust it
            continue
        # the runner calls them positionally on an instance: self plus n arguments
        bound = isinstance(inspect.getattr_static(obj, method, None), staticmethod | classmethod)
        try:
            sig.bind(*([None] * (n + (not bound))))
        except TypeError:
            raise ValueError(f"{ref}: {method}{sig} must accept ({args}), as the runner calls it "
                             "(docs/extending.md#add-an-agent)") from None


def parse_agent_args(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items -> constructor keyword arguments. A value is JSON when it parses as JSON
    (``3``, ``0.5``, ``true``, ``null``, ``[1, 2]``, ``"007"``), else the plain string."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(f"--agent-arg {item!r}: expected KEY=VALUE with KEY a Python identifier")
        if key in out:
            raise ValueError(f"--agent-arg {key} is given twice")
        try:
            out[key] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            out[key] = raw
    return out


@functools.cache
def _signature(cls: type) -> inspect.Signature | None:
    try:
        return inspect.signature(cls)
    except (TypeError, ValueError):
        return None


def create(name: str, /, **kwargs: Any) -> Any:
    cls = resolve(name)
    sig = _signature(cls)
    if sig is not None:
        try:
            sig.bind(**kwargs)
        except TypeError as exc:  # say how to pass them, not just that they are missing
            required = [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty
                        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in kwargs]
            hint = " ".join(f"--agent-arg {p}=VALUE" for p in required)
            raise ValueError(f"agent {name}: {exc}" + (f"; pass {hint}" if hint else "")) from None
    return cls(**kwargs)
