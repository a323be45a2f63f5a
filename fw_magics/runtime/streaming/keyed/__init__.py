"""keyed."""
