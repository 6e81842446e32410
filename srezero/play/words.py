"""Evidence signals in plain words for the debrief: the stored regular expressions as the text they look for."""

from __future__ import annotations

import re

_SIGNAL = re.compile(r"^(?P<tool>\w+)\((?P<inside>.*?)\)(?: showing /(?P<pat>.*)/)?$", re.S)
_TOOL_WORDS = {
    "get_alerts": "the alerts", "get_topology": "the topology", "get_changes": "the change history",
    "get_status": "a status read of {e}", "get_config": "the config of {e}", "get_events": "the events of {e}",
    "search_logs": "a log search of {e}", "get_traces": "traces of {e}", "query_metrics": "the {metric} metric of {e}",
    "node_diagnostics": "the {check} check of {e}", "inspect_database": "the database console's {view} view",
    "inspect_cache": "the cache console's {section} section", "inspect_queue": "the queue console's {view} view",
}
_NUMBER = r"(?:\\d(?:\{\d*,?\d*\}|[+*])?|\[[\\d.\-0-9]+\](?:\{\d*,?\d*\}|[+*])?)"


def plain_pattern(pattern: str) -> str:
    """A signal's regular expression as the text it looks for: ``\\s+`` is a space, a number class
    is ``<n>``, ``.*`` is ``…``, ``(a|b)`` is ``a/b``."""
    p = re.sub(r"\(\?[!=<][^)]*\)|\\b|\^|\$(?!\d)", "", pattern)  # lookarounds, word boundaries, anchors
    p = p.replace("(?:", "(")
    p = re.sub(r"\\s[+*]?", " ", p)
    p = re.sub(r"\.[*+]", "…", p)
    for _ in range(3):  # digit classes, then a group of them, then runs like <n>.<n>
        p = re.sub(_NUMBER, "<n>", p)
        p = re.sub(r"\((?:<n>|\|)+\)[+*]?", "<n>", p)
        p = re.sub(r"<n>(?:\\?\.?<n>)+", "<n>", p)

    def alternatives(m: re.Match[str]) -> str:
        opts = list(dict.fromkeys(o for o in m.group(1).split("|")))
        if len({o.lower() for o in opts}) == 1:
            return opts[0]
        return "/".join(opts)

    p = re.sub(r"\(([^()]*\|[^()]*)\)", alternatives, p)
    p = re.sub(r"\\(.)", r"\1", p)  # escaped characters stand for themselves
    return " ".join(p.split())


def signal_parts(desc: str) -> tuple[str, str, dict[str, str], str | None] | None:
    """An evidence signal's (tool, entity, args, pattern): ``get_status(worker) showing /CrashLoopBackOff/``
    is ``("get_status", "worker", {}, "CrashLoopBackOff")``; None for text of another shape."""
    m = _SIGNAL.match(desc)
    if m is None:
        return None
    entity, *rest = [x.strip() for x in m.group("inside").split(",")] if m.group("inside") else [""]
    args = {}
    for item in rest:
        k, _, v = item.partition("=")
        args[k.strip()] = v.strip().strip("'\"")
    return m.group("tool"), entity, args, m.group("pat")


def plain_signal(desc: str) -> str:
    """An evidence signal (``get_status(worker) showing /CrashLoopBackOff/``) in words:
    ``a status read of worker showing "CrashLoopBackOff"``. The stored string is left as it is."""
    parts = signal_parts(desc)
    if parts is None:
        return desc
    tool, entity, args, pattern = parts
    template = _TOOL_WORDS.get(tool)
    fields = {"e": "any target" if entity == "*" else entity, **args}
    try:
        text = template.format(**fields) if template else ""
    except KeyError:
        text = ""
    if not text:
        text = f"{tool} on {entity}" + (f" ({', '.join(f'{k}={v}' for k, v in args.items())})" if args else "")
    shown = {"e", *re.findall(r"{(\w+)}", template or "")}
    extra = [f"{k}={v}" for k, v in args.items() if k not in shown]
    if extra:
        text += f" with {', '.join(extra)}"
    if pattern:
        text += f' showing "{plain_pattern(pattern)}"'
    return f"{text}  [{tool}]"
