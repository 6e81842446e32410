"""One module per CLI command group; each is imported only when its command runs."""
