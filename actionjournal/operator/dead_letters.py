"""Dead letters: runs the run failure policy set aside, with what a user needs to act on them.

A dead letter is also how a run is re-driven: give it back to the agent as an input of its
key (``LocalRunner.submit(key, dead_letter)``, or a stream of dead letters united with the
job's input) and the same run, the same ``(key, seq)``, runs again against its journal.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import msgspec

from actionjournal.durable.values import ValueCodec


@dataclass(frozen=True)
class DeadLetter:
    """A dead-lettered run: its key and input, why it failed, and where the journal says so.

    ``error`` is the failure as the run reported it (it names the action and the durable
    call); ``error_type`` the dotted type of the exception at its root and
    ``error_message`` that exception's own message (its ``str()``); ``action`` and
    ``call_id`` the failed action and durable call, when known. ``partition`` and
    ``position`` locate the run's final ``RunFailed`` record; both are ``None`` when the
    dead letter was handed out again after a restore (the record had been written before).
    ``number`` counts the run's dead letters: a re-drive that fails again gives number 2.
    """

    key: Any
    seq: int
    input: Any
    error: str
    error_type: str
    when: float
    key_id: str
    partition: int | None = None
    position: int | None = None
    number: int = 1
    error_message: str = ""
    action: str | None = None  # the action that failed, when the run's error says
    call_id: str | None = None  # the durable call whose final failure failed it, if one did

    def to_json(self) -> str:
        """One JSON object: readable fields, and ``data``, what :meth:`from_json` rebuilds the
        key and input from exactly (tuples stay tuples; a key of another type is another key)."""
        codec = ValueCodec()
        doc = {
            "key": _readable(self.key),
            "seq": self.seq,
            "error": self.error,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "action": self.action,
            "call_id": self.call_id,
            "when": self.when,
            "key_id": self.key_id,
            "partition": self.partition,
            "position": self.position,
            "number": self.number,
            "input": _readable(self.input),
            "data": base64.b64encode(codec.encode([self.key, self.input])).decode(),
        }
        return msgspec.json.encode(doc).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> DeadLetter:
        """The dead letter :meth:`to_json` wrote (e.g. read back from a dead-letter topic)."""
        doc = msgspec.json.decode(text)
        key, value = ValueCodec().decode(base64.b64decode(doc["data"]))
        return cls(
            key=key,
            seq=doc["seq"],
            input=value,
            error=doc["error"],
            error_type=doc["error_type"],
            when=doc["when"],
            key_id=doc["key_id"],
            partition=doc.get("partition"),
            position=doc.get("position"),
            number=doc.get("number", 1),
            error_message=doc.get("error_message", ""),
            action=doc.get("action"),
            call_id=doc.get("call_id"),
        )


def _readable(value: Any) -> Any:
    """``value`` if JSON holds it as it is, else its ``repr`` (``data`` has the exact value)."""
    try:
        if msgspec.json.decode(msgspec.json.encode(value)) == value:
            return value
    except (TypeError, ValueError, msgspec.DecodeError):
        pass
    return repr(value)
