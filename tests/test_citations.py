from citeguard.citations import extract_pairs, split_sentences, strip_markers


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
