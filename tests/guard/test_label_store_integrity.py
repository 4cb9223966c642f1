"""A labels file is resumed only when it is this sample's, each item once (#56, round 94): an item labelled twice
(the file edited by hand, or two files joined) would count twice in the calibration; labels of items outside the
sample come from another sample. Both are refused, naming the file and the item."""
import json

import pytest

from citebound.labelling.store import Item, LabelError, LabelSession, LabelStore


def record(item_id: str, judgement: str = "unsupported") -> dict:
    return {"item_id": item_id, "judgement": judgement, "label": {"supported": 1, "unsupported": 0}[judgement],
            "labeller": "t", "position": 0, "note": "", "score": 0.4}


def item(item_id: str, position: int) -> Item:
    return Item(item_id, position, "a", "Statins lower LDL [1].", 0, 22, "Statins lower LDL", 1, "Statins lower LDL.",
                0, 18, 0.4)


def test_an_item_labelled_twice_is_refused(tmp_path):
    f = tmp_path / "labels.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [record("a#s0#c1"), record("a#s1#c2", "supported"),
                                                         record("a#s0#c1", "supported")]))
    with pytest.raises(LabelError, match=r"labels\.jsonl: item 'a#s0#c1' is labelled twice"):
        LabelStore(f, {})
    # the item named is the one labelled twice, not the file's first
    f.write_text("".join(json.dumps(r) + "\n" for r in [record("a#s0#c1"), record("a#s1#c2"), record("a#s1#c2")]))
    with pytest.raises(LabelError, match=r"item 'a#s1#c2' is labelled twice"):
        LabelStore(f, {})
    f.write_text("".join(json.dumps(r) + "\n" for r in [record("a#s0#c1"), record("a#s1#c2", "supported")]))
    assert list(LabelStore(f, {}).labelled) == ["a#s0#c1", "a#s1#c2"]


def test_labels_of_items_outside_the_sample_are_refused(tmp_path):
    f = tmp_path / "labels.jsonl"
    f.write_text(json.dumps(record("a#s0#c1")) + "\n" + json.dumps(record("other#s3#c1")) + "\n")
    sample = [item("a#s0#c1", 0), item("a#s1#c2", 1)]
    with pytest.raises(LabelError, match=r"labels\.jsonl: labels for items outside this sample \(\['other#s3#c1'\]"):
        LabelSession(sample, LabelStore(f, {}), "t")
    f.write_text(json.dumps(record("a#s0#c1")) + "\n")
    s = LabelSession(sample, LabelStore(f, {}), "t")
    assert s.current().item_id == "a#s1#c2"  # resumed where labelling stopped
