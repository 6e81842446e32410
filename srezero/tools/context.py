"""The context a tool implementation receives: the world and (for submit tools) the episode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from srezero.episode import Episode
    from srezero.sim.world import World


@dataclass
class ToolContext:
    world: World
    episode: Episode | None = None
