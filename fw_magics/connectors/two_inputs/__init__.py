"""Two sources read as one, for a two-input operator: see ``source``."""
