"""The guard inside other people's gateways (each module needs its own extra)."""
