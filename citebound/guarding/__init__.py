"""guarding."""
