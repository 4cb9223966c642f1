"""The tiny random-weight models other tests load through ``from_pretrained``: their tokenizers number the special
tokens as the configs say, mark a pair's second segment, end a T5 text with </s>, keep the chat markers whole, and
the small BERT classifier's head is spread as documented. Expected ids are read off the builders' vocabularies by
hand (specials first, in the order each builder lists them)."""
import pytest
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

from citebound.study import tiny

WORDS = ["cells protein gene"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"t5": tiny.build_tiny_t5(root / "t5", WORDS), "nli": tiny.build_tiny_deberta_nli(root / "nli", WORDS),
            "llama": tiny.build_tiny_llama(root / "llama", WORDS),
            "roberta": tiny.build_tiny_checker(root / "rob", "roberta", WORDS),
            "bert": tiny.build_tiny_bert_classifier(root / "bert", WORDS)}


@pytest.mark.parametrize("name,specials", [
    ("t5", {"<pad>": 0, "</s>": 1, "<unk>": 2}),
    ("nli", {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[UNK]": 3, "[MASK]": 4}),
    ("llama", {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "<|user|>": 4, "<|assistant|>": 5}),
    ("roberta", {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4}),
    ("bert", {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[UNK]": 3, "[MASK]": 4}),
])
def test_special_tokens_have_the_ids_the_config_names(built, name, specials):
    tok = AutoTokenizer.from_pretrained(built[name])
    assert {t: tok.convert_tokens_to_ids(t) for t in specials} == specials
    assert AutoConfig.from_pretrained(built[name]).pad_token_id == tok.pad_token_id == 0


@pytest.mark.parametrize("name", ["nli", "bert"])
def test_a_pair_is_cls_a_sep_b_sep_with_the_second_segment_type_1(built, name):
    enc = AutoTokenizer.from_pretrained(built[name])("cells protein", "gene", return_token_type_ids=True)
    assert enc["input_ids"][0] == 1 and enc["input_ids"][3] == 2 and enc["input_ids"][5] == 2 and len(enc["input_ids"]) == 6
    assert enc["token_type_ids"] == [0, 0, 0, 0, 1, 1]


def test_the_t5_tokenizer_ends_a_text_with_eos(built):
    tok = AutoTokenizer.from_pretrained(built["t5"])
    ids = tok("cells protein")["input_ids"]
    assert len(ids) == 3 and ids[-1] == 1 and tok.unk_token_id not in ids


def test_the_llama_chat_markers_are_single_tokens(built):
    tok = AutoTokenizer.from_pretrained(built["llama"])
    ids = tok.apply_chat_template([{"role": "user", "content": "cells"}], add_generation_prompt=True, tokenize=True)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    # <|user|> cells <|end|> <|assistant|>: 4 tokens, no unknown piece of a marker
    assert ids == [4, tok.convert_tokens_to_ids("cells"), 7, 5]


def test_the_bert_classifier_head_is_spread_eight_fold(built):
    """Its weights start as N(0, 0.02) and are multiplied by 8: a standard deviation of 0.16 (384 weights: within
    about 4% of it by chance; 0.02 without the spread)."""
    w = AutoModelForSequenceClassification.from_pretrained(built["bert"]).classifier.weight.detach()
    assert w.shape == (3, 128) and 0.13 < float(w.std()) < 0.19
