"""One module per CLI command group; each is imported only when its command runs."""

import click

#: A ``--seed`` option's type: an integer from 0 to ``srezero.episode.MAX_SEED`` (written out here because
#: the episode module is too heavy for the CLI's startup; a test keeps the two equal).
SEED = click.IntRange(0, 2**63 - 1)


def split_names(values: tuple[str, ...], option: str) -> list[str]:
    """A ``multiple`` option's comma-separated and repeated values, in order. An option given with nothing
    in it is an error: ``--tasks ''`` (an unset variable in a script) meant some tasks, not all of them."""
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if values and not out:
        raise click.UsageError(f"{option} was given but names nothing; leave it out for the default")
    return out


#: The most seeds one run takes: far beyond any sweep, and small enough to list.
MAX_SEEDS = 1_000_000


def parse_seeds(seeds: str, start: int) -> list[int]:
    """``5`` -> 0..4 (shifted by --seed-start); ``3,7`` or ``0-9`` -> exactly those seeds (``sweep``, ``mcp``
    and ``task check`` all read ``--seeds`` so)."""
    s = seeds.strip()
    if start and not s.isdigit():  # a list or a range names its seeds: a start would be silently ignored
        raise click.BadParameter(f"--seed-start shifts a count of seeds (--seeds 5 --seed-start {start}); "
                                 f"{seeds!r} already names its seeds, so write the ones you mean")
    try:
        if s.isdigit():
            spans = [(start, start + int(s) - 1)]
        else:
            spans = []
            for part in s.split(","):
                lo, sep, hi = part.partition("-")
                spans.append((int(lo), int(hi) if sep else int(lo)))
                if spans[-1][1] < spans[-1][0]:
                    raise click.BadParameter(f"{seeds!r}: the range {part.strip()} is empty; write low-high, e.g. 0-9")
    except ValueError:
        raise click.BadParameter(f"{seeds!r}: give a count (5), a list (3,7) or a range (0-9)") from None
    # checked before any list is built: a count of 2**64 must be an error, not a machine out of memory
    if any(hi > SEED.max for _, hi in spans):
        given = f"{seeds!r} from --seed-start {start}" if start else repr(seeds)
        raise click.BadParameter(f"{given}: seeds are integers from 0 to 2**63 - 1 (records hold 64-bit integers)")
    if sum(hi - lo + 1 for lo, hi in spans) > MAX_SEEDS:
        raise click.BadParameter(f"{seeds!r}: at most {MAX_SEEDS:,} seeds in one run")
    out = [seed for lo, hi in spans for seed in range(lo, hi + 1)]
    if not out:
        raise click.BadParameter(f"{seeds!r}: no seeds to run; give a count of at least 1")
    return sorted(set(out))


def check_episodes(agents: list, episodes: list[tuple[str, int]]) -> None:
    """Before any episode runs, ask each agent that can tell (one with ``check_episodes``, such as the
    replay agent) whether it can play all of ``episodes`` ((task id, seed) pairs), so that a missing
    record is one error now rather than an agent error in each episode later."""
    from srezero.agents import registry

    askers = [a for a in agents if hasattr(registry.resolve(a.name), "check_episodes")]
    if not askers:
        return
    from srezero.episode import episode_id

    ids = {episode_id(task, seed): f"{task} seed {seed}" for task, seed in episodes}
    for agent in askers:
        try:
            agent.create().check_episodes(ids)
        except ValueError as exc:
            raise click.ClickException(f"agent {agent.label}: {exc}") from None
