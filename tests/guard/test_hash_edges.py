"""The verifier hash keys every score cache and calibration: what must move it (the model, a runtime other
than the exact default, a network's weights in either format, a head rewritten in place at the same size) and
what must not (threads, batch size, the exact defaults written out)."""
import json
import os

from citebound.scoring.hashing import model_digest, verifier_hash

BASE = {"name": "v", "kind": "embedding", "model": "package:a"}


def test_the_model_and_a_non_default_runtime_move_the_hash_and_runtime_keys_do_not():
    h = verifier_hash(BASE)
    assert verifier_hash({**BASE, "model": "package:b"}) != h
    assert verifier_hash({**BASE, "runtime": "onnx"}) != h
    assert verifier_hash({**BASE, "quantize": "int8"}) != h
    assert verifier_hash({**BASE, "runtime": "torch", "quantize": "none"}) == h  # the exact defaults, written out
    assert verifier_hash({**BASE, "threads": 4, "batch_size": 7, "device": "cpu", "threshold": 0.9}) == h


def test_a_networks_digest_covers_its_weights_in_either_format(tmp_path):
    for weights in ("model.safetensors", "pytorch_model.bin"):
        d = tmp_path / weights
        d.mkdir()
        (d / "citebound.json").write_text(json.dumps({"design": "cross_encoder", "threshold": 0.5}))
        (d / "config.json").write_text("{}")
        (d / weights).write_bytes(b"\x00" * 64)
        before = model_digest(d)
        (d / weights).write_bytes(b"\x01" * 64)
        after = model_digest(d)
        assert after != before, weights
        (d / "notes.txt").write_text("not part of the model")
        assert model_digest(d) == after


def test_a_head_rewritten_in_place_at_the_same_size_gets_a_new_digest(tmp_path):
    head = tmp_path / "head.json"
    head.write_text('{"intercept": 0.1}')
    os.utime(head, ns=(1_000_000_000, 1_000_000_000))
    first = model_digest(tmp_path)
    head.write_text('{"intercept": 0.2}')  # the same length
    os.utime(head, ns=(2_000_000_000, 2_000_000_000))
    assert model_digest(tmp_path) != first
    assert model_digest(tmp_path / "missing") == "missing"
