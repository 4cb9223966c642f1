"""Tests that run as if a package were not installed: its imports (by name prefix) raise ImportError."""
from __future__ import annotations

import builtins


def hide_imports(monkeypatch, prefix: str) -> None:
    """From now until the test ends, importing any module whose name starts with ``prefix`` raises ImportError."""
    real = builtins.__import__

    def blocked(name, *a, **k):
        if name.startswith(prefix):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", blocked)
