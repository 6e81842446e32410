"""The agent protocol, the agent registry and the episode runner."""
