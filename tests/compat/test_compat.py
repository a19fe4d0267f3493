"""Golden state of every format version restores with the current code.

``tests/compat/<format version>/`` holds files written by ``tests/compat/generate.py``
with the code of that version; they are never regenerated. Every directory must keep
passing. A directory with a ``BREAK.md`` documents a deliberate break and its upgrade
path (docs/compatibility.md): its data may then be refused, but only with an
actionjournal error (a clear message), never decoded into something else.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actionjournal.durable.codec import RECORD_TYPES, RecordCodec
from actionjournal.durable.error_records import rebuild_error
from actionjournal.durable.errors import ActionJournalError, SignatureError
from actionjournal.durable.records import FORMAT_VERSION, CallFinished, Marker
from actionjournal.durable.values import ValueCodec
from actionjournal.operator.engine import KeyState
from tests.compat import restore

HERE = Path(__file__).resolve().parent
VERSIONS = sorted(int(p.name) for p in HERE.iterdir() if p.is_dir() and p.name.isdigit())
STATE_TYPES = {"Marker": Marker, "KeyState": KeyState}


@pytest.fixture(params=VERSIONS, ids=lambda v: f"v{v}")
def golden(request: pytest.FixtureRequest) -> Path:
    return HERE / str(request.param)


@contextlib.contextmanager
def unless_broken(golden: Path) -> Iterator[None]:
    """Everything must match; in a directory with BREAK.md it may instead be refused with an
    actionjournal error (a clear message), never read as something else."""
    if not (golden / "BREAK.md").exists():
        yield
        return
    with contextlib.suppress(ActionJournalError):
        yield


def shaped(value: Any, golden: Any) -> Any:
    """``value`` as builtins in the shape of ``golden``: each record, nested ones too, cut to
    the fields its golden has. Fields added since are trailing and hold their defaults."""
    if isinstance(value, msgspec.Struct):
        tag = type(value).__struct_config__.tag
        head = [tag] if tag is not None else []
        fields = msgspec.structs.fields(value)
        kept = len(golden) - len(head)
        added = fields[kept:]
        assert [getattr(value, f.name) for f in added] == [_default(f) for f in added], added
        values = [getattr(value, f.name) for f in fields[:kept]]
        return head + [shaped(v, g) for v, g in zip(values, golden[len(head) :], strict=True)]
    if isinstance(value, list | tuple) and isinstance(golden, list) and len(value) == len(golden):
        return [shaped(v, g) for v, g in zip(value, golden, strict=True)]
    return msgspec.to_builtins(value)


def _default(field: msgspec.structs.FieldInfo) -> Any:
    """A field's default (a list's: its factory's, an empty list)."""
    if field.default is msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def test_the_current_format_has_golden_files_and_none_is_newer():
    assert FORMAT_VERSION in VERSIONS, (
        f"no tests/compat/{FORMAT_VERSION}/: run `python -m tests.compat.generate` and commit it"
    )
    assert max(VERSIONS) == FORMAT_VERSION


def test_records_of_every_type_decode(golden):
    with unless_broken(golden):
        manifest = json.loads((golden / "records.json").read_text())
        key = manifest["signing_key"].encode()
        for entry in manifest["records"]:
            data = (golden / entry["file"]).read_bytes()
            codec = RecordCodec(key) if entry["signed"] else RecordCodec()
            record = codec.decode(data, entry["file"])
            assert type(record).__name__ == entry["type"], entry["file"]
            assert shaped(record, entry["fields"]) == entry["fields"], entry["file"]
            if entry["signed"]:
                with pytest.raises(SignatureError, match="does not match"):
                    RecordCodec(b"another key").decode(data)
            else:
                with pytest.raises(SignatureError, match="unsigned record"):
                    RecordCodec(key).decode(data)
        covered = {entry["type"] for entry in manifest["records"]}
        if golden.name == str(FORMAT_VERSION):
            assert covered == {cls.__name__ for cls in RECORD_TYPES}, "a record type has no golden"


def test_values_and_errors_decode(golden):
    with unless_broken(golden):
        manifest = json.loads((golden / "records.json").read_text())
        values = ValueCodec()
        for entry in manifest["values"]:
            decoded = values.decode((golden / entry["file"]).read_bytes())
            assert restore.describe(decoded) == entry["decodes_to"], entry["name"]
        (failed,) = [e for e in manifest["records"] if e["file"].endswith("error.unsigned.bin")]
        record = RecordCodec().decode((golden / failed["file"]).read_bytes())
        assert isinstance(record, CallFinished) and record.error is not None
        error = rebuild_error(values, record.error)
        expected = manifest["error"]
        assert f"{type(error).__module__}.{type(error).__qualname__}" == expected["type"]
        assert str(error) == expected["message"]
        cause = error.__cause__
        assert f"{type(cause).__module__}.{type(cause).__qualname__}" == expected["cause"]


def test_markers_and_keyed_state_decode(golden):
    with unless_broken(golden):
        manifest = json.loads((golden / "state.json").read_text())
        for entry in manifest["state"]:
            data = (golden / entry["file"]).read_bytes()
            decoded = msgspec.msgpack.decode(data, type=STATE_TYPES[entry["type"]])
            # Fields added since (trailing, with defaults) decode to their defaults.
            expected = msgspec.convert(entry["fields"], type=STATE_TYPES[entry["type"]])
            assert decoded == expected, entry["file"]


def assert_every_call_ran_once(restored: restore.Restored, source: list) -> None:
    assert len(restored.totals) == 3 * len(source)  # charge, ship, notify for every input
    repeated = {cid: n for cid, n in restored.totals.items() if n != 1}
    assert repeated == {}, "a call ran twice across the golden state's restore"


def test_local_runner_snapshot_restores_and_finishes_its_pending_runs(golden, tmp_path):
    with unless_broken(golden):
        job = golden / "local"
        expected = restore.load_expected(job)
        restored = restore.restore_local(job, tmp_path)
        assert restored.summary() == expected["restore"]
        assert_every_call_ran_once(restored, expected["source"])
        assert restored.engine["actions_replayed"] > 0 and restored.engine["reconciled"] > 0


@pytest.mark.flink
@pytest.mark.slow
def test_flink_savepoint_restores_in_a_new_job(golden, tmp_path):
    with unless_broken(golden):
        job = golden / "flink"
        expected = restore.load_expected(job)
        restored = restore.restore_flink(job, tmp_path)
        assert restored.summary() == expected["restore"]
        assert_every_call_ran_once(restored, expected["source"])
