"""Environment variables under the project's old name (#56, round 92): ``CITEBOUND_<name>`` wins whenever it is set,
even to the empty string; ``CITEGUARD_<name>`` alone is still read, with a FutureWarning (a warning Python shows
users by default, unlike a DeprecationWarning) that names the new variable."""
import warnings

import pytest

from citebound._env import getenv
from citebound.scoring.io import data_mirror


def test_the_new_prefix_wins_even_when_empty(monkeypatch):
    monkeypatch.setenv("CITEBOUND_PREFIX_CASE", "")
    monkeypatch.setenv("CITEGUARD_PREFIX_CASE", "old")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the old variable is not read
        assert getenv("PREFIX_CASE", "default") == ""


def test_the_old_prefix_alone_is_read_with_a_warning_users_see(monkeypatch, tmp_path):
    monkeypatch.delenv("CITEBOUND_DATA_MIRROR", raising=False)
    monkeypatch.setenv("CITEGUARD_DATA_MIRROR", str(tmp_path))
    with pytest.warns(FutureWarning, match="CITEGUARD_DATA_MIRROR is deprecated.*set CITEBOUND_DATA_MIRROR instead"):
        assert data_mirror() == str(tmp_path)
    # shown under Python's default filters, which ignore DeprecationWarning outside __main__
    with warnings.catch_warnings(record=True) as seen:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        getenv("DATA_MIRROR")
    assert [w.category for w in seen] == [FutureWarning]


def test_neither_prefix_gives_the_default(monkeypatch):
    monkeypatch.delenv("CITEBOUND_PREFIX_CASE", raising=False)
    monkeypatch.delenv("CITEGUARD_PREFIX_CASE", raising=False)
    assert getenv("PREFIX_CASE") is None and getenv("PREFIX_CASE", "d") == "d"
