"""One module per CLI command group; each is imported only when its command runs."""

import click

#: A ``--seed`` option's type: an integer from 0 to ``srezero.episode.MAX_SEED`` (written out here because
#: the episode module is too heavy for the CLI's startup; a test keeps the two equal).
SEED = click.IntRange(0, 2**63 - 1)
