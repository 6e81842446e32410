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
