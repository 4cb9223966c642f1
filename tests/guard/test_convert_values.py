"""citebound convert over answers of several sections, each with its own citation list: one answer-wide passage
list (section 2's [1] becomes [3] after section 1's two), sections kept as paragraphs, and every unresolved
marker of every section and answer counted. Expected text and counts written by hand."""
import json

from citebound.cli.main import main
from citebound.guarding.convert import convert_records


def _sections(*secs):
    return {"question": "q", "response": {"sections": [{"text": t, "citations": c} for t, c in secs]}}


def _cites(*ids):
    return [{"id": str(i), "snippets": [f"snippet {i}"]} for i in ids]


ANSWERS = [
    _sections(("A [1]. B [2]. Lost [9].", _cites(1, 2)),
              ("C [1]. Gone [5]. D [2, 1].", _cites(1, 2)),
              ("E (Doe et al., 2020). F [4].", [{"id": "(Doe et al., 2020)", "snippets": ["doe"]}])),
    _sections(("G [1]. H [3].", _cites(1))),
]


def test_sections_share_one_passage_list_stay_paragraphs_and_every_unresolved_marker_is_counted(tmp_path, capsys):
    p = tmp_path / "released.json"
    p.write_text(json.dumps(ANSWERS))
    first, second = convert_records(p, "sections")
    assert first["answer"] == "A [1]. B [2]. Lost [9].\n\nC [3]. Gone [5]. D [4, 3].\n\nE [5]. F [4]."
    assert [q["text"] for q in first["passages"]] == ["snippet 1", "snippet 2", "snippet 1", "snippet 2", "doe"]
    # [9] of section 1, [5] of section 2 and [4] of section 3 are in no list of their section
    assert first["unresolved_markers"] == 3 and first["citation_base"] == 1
    assert (second["answer"], second["unresolved_markers"]) == ("G [1]. H [3].", 1)
    out = tmp_path / "answers.jsonl"
    assert main(["convert", "--format", "sections", str(p), "--out", str(out)]) == 0
    assert "converted 2 answers; 4 markers left unresolved" in capsys.readouterr().err
    assert [json.loads(x)["answer"] for x in out.read_text().splitlines()] == [first["answer"], second["answer"]]
