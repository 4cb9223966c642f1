"""Environment variables, read under the ``CITEBOUND_`` prefix.

The project was called ``citeguard`` before; for one release a variable set under the old prefix
(``CITEGUARD_DATA_MIRROR``, ...) is still read, with a warning that names the new one.

>>> import os
>>> os.environ["CITEBOUND_EXAMPLE_ONLY"] = "x"
>>> getenv("EXAMPLE_ONLY")
'x'
"""
from __future__ import annotations

import os
import warnings

PREFIX, OLD_PREFIX = "CITEBOUND_", "CITEGUARD_"


def getenv(name: str, default: str | None = None) -> str | None:
    """``$CITEBOUND_<name>``; else the deprecated ``$CITEGUARD_<name>`` (with a FutureWarning); else ``default``."""
    value = os.environ.get(PREFIX + name)
    if value is not None:
        return value
    old = os.environ.get(OLD_PREFIX + name)
    if old is not None:
        warnings.warn(f"{OLD_PREFIX}{name} is deprecated and will stop being read in the next release; "
                      f"set {PREFIX}{name} instead", FutureWarning, stacklevel=2)
        return old
    return default
