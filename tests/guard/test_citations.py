from citebound.text.citations import extract_pairs, split_sentences, strip_markers


def keys(ex):
    return [(p.sentence_index, p.passage_index) for p in ex.pairs]


def test_numeric_one_based_grouped_ranges_and_adjacent():
    ex = extract_pairs("A holds [1]. B holds [1, 3]. C holds [2-3]. D holds [1][2].", 3)
    assert keys(ex) == [(0, 0), (1, 0), (1, 2), (2, 1), (2, 2), (3, 0), (3, 1)]
    assert ex.pairs[1].claim == "B holds."
    assert (ex.n_sentences, ex.n_cited_sentences) == (4, 4)


def test_zero_based_and_out_of_range_are_counted():
    ex = extract_pairs("A [0]. B [2]. C.", 2, base=0)
    assert keys(ex) == [(0, 0)]
    assert [(s.sentence_index, s.marker, s.reason) for s in ex.skips] == [(1, "[2]", "out_of_range")]
    assert ex.n_cited_sentences == 2 and ex.n_sentences == 3


def test_markdown_link_markers_resolve_through_id_table():
    ex = extract_pairs("Tuning helps [[2]](https://x.org/a#:~:text=b). Done.", 2, id_table={"1": 0, "2": 1})
    assert keys(ex) == [(0, 1)]
    assert ex.pairs[0].claim == "Tuning helps."


def test_author_year_ids_and_groups():
    table = {"(Rego et al., 2022)": 0, "(Wu et al., 2020)": 1, "(1, Mir et al., 2021)": 2}
    ex = extract_pairs("Tests need normality (Rego et al., 2022) (Wu et al., 2020). "
                       "Typilus has 600 projects (1, Mir et al., 2021). Unknown (Zed et al., 1999).", 3, id_table=table)
    assert keys(ex) == [(0, 0), (0, 1), (1, 2)]
    assert [(s.marker, s.reason) for s in ex.skips] == [("(Zed et al., 1999)", "unknown_id")]
    semi = extract_pairs("X (Rego et al., 2022; Wu et al., 2020).", 2, id_table=table)
    assert keys(semi) == [(0, 0), (0, 1)]


def test_bracketed_string_ids_and_storm_literal_ids():
    table = {"[257766385 | Luo et al. | 2023 | Citations: 21]": 0, "[5]": 1}
    ex = extract_pairs("CF explains models [257766385 | Luo et al. | 2023 | Citations: 21]. "
                       "It is widely used [5]. Missing [999 | Doe | 2020 | Citations: 0].", 2, id_table=table)
    assert keys(ex) == [(0, 0), (1, 1)]
    assert ex.skips[0].reason == "unknown_id"


def test_author_year_is_prose_in_numeric_sections():
    ex = extract_pairs("As shown by (Liu et al., 2007) it works [1].", 1, id_table={"1": 0})
    assert keys(ex) == [(0, 0)] and not ex.skips


def test_empty_passage_is_skipped_with_reason():
    ex = extract_pairs("A [1]. B [2].", 2, passage_blank=[False, True])
    assert keys(ex) == [(0, 0)] and ex.skips[0].reason == "empty_passage"


def test_trailing_marker_after_period_stays_with_sentence_and_claim_cap():
    assert split_sentences("A is B. [2] C is D.") == ["A is B. [2]", "C is D."]
    ex = extract_pairs("Long " + "x" * 700 + " end [1].", 1)
    assert len(ex.pairs[0].claim) == 600
    assert strip_markers("Corona forms [1, 2] fast [[3]](http://a).") == "Corona forms fast."


def test_sentence_spans_by_hand():
    from citebound.text.citations import sentences
    text = "  A is B.   [2]   C is D.\n\n\nE [1], [3]; F."
    got = [(s.index, s.start, s.end, s.text) for s in sentences(text)]
    # leading spaces trimmed; "[2]" after the period joins sentence 0 (its span runs to the marker's end);
    # blank lines are no sentence; "E [1], [3]; F." stays one sentence
    assert got == [(0, 2, 15, "A is B. [2]"), (1, 18, 25, "C is D."), (2, 28, 42, "E [1], [3]; F.")]
    for s in sentences(text)[1:]:
        assert text[s.start:s.end] == s.text
    # markers that open a chunk with nothing after them: no empty sentence, and the next sentence is kept
    got = [(s.index, s.start, s.end, s.text) for s in sentences("A. [1], [2]\nB [3].")]
    assert got == [(0, 0, 11, "A. [1], [2]"), (1, 12, 18, "B [3].")]
    # a marker opening the first chunk has no sentence before it to join
    assert [s.text for s in sentences("[1] A is B.")] == ["[1] A is B."]
    # trailing whitespace is not part of a span
    assert [(s.start, s.end) for s in sentences("A b.  ")] == [(0, 4)]


def test_blank_values():
    from citebound.text.citations import is_blank
    assert is_blank(None) and is_blank(float("nan")) and is_blank("  \n") and is_blank("")
    assert not is_blank("x") and not is_blank(0.0) and not is_blank(0) and not is_blank(" a ")


def test_skip_and_pair_records_carry_sentence_marker_and_key():
    ex = extract_pairs("Fine [1]. Gone [2]. Far [5]. Odd (Zed et al., 1999).", 2, passage_blank=[False, True])
    assert [(p.sentence_index, p.claim, p.marker, p.citation_key, p.passage_index) for p in ex.pairs] == \
        [(0, "Fine.", "[1]", "1", 0)]
    assert [(s.sentence_index, s.marker, s.reason) for s in ex.skips] == [(1, "[2]", "empty_passage"),
                                                                         (2, "[5]", "out_of_range")]
    # a skipped citation does not stop the ones after it in the same sentence
    ex = extract_pairs("A [9] [1] [9] [2].", 2)
    assert [p.passage_index for p in ex.pairs] == [0, 1] and len(ex.skips) == 1
    ex = extract_pairs("A [2] [1].", 2, passage_blank=[False, True])
    assert [p.passage_index for p in ex.pairs] == [0]
    ex = extract_pairs("A (Zed et al., 1999) [1].", 1, id_table={"(Rego et al., 2022)": 0, "1": 0})
    assert [p.passage_index for p in ex.pairs] == [0] and ex.skips[0].sentence_index == 0
    # an uncited sentence does not stop the ones after it
    assert [p.sentence_index for p in extract_pairs("None here. Then [1].", 1).pairs] == [1]



def test_two_ids_of_one_passage_in_a_sentence_make_one_pair_passage_0_too():
    """A table may name one passage twice (an author-year id and its number): a sentence citing it both ways is
    one claim-citation pair, the first marker's. Passage 0 as passage 1: a target is the passage's index, which
    0 is as much as 1 (not an unknown id's key)."""
    table = {"Smith et al., 2020": 0, "[1]": 0, "Jones et al., 2021": 1, "[2]": 1}
    ex = extract_pairs("A claim (Smith et al., 2020) [1]. Another (Jones et al., 2021) [2].", 2, id_table=table)
    assert [(p.sentence_index, p.marker, p.citation_key, p.passage_index) for p in ex.pairs] == [
        (0, "(Smith et al., 2020)", "Smith et al., 2020", 0), (1, "(Jones et al., 2021)", "Jones et al., 2021", 1)]
    assert ex.skips == []

def test_default_claim_cap_is_600():
    from citebound.text.citations import strip_markers
    assert len(strip_markers("y" * 700)) == 600


def test_id_table_lookups_for_numeric_markers():
    # a table keyed "[N]" (STORM) and one keyed "N" (You.com); the whole marker or its body matches first
    assert [(p.citation_key, p.passage_index) for p in extract_pairs("A [2].", 3, id_table={"[2]": 1}).pairs] == \
        [("[2]", 1)]
    assert [(p.citation_key, p.passage_index) for p in extract_pairs("A [2].", 3, id_table={"2": 2}).pairs] == \
        [("2", 2)]
    # a table that names a group marker whole, or its body, resolves it whole: one citation, not each number
    assert [(p.citation_key, p.passage_index) for p in extract_pairs("A [1, 2].", 3, id_table={"[1, 2]": 2}).pairs] == \
        [("[1, 2]", 2)]
    assert [(p.citation_key, p.passage_index) for p in extract_pairs("A [1, 2].", 3, id_table={"1, 2": 1}).pairs] == \
        [("1, 2", 1)]
    # a group marker looks each number up: "1" as "1", "3" as "[3]"
    ex = extract_pairs("A [1, 3].", 3, id_table={"1": 0, "[3]": 2})
    assert [(p.citation_key, p.passage_index) for p in ex.pairs] == [("1", 0), ("[3]", 2)]
    ex = extract_pairs("A [1, 4].", 3, id_table={"1": 0, "[3]": 2})
    assert [(s.marker, s.reason) for s in ex.skips] == [("[1, 4]", "unknown_id")]


def test_author_year_groups_and_bracket_ids_in_a_table():
    table = {"(Rego et al., 2022)": 0, "Wu and Li, 2020": 1, "[77 | Doe | 2020 | Citations: 0]": 2}
    ex = extract_pairs("X (Rego et al., 2022; Wu and Li, 2020; Nobody et al., 2001).", 3, id_table=table)
    assert [(p.marker, p.citation_key, p.passage_index) for p in ex.pairs] == [
        ("(Rego et al., 2022)", "(Rego et al., 2022)", 0), ("(Wu and Li, 2020)", "Wu and Li, 2020", 1)]
    assert [(s.marker, s.reason) for s in ex.skips] == [("(Nobody et al., 2001)", "unknown_id")]
    # a bracketed id with ';' is one id, not a group
    ex = extract_pairs("Y [77 | Doe | 2020 | Citations: 0]. Z [78 | A; B | 2021 | x].", 3, id_table=table)
    assert [p.passage_index for p in ex.pairs] == [2]
    assert [(s.marker, s.reason) for s in ex.skips] == [("[78 | A; B | 2021 | x]", "unknown_id")]


def test_expand_numeric_degenerate_range():
    from citebound.text.citations import expand_numeric
    assert expand_numeric("3-3") == [3] and expand_numeric("2 - 4") == [2, 3, 4] and expand_numeric("5") == [5]


def test_the_per_sentence_citation_cap_counts_every_marker_of_the_sentence():
    """max_citations bounds the sentence, not each marker: [1-2] then [3-4] makes 4 (> 3); [1-2] [3] makes 3."""
    import pytest

    from citebound.text.citations import sentence_citations, sentences
    from citebound.text.limits import LimitExceeded

    ok = "X holds [1-2] [3]."
    assert [c.key for c in sentence_citations(ok, sentences(ok)[0], 5, max_citations=3)] == ["1", "2", "3"]
    over = "X holds [1-2] [3-4]."
    with pytest.raises(LimitExceeded, match="sentence 0 makes more than 3 citations"):
        sentence_citations(over, sentences(over)[0], 5, max_citations=3)


def test_leading_markers_joined_by_semicolons_all_belong_to_the_sentence_before():
    from citebound.text.citations import sentences

    text = "A is B. [1]; [2] C is D."
    # 'A is B.' is 0-7, '[1]; [2]' 8-16, 'C is D.' 17-24
    assert [(s.text, s.start, s.end) for s in sentences(text)] == [("A is B. [1]; [2]", 0, 16), ("C is D.", 17, 24)]
    ex = extract_pairs(text, 2)
    assert [(p.sentence_index, p.passage_index) for p in ex.pairs] == [(0, 0), (0, 1)]


def test_sections_merge_shifting_sentences_passages_and_counts():
    """Extraction.extend, as prepare merges a report's sections: section 2's sentence indices move past section
    1's sentences, its passage indices past section 1's passages, and both counts add (cited to cited)."""
    from citebound.text.citations import Extraction, Pair, Skip

    first = extract_pairs("A [1]. B [3].", 2)  # 2 sentences, both cited; [3] is out of range
    second = extract_pairs("C [9]. D [2]. E.", 2)  # 3 sentences, 2 cited; [9] out of range
    merged = Extraction()
    merged.extend(first, 0, passage_offset=0)
    merged.extend(second, first.n_sentences, passage_offset=2)
    assert merged.pairs == [Pair(0, "A.", "[1]", "1", 0), Pair(3, "D.", "[2]", "2", 3)]
    assert merged.skips == [Skip(1, "[3]", "out_of_range"), Skip(2, "[9]", "out_of_range")]
    assert (merged.n_sentences, merged.n_cited_sentences) == (5, 4)


def test_a_table_holding_both_the_literal_marker_and_its_number_resolves_the_literal_one():
    ex = extract_pairs("A [5].", 3, id_table={"5": 1, "[5]": 0})
    assert [(p.citation_key, p.passage_index) for p in ex.pairs] == [("[5]", 0)]
    ex = extract_pairs("A [[5]](http://x.org).", 3, id_table={"5": 2, "[5]": 0})  # a link's whole marker is no id
    assert [(p.citation_key, p.passage_index) for p in ex.pairs] == [("5", 2)]


def test_citation_passages_keep_id_0_the_first_of_a_repeated_id_and_drop_blank_snippets():
    from citebound.text.citations import citation_passages

    cites = [{"id": 0, "snippets": ["a", float("nan"), "  ", "b"], "title": "T"},
             {"id": "0", "snippets": ["dup"]},  # the same id again: a passage of its own, but the id stays on the first
             {"id": None, "snippets": ["no id"]}, "not an object",
             {"id": 7, "snippets": None, "title": None}]
    passages, table = citation_passages(cites)
    assert passages == [{"text": "a b", "title": "T"}, {"text": "dup", "title": ""}, {"text": "", "title": ""}]
    assert table == {"0": 0, "7": 2}


def test_unknown_two_author_ids_are_reported_and_year_only_parentheses_are_prose():
    table = {"(Rego et al., 2022)": 0}
    ex = extract_pairs("X holds (Smith and Jones, 2020). Y (Ng & Li, 2019). Z grew (in 2020).", 1, id_table=table)
    assert [(s.sentence_index, s.marker, s.reason) for s in ex.skips] == [
        (0, "(Smith and Jones, 2020)", "unknown_id"), (1, "(Ng & Li, 2019)", "unknown_id")]
    assert ex.pairs == [] and (ex.n_sentences, ex.n_cited_sentences) == (3, 2)


def test_a_single_line_break_ends_a_sentence_as_in_a_bullet_list():
    from citebound.text.citations import sentences

    text = "- A holds [1]\n- B holds [2]\nC"
    assert [(s.start, s.end, s.text) for s in sentences(text)] == [(0, 13, "- A holds [1]"), (14, 27, "- B holds [2]"),
                                                                  (28, 29, "C")]
    assert keys(extract_pairs(text, 2)) == [(0, 0), (1, 1)]


def test_semicolon_grouped_markers_are_citations():
    ex = extract_pairs("A holds [1; 3]. B holds [2 ;1].", 3)
    assert [(p.sentence_index, p.marker, p.passage_index) for p in ex.pairs] == [
        (0, "[1; 3]", 0), (0, "[1; 3]", 2), (1, "[2 ;1]", 1), (1, "[2 ;1]", 0)]
