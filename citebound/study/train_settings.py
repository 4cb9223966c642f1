"""What the train_verifier and train_network rules both read: the fine-tuned designs and their settings."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DESIGNS = ("cross_encoder", "bi_encoder")


def design_settings(net: Mapping[str, Any], design: str) -> dict[str, Any]:
    """The ``networks`` settings one design trains with: the shared keys, overridden by the keys under the
    design's own name.

    >>> design_settings({"lr": 3e-5, "examples": 8, "cross_encoder": {"lr": 1e-4}}, "cross_encoder")
    {'lr': 0.0001, 'examples': 8}
    >>> design_settings({"lr": 3e-5, "examples": 8, "cross_encoder": {"lr": 1e-4}}, "bi_encoder")
    {'lr': 3e-05, 'examples': 8}
    """
    shared = {k: v for k, v in net.items() if k not in DESIGNS}
    return {**shared, **dict(net.get(design) or {})}
