"""The contradiction check: its ONNX head against the formula computed here, the veto by hand, the direction
cue, the pinned digest refused when the file changes, and the shipped head turning a known contradiction from
verified to flagged (a known support stays verified) in every face: library, CLI, service, stream, MCP."""
import json
import math
import sys

import numpy as np
import pytest

from citebound.training import contradiction as K

onnxruntime = pytest.importorskip("onnxruntime")

CLAIM = "Vitamin C supplementation prevents the common cold in the general population"
CONTRA = ("In randomised trials in the general population, regular vitamin C supplementation did not reduce the "
          "incidence of the common cold.")
SUPPORT = "Statins lower LDL cholesterol in adults with high cardiovascular risk."
ANSWER = f"{CLAIM} [1]. Statins lower LDL cholesterol in adults [2]."


def test_the_onnx_head_is_the_logistic_formula():
    onnx = pytest.importorskip("onnx")  # building needs onnx (the study's); running it only onnxruntime
    assert onnx
    rng = np.random.default_rng(3)
    f = len(K.FEATURES)
    head = {"mean": rng.normal(size=f).tolist(), "scale": (rng.random(f) + 0.5).tolist(),
            "coef": rng.normal(size=f).tolist(), "intercept": -0.3}
    x = rng.normal(size=(7, f))
    sess = onnxruntime.InferenceSession(K.to_onnx(head), providers=["CPUExecutionProvider"])
    got = sess.run(["p_support"], {"features": x.astype(np.float32)})[0]
    for i in range(7):  # sigmoid(sum_j (x_j - mean_j) / scale_j * coef_j + intercept), one row at a time
        z = sum((x[i, j] - head["mean"][j]) / head["scale"][j] * head["coef"][j] for j in range(f)) + head["intercept"]
        assert got[i] == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-5)
    assert K.p_support(head, x) == pytest.approx(got, abs=1e-5)


def test_the_veto_by_hand():
    emb, p = np.array([0.9, 0.9, 0.3, 0.8]), np.array([0.7, 0.2, 0.1, 0.5])
    # P(support) below 0.5 loses 1; exactly 0.5 does not
    assert K.combined(emb, p).tolist() == pytest.approx([0.9, -0.1, -0.7, 0.8])
    assert K.pair_max(np.array([0.2, -0.1, 0.5]), np.array([1, 0, 0]), 2).tolist() == [0.5, 0.2]


@pytest.mark.parametrize("claim,window,want", [
    ("Aspirin increases bleeding.", "Aspirin decreased bleeding.", 1.0),
    ("Aspirin increases bleeding.", "Aspirin increases bleeding.", 0.0),
    ("Aspirin increases bleeding.", "Aspirin did not significantly change bleeding.", 1.0),
    ("Aspirin had no effect.", "No significant difference was found.", 0.0),
    ("Bleeding rose and fell.", "Bleeding decreased.", 0.0),  # the claim says both ways: no cue
])
def test_the_direction_cue(claim, window, want):
    assert K.direction_mismatch(claim, window) == want


def test_a_changed_head_is_refused_by_its_pinned_digest(tmp_path, monkeypatch):
    import citebound.models as M

    src = M.CONTRADICTION_DIR / "head.onnx"
    d = tmp_path / "contradiction"
    d.mkdir()
    blob = bytearray(src.read_bytes())
    blob[-1] ^= 1
    (d / "head.onnx").write_bytes(bytes(blob))
    monkeypatch.setattr(M, "CONTRADICTION_DIR", d)
    with pytest.raises(M.GraphTampered, match=r"head.onnx: sha256 .* is not the pinned contradiction head"):
        M.contradiction_head("shipped")
    (d / "head.onnx").write_bytes(src.read_bytes())  # the pinned bytes load
    assert M.contradiction_head("shipped")[1] == M.CONTRADICTION


def _guards():
    from citebound import Guard

    return Guard("embedding", reattributor=None), Guard("embedding+contradiction", reattributor=None)


def test_the_veto_flags_a_known_contradiction_and_keeps_a_known_support():
    plain, checked = _guards()
    text, rep = plain.guard(ANSWER, [CONTRA, SUPPORT])
    assert [a.action for a in rep.audit] == ["verified", "verified"]  # the blind spot this check is for
    text, rep = checked.guard(ANSWER, [CONTRA, SUPPORT])
    assert [a.action for a in rep.audit] == ["flagged", "verified"], [a.score for a in rep.audit]
    assert text == f"{CLAIM} [1 UNVERIFIED]. Statins lower LDL cholesterol in adults [2]."
    assert rep.audit[0].score < 0 and "contradicting" in rep.score_scale


def test_every_face_vetoes_it(tmp_path, capsys):
    """CLI, service, the proxy streamed: the same two verdicts."""
    from citebound.cli.main import main

    want = f"{CLAIM} [1 UNVERIFIED]. Statins lower LDL cholesterol in adults [2]."
    src = tmp_path / "a.json"
    src.write_text(json.dumps({"answer": ANSWER, "passages": [CONTRA, SUPPORT]}))
    assert main(["guard", "--input", str(src), "--verifier", "embedding+contradiction", "--no-reattribute",
                 "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["guarded_answer"] == want
    pytest.importorskip("fastapi")
    openai = pytest.importorskip("openai")
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent))
    import httpx
    from fake_stream import FakeStreamingOpenAI, Script
    from service_helpers import running

    from citebound.serving.state import ServeConfig

    pieces = [w + " " for w in ANSWER.split(" ")[:-1]] + [ANSWER.split(" ")[-1]]
    with FakeStreamingOpenAI(lambda body: Script(pieces)) as up, \
            running(ServeConfig(verifier="embedding+contradiction", reattributor=None, upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/guard", json={"answer": ANSWER, "passages": [CONTRA, SUPPORT]}, timeout=60)
        assert r.json()["guarded_answer"] == want
        c = openai.OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0, timeout=60)
        text = "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "q"}], stream=True,
            extra_body={"citebound": {"passages": [CONTRA, SUPPORT]}}) if ch.choices)
        assert text == want


def test_mcp_vetoes_it():
    pytest.importorskip("mcp")
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def call():
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "citebound.cli.main", "mcp", "--verifier", "embedding+contradiction", "--no-reattribute"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("guard_answer", {"answer": ANSWER, "passages": [CONTRA, SUPPORT]})

    body = json.loads(asyncio.run(call()).content[0].text)
    assert body["guarded_answer"] == f"{CLAIM} [1 UNVERIFIED]. Statins lower LDL cholesterol in adults [2]."
    assert [f["cited"] for f in body["failing"]] == [1]


def test_the_shipped_head_is_the_one_pinned_and_its_card_ships_beside_it():
    import citebound.models as M

    path, digest = M.contradiction_head("shipped")
    assert digest == M.CONTRADICTION and (M.CONTRADICTION_DIR / "MODEL_CARD.md").is_file()
    assert path.stat().st_size < 4096  # the head alone: the encoder is the shipped graph


def test_a_text_seen_again_is_not_encoded_again():
    """#52 item 10: the contradiction features reuse a recent text's encoding (a passage's windows recur across
    the claims that cite it and across answers), bounded by memo_texts."""
    from citebound.scoring.loader import verifier_definitions
    from citebound.verifiers import build_verifier

    cfg, _, _ = verifier_definitions("embedding+contradiction", {"memo_texts": 3}, None)
    v = build_verifier(cfg, None)
    calls = []
    real = v.encoder.encode
    v.encoder.encode = lambda texts: calls.append(list(texts)) or real(texts)
    w = ["Statins lower LDL cholesterol.", "Mitochondria produce ATP."]
    first = v.judge(["Statins lower LDL.", "Statins lower LDL."], w)
    again = v.judge(["Statins lower LDL.", "Statins lower LDL."], w)
    assert calls == [["Statins lower LDL.", "Statins lower LDL cholesterol.", "Mitochondria produce ATP."]]
    assert (first[0] == again[0]).all()
    v.judge(["A.", "B."], ["C.", "D."])  # four new texts: the memo keeps the last 3
    assert len(v.encoder._memo) == 3 and "A." not in v.encoder._memo
