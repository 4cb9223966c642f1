"""The runtimes' length-sorted encodings (citebound/verifiers/runtimes.py) carry every input a tokenizer makes."""


def test_length_sorted_encodings_keep_a_pairs_token_types(graph):
    """encode_sorted pads per batch and must carry every input the tokenizer made, the second segment's type 1
    included (a pair model reads premise and hypothesis apart by it). The tokenizer is MiniLM's own (BERT's
    WordPiece, from the shipped graph's tokenizer.json), which makes token types as BERT's does."""
    from transformers import PreTrainedTokenizerFast

    from citebound.verifiers.runtimes import encode_sorted

    tok = PreTrainedTokenizerFast(tokenizer_file=str(graph[1]), pad_token="[PAD]",
                                  model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    out = encode_sorted(tok, ["cells make protein", "cells"], ["gene", "protein gene"], max_length=32, batch_size=8)
    assert len(out) == 1
    idx, enc = out[0]
    rows = {int(i): k for k, i in enumerate(idx)}
    # [CLS] cells make protein [SEP] gene [SEP]: 7 tokens; [CLS] cells [SEP] protein gene [SEP]: 6, then 1 pad
    assert enc["token_type_ids"][rows[0]].tolist() == [0, 0, 0, 0, 0, 1, 1]
    assert enc["token_type_ids"][rows[1]].tolist()[:6] == [0, 0, 0, 1, 1, 1]
    assert enc["attention_mask"][rows[1]].tolist() == [1] * 6 + [0]
