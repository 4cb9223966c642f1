"""The record reader's refusals by hand: the line of a byte that is not UTF-8, the strict reading of NaN
and infinities (a user's file) beside the lenient one (an upstream file), and one object meaning one."""
import math

import pytest

from citebound.scoring.io import DataError, read_json_object, read_records


def test_a_byte_that_is_not_utf8_is_reported_on_its_line(tmp_path):
    p = tmp_path / "r.json"
    p.write_bytes(b'[\n1,\n"\xff"\n]')  # the bad byte is byte 6, after two newlines: line 3
    with pytest.raises(DataError, match=r"r\.json:3: not UTF-8 text \(byte 6: "):
        read_records(p)
    p.write_bytes(b"\xfe")  # byte 0: line 1
    with pytest.raises(DataError, match=r"r\.json:1: not UTF-8 text \(byte 0: "):
        read_records(p)


@pytest.mark.parametrize("text, suffix, where", [
    ('{"a": NaN}', ".json", "r.json: not usable JSON"),
    ('{"a": 1}\n{"a": -Infinity}\n', ".jsonl", "r.jsonl:2: not usable JSON"),
    ('{"a": 1e400}', ".json", "r.json: not usable JSON"),
])
def test_strict_reading_refuses_what_json_has_not_and_lenient_reading_keeps_it(tmp_path, text, suffix, where):
    p = tmp_path / f"r{suffix}"
    p.write_text(text)
    with pytest.raises(DataError, match=where.replace(".", r"\.")):
        read_records(p, strict=True)
    lenient = read_records(p)
    assert not math.isfinite(lenient[-1]["a"])


def test_one_object_means_exactly_one(tmp_path):
    one, two, empty = tmp_path / "one.json", tmp_path / "two.jsonl", tmp_path / "empty.jsonl"
    one.write_text('[{"a": 1}]')
    two.write_text('{"a": 1}\n{"b": 2}\n')
    empty.write_text("\n")
    assert read_json_object(one) == {"a": 1}
    for p in (two, empty):
        with pytest.raises(DataError, match="expected one JSON object"):
            read_json_object(p)
