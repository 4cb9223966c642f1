"""The chat backends at their edges (citebound/scoring/llm_backends.py): the in-process endpoint started once and
let go on close, a tokenizer without a pad token, a tokenizer that adds a beginning-of-sequence token (the chat
template has its own), a served model's answer with no content, and what reaches paper-qa's endpoint."""
import pytest

pytest.importorskip("transformers")
from fake_openai import FakeOpenAI  # noqa: E402

from citebound.scoring.llm_backends import OpenAIBackend, TransformersBackend, build_backend  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny Llama whose vocabulary holds 'yes' and 'no', saved three ways: as built (pad <pad>, no special tokens
    added), without a pad token, and with a tokenizer that puts <s> before every text it encodes."""
    import shutil

    from tokenizers import processors
    from transformers import AutoTokenizer

    from citebound.study.tiny import build_tiny_llama

    base = build_tiny_llama(tmp_path_factory.mktemp("llama") / "m", ["yes no cells make protein", "mitochondria atp"])
    out = {"base": base}
    for name in ("nopad", "bos"):
        d = tmp_path_factory.mktemp(name) / "m"
        shutil.copytree(base, d)
        tok = AutoTokenizer.from_pretrained(d)
        if name == "nopad":
            tok.pad_token = None
        else:
            tok._tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
        tok.save_pretrained(d)
        out[name] = d
    return out


SHORT = [{"role": "user", "content": "cells"}]
LONG = [{"role": "user", "content": "mitochondria make atp in cells and cells make protein"}]


def test_the_in_process_endpoint_starts_once_and_close_lets_it_go(tiny):
    b = TransformersBackend({"model": str(tiny["base"]), "max_new_tokens": 2})
    first = b.endpoint()
    assert b.endpoint().base_url == first.base_url  # one server, however often it is asked
    server = b._server
    b.close()
    server._threads[1].join(10)
    assert not server._threads[1].is_alive()  # the closed server's batch thread ended
    b.endpoint()
    assert b._server is not server and b._server._threads[1].is_alive()  # a fresh server, not the closed one
    b.close()


def test_a_tokenizer_without_a_pad_token_pads_with_its_end_of_sequence(tiny):
    b = TransformersBackend({"model": str(tiny["nopad"]), "max_new_tokens": 2})
    assert b.tok.pad_token == "</s>"
    out = b.chat([SHORT, LONG])  # unequal lengths: a batch that must be padded
    assert len(out) == 2 and out[0].prompt_tokens < out[1].prompt_tokens


def test_a_prompt_is_the_chat_templates_tokens_with_no_second_beginning_of_sequence(tiny):
    """The tokenizer adds <s> to any text it encodes; the chat template's text is encoded without it, so a prompt's
    count is the template's own tokens (the same as with the plain tokenizer), and 'yes'/'no' are their own ids."""
    plain = TransformersBackend({"model": str(tiny["base"]), "max_new_tokens": 2})
    bos = TransformersBackend({"model": str(tiny["bos"]), "max_new_tokens": 2})
    assert bos.tok("cells")["input_ids"][0] == 1  # the tokenizer does add <s>
    assert [c.prompt_tokens for c in bos.chat([SHORT, LONG])] == [c.prompt_tokens for c in plain.chat([SHORT, LONG])]
    assert bos._encode([SHORT])["input_ids"][0].tolist() == plain._encode([SHORT])["input_ids"][0].tolist()
    msgs = [[{"role": "user", "content": "cells make protein yes or no"}]]
    assert bos.yes_probability(msgs) == pytest.approx(plain.yes_probability(msgs), abs=1e-6)
    assert bos.yes_probability(msgs)[0] != pytest.approx(0.5, abs=1e-9)  # yes and no are two tokens, not <s> twice


def test_a_served_answer_with_no_content_reads_as_empty_and_the_endpoint_keeps_the_template_kwargs(monkeypatch):
    monkeypatch.setenv("CITEBOUND_TEST_KEY", "k")
    with FakeOpenAI(lambda body: None, usage=(7, 0)) as up:
        b = OpenAIBackend({"base_url": up.base_url, "model": "m", "api_key_env": "CITEBOUND_TEST_KEY",
                           "chat_template_kwargs": {"enable_thinking": False}})
        try:
            (c,) = b.chat([SHORT])
        finally:
            ep = b.endpoint()
            b.close()
    assert (c.text, c.prompt_tokens, c.completion_tokens) == ("", 7, 0)
    assert up.requests[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert ep.extra_body == {"chat_template_kwargs": {"enable_thinking": False}}


def test_a_config_naming_no_backend_loads_the_model_in_process(tiny):
    b = build_backend({"model": str(tiny["base"]), "max_new_tokens": 2})
    assert isinstance(b, TransformersBackend)
    with pytest.raises(ValueError, match="unknown generation backend 'hf'"):
        build_backend({"backend": "hf", "model": "x"})
