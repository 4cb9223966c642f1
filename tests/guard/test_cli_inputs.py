"""The CLI's input readers at their edges (#56): the byte cap at its value and one past, every malformed guard
record named with where it is, labelled pairs of the wrong shape. Messages are the module's, checked whole."""
from __future__ import annotations

import pytest

from citebound.cli.common import CLIError
from citebound.cli.inputs import labelled_pairs, open_in, parse_answer


@pytest.mark.parametrize("size,cap,ok", [(10, 10, True), (11, 10, False), (0, 10, True)])
def test_an_input_file_of_the_cap_is_read_and_one_byte_more_is_not(tmp_path, size, cap, ok):
    f = tmp_path / "in.json"
    f.write_bytes(b"a" * size)
    if ok:
        assert open_in(str(f), max_bytes=cap).read() == "a" * size
    else:
        with pytest.raises(CLIError) as e:
            open_in(str(f), max_bytes=cap)
        assert str(e.value) == f"{f} has {size} bytes; the limit is {cap} (max_request_bytes)"


def test_a_folder_and_a_missing_file_are_named(tmp_path):
    with pytest.raises(CLIError, match="is a directory, not an input file"):
        open_in(str(tmp_path))
    with pytest.raises(CLIError, match="no such file"):
        open_in(str(tmp_path / "none.json"))


@pytest.mark.parametrize("rec,why", [
    ([1], "f:3: expected a JSON object with 'answer' and 'passages'"),
    ({"passages": []}, "f:3: missing 'answer' (a string)"),
    ({"answer": 5, "passages": []}, "f:3: missing 'answer' (a string)"),
    ({"answer": "a"}, "f:3: missing 'passages' (or 'ctxs')"),
    ({"answer": "a", "passages": "p"}, "f:3: 'passages' (or 'ctxs') must be a list"),
    ({"answer": "a", "passages": [{"title": "t"}]}, "f:3: passage 0 has missing text"),
    ({"answer": "a \ud800", "passages": ["p"]}, "f:3: 'answer' is not well-formed unicode"),
    ({"answer": "a", "passages": ["p", "q \udc00"]}, "f:3: passage 1 is not well-formed unicode"),
    ({"answer": "a", "passages": ["p"], "citation_base": 2}, "f:3: 'citation_base' must be 0 or 1, got 2"),
    ({"answer": "a", "passages": ["p"], "citation_base": True}, "f:3: 'citation_base' must be 0 or 1, got True"),
    ({"answer": "a", "passages": ["p"], "citation_base": 1.0}, "f:3: 'citation_base' must be 0 or 1, got 1.0"),
])
def test_a_malformed_guard_record_is_named_with_where_it_is(rec, why):
    with pytest.raises(CLIError) as e:
        parse_answer(rec, "f:3")
    assert str(e.value).startswith(why), str(e.value)


@pytest.mark.parametrize("rec,want", [
    ({"answer": "a", "passages": ["p"]}, ("a", ["p"], None)),
    ({"answer": "a", "ctxs": [{"text": "p", "title": "t"}], "citation_base": 0}, ("a", ["p"], 0)),
    ({"answer": "a", "passages": [], "citation_base": 1}, ("a", [], 1)),
])
def test_a_guard_record_as_it_is_read(rec, want):
    assert parse_answer(rec, "f:1") == want


@pytest.mark.parametrize("line,why", [
    ('{"claim": "c", "passage": 5, "label": 1}', ":1: expected 'claim' and 'passage' strings"),
    ('{"passage": "p", "label": 1}', ":1: expected 'claim' and 'passage' strings"),
    ('{"claim": 5, "passage": "p", "label": 1}', ":1: expected 'claim' and 'passage' strings"),
    ('["c", "p", 1]', ":1: expected 'claim' and 'passage' strings"),
    ('{"claim": "c", "passage": "p", "label": 2}', ":1: expected 'label' 0 (unsupported) or 1 (supported), got 2"),
    ('{"claim": "c", "passage": "p", "label": true}', ":1: expected 'label' 0 (unsupported) or 1 (supported), got True"),
    ('{"claim": "c", "passage": "p", "label": 1.0}', ":1: expected 'label' 0 (unsupported) or 1 (supported), got 1.0"),
    ('{"claim": "c", "passage": "p", "label": 1, "source": 3}', ":1: 'source' must be a string when given"),
])
def test_a_labelled_pair_of_the_wrong_shape_is_named(tmp_path, line, why):
    f = tmp_path / "l.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(CLIError) as e:
        labelled_pairs(str(f), with_source=True)
    assert str(e.value) == f"{f}{why}"


def test_labelled_pairs_read_whole_and_an_empty_file_is_refused(tmp_path):
    f = tmp_path / "l.jsonl"
    f.write_text('{"claim": "c", "passage": "p", "label": 0, "source": "s"}\n{"claim": "d", "passage": "q", "label": 1}\n')
    assert labelled_pairs(str(f), with_source=True) == [{"claim": "c", "passage": "p", "label": 0, "source": "s"},
                                                       {"claim": "d", "passage": "q", "label": 1, "source": None}]
    assert labelled_pairs(str(f), with_source=False)[0]["source"] is None
    e = tmp_path / "e.jsonl"
    e.write_text("\n")
    with pytest.raises(CLIError, match="no labelled pairs"):
        labelled_pairs(str(e), with_source=False)


@pytest.mark.parametrize("size,cap,ok", [(10, 10, True), (11, 10, False), (0, 10, True), (9, 10, True)])
def test_stdin_of_the_cap_is_read_and_one_byte_more_is_not(monkeypatch, size, cap, ok):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a" * size)))
    if ok:
        assert open_in("-", max_bytes=cap).read() == "a" * size
    else:
        with pytest.raises(CLIError) as e:
            open_in("-", max_bytes=cap)
        assert str(e.value) == f"stdin has more than {cap} bytes; the limit is {cap} (max_request_bytes)"


@pytest.mark.parametrize("data,line,byte", [(b"\xff{}", 1, 0), (b'{"a": 1}\n{"b": "\xe9"}\n', 2, 16),
                                           (b"\n\n\n\xc3", 4, 3)])
def test_a_byte_that_is_not_utf8_is_named_by_its_line_and_offset(tmp_path, data, line, byte):
    f = tmp_path / "in.jsonl"
    f.write_bytes(data)
    with pytest.raises(CLIError, match=rf"^{f}:{line}: not UTF-8 text \(byte {byte}: "):
        open_in(str(f))


@pytest.mark.parametrize("value,label,score", [
    (0, True, True), (1, True, True), (True, False, False), (False, False, False), (0.0, False, True),
    (1.0, False, True), (2, False, True), (0.5, False, True), (float("nan"), False, False),
    (float("inf"), False, False), ("1", False, False), (None, False, False),
])
def test_what_a_label_and_a_score_are(value, label, score):
    from citebound.cli.inputs import is_label, is_score

    assert (is_label(value), is_score(value)) == (label, score)


def test_one_line_that_is_not_json_is_refused_and_several_are_read_as_jsonl(tmp_path):
    from citebound.cli.inputs import iter_json_records

    one = tmp_path / "one.json"
    one.write_text('{"answer": "a", oops}\n')
    with pytest.raises(CLIError) as e:
        list(iter_json_records(str(one)))
    assert str(e.value).startswith(f"{one}:1: not valid JSON")
    many = tmp_path / "many.json"  # JSONL under another name (stdin is '-'): each line read, a bad one yielded
    many.write_text('{"a": 1}\n\n{"b": oops}\n{"c": 3}\n')
    got = list(iter_json_records(str(many)))
    assert [(n, r) for n, r in got if not isinstance(r, CLIError)] == [(1, {"a": 1}), (4, {"c": 3})]
    assert [(n, str(r).split(" (")[0]) for n, r in got if isinstance(r, CLIError)] == [(3, f"{many}:3: not valid JSON")]
