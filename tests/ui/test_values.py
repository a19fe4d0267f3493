"""How the explorer shows values: decoded without pickle, redacted by path, truncated."""

from __future__ import annotations

from actionjournal.durable.values import ValueCodec
from actionjournal.tools.ui.values import REDACTED, Shown

CODEC = ValueCodec()


class Unpicklable:
    """Any class msgspec cannot hold: journaled by pickle, when a job allows it."""

    def __init__(self) -> None:
        self.secret = "s"

    def __setstate__(self, state):
        raise AssertionError("the explorer unpickled a journal value")


def test_paths_hide_fields_at_their_place_or_by_name_anywhere():
    order = {"order": "o-1", "card": {"number": "4111", "cvc": "123"}, "items": [{"sku": "a"}]}
    data = CODEC.encode(order)
    assert "4111" in Shown().value(data, "input")
    by_path = Shown(["input.card.number"]).value(data, "input")
    assert "4111" not in by_path and "123" in by_path and REDACTED in by_path
    assert "4111" in Shown(["result.card.number"]).value(data, "input")  # another root
    anywhere = Shown(["cvc"]).value(data, "input")
    assert "123" not in anywhere and "4111" in anywhere
    wildcard = Shown(["input.*.number"]).value(data, "input")
    assert "4111" not in wildcard
    assert Shown(["input"]).value(data, "input") == REDACTED  # the whole value
    in_lists = Shown(["input.items.sku"]).value(data, "input")
    assert '"a"' not in in_lists


def test_long_values_are_cut_and_pickled_ones_never_unpickled():
    shown = Shown(preview=40)
    text = shown.value(CODEC.encode("x" * 1000), "result")
    assert len(text) == 40 and text.endswith("…")
    pickled = ValueCodec(allow_pickle=True).encode(Unpicklable())
    assert shown.value(pickled, "result").startswith(f"<{len(pickled)} bytes, not shown")
