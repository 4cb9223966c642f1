"""What citebound serve's options become in the service's config (#56, round 84): each timing option reaches its
own field (distinct values, so a swap shows), and --calibrations takes a folder, never a file. An accepted command
line reaches the point where uvicorn would start (the ``started`` fixture records it instead)."""
import json

import pytest

pytest.importorskip("fastapi")

from citebound.cli.main import main  # noqa: E402
from tests.guard.test_serve_boundaries import started  # noqa: E402,F401 - the fixture


def test_each_timing_option_reaches_its_own_field(started):  # noqa: F811
    assert main(["serve", "--verifier", "lexical", "--request-timeout", "7.5", "--drain-grace", "0.25",
                 "--max-wait-ms", "3", "--max-batch-units", "17", "--port", "8123"]) == 0
    ((cfg, kw),) = started
    assert (cfg.request_timeout_s, cfg.drain_grace_s, cfg.max_wait_ms, cfg.max_batch_units) == (7.5, 0.25, 3.0, 17)
    assert kw["port"] == 8123


def test_calibrations_is_a_folder_not_a_file(started, tmp_path, capsys):  # noqa: F811
    cal = tmp_path / "pooled.json"
    cal.write_text(json.dumps({"tau": 0.5}))
    assert main(["serve", "--verifier", "lexical", "--calibrations", str(cal)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such folder (--calibrations takes a folder of calibration JSON files)" in err
    assert started == []
    assert main(["serve", "--verifier", "lexical", "--calibrations", str(tmp_path)]) == 0
    assert started[0][0].calibrations == str(tmp_path)
