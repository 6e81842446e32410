"""A runbook that dawdles (wall clock only, when SREZERO_TEST_SLOW is set), so a test can kill a sweep midway."""

from __future__ import annotations

import os
import time
from typing import Any

from baselines.runbook import RunbookAgent


class SlowRunbook(RunbookAgent):
    def reset(self, *args: Any) -> None:
        time.sleep(float(os.environ.get("SREZERO_TEST_SLOW", "0")))
        super().reset(*args)


class DownProvider(RunbookAgent):
    """An LLM agent whose endpoint is down: every episode ends in a provider error."""

    def act(self, observation: Any) -> Any:
        from srezero.agents.protocol import ProviderError

        raise ProviderError("connection refused")
