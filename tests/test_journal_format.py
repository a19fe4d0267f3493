"""docs/journal-format.md is complete and right: every record type of the code is on it as the
code lays it out, and a reader written from the page alone (tests/format_reader.py) decodes
the golden records of every format version and records of every type that the codec, the
SQLite store and the Kafka store write now."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actionjournal.durable import values as value_codes
from actionjournal.durable.codec import RECORD_TYPES, RecordCodec
from actionjournal.durable.records import FORMAT_VERSION, JournalRecord
from actionjournal.stores.sqlite import SqliteStore
from tests import format_reader
from tests.format_reader import Decoded, Ext, Spec, read_page, read_record, unpack

COMPAT = Path(__file__).resolve().parent / "compat"
VERSIONS = sorted(p for p in COMPAT.iterdir() if p.is_dir() and p.name.isdigit())
KEY = b"journal-format-test-key"


@pytest.fixture(scope="module")
def spec() -> Spec:
    return read_page()


# -- the page against the code ---------------------------------------------------------------


def page_type(t: msgspec.inspect.Type) -> str:
    """How the page writes the type of a field of this type."""
    if isinstance(t, msgspec.inspect.UnionType):
        others = [x for x in t.types if not isinstance(x, msgspec.inspect.NoneType)]
        assert len(others) == 1 and len(others) < len(t.types), t
        return f"{page_type(others[0])} or nil"
    if isinstance(t, msgspec.inspect.ListType):
        return f"array of {page_type(t.item_type)}"
    if isinstance(t, msgspec.inspect.StructType):
        return t.cls.__name__
    if isinstance(t, msgspec.inspect.LiteralType):
        assert all(isinstance(v, str) for v in t.values), t
        return "str"
    names = {
        msgspec.inspect.StrType: "str",
        msgspec.inspect.IntType: "int",
        msgspec.inspect.FloatType: "float",
        msgspec.inspect.BoolType: "bool",
        msgspec.inspect.BytesType: "bin",
    }
    return names[type(t)]


def page_default(field: msgspec.inspect.Field) -> str:
    if field.required:
        return "required"
    if field.default_factory is list:
        return "empty array"
    if type(field.default) is int:  # not False, which equals 0
        return str(field.default)
    return {"": "", False: "false", None: "nil", b"": "empty"}[field.default]


def code_fields(cls: type) -> list[tuple[str, str, str]]:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType) and info.array_like, cls
    return [(f.name, page_type(f.type), page_default(f)) for f in info.fields]


def nested_structs(t: msgspec.inspect.Type, found: set[type]) -> set[type]:
    """The struct types in ``t`` (``found``: those already seen; ErrorInfo holds itself)."""
    for sub in getattr(t, "types", ()) or (getattr(t, "item_type", None),):
        if sub is not None:
            nested_structs(sub, found)
    if isinstance(t, msgspec.inspect.StructType) and t.cls not in found:
        found.add(t.cls)
        for f in t.fields:
            nested_structs(f.type, found)
    return found


def test_every_record_type_of_the_code_is_on_the_page_as_the_code_lays_it_out(spec):
    page = {t.name: t for t in spec.types.values()}
    common = len(spec.prefix) - 1  # fields of the prefix (the tag is none)
    for cls, code in RECORD_TYPES.items():
        tag = cls.__struct_config__.tag
        rows = "\n".join(
            f"| {i} | {name} | {kind} | {absent or chr(34) * 2} | what it means |"
            for i, (name, kind, absent) in enumerate(code_fields(cls)[common:], common + 1)
        )
        assert cls.__name__ in page, (
            f"docs/journal-format.md does not document record type {cls.__name__}: add a row "
            f"`| {code} | `{tag}` | {cls.__name__} | written when ... |` to its Record types "
            f'table and a section `### {cls.__name__} (code {code}, tag "{tag}")` saying what '
            f"the record is for, with the table of its fields after the common prefix:\n{rows}"
        )
        documented = page[cls.__name__]
        assert (documented.code, documented.tag) == (code, tag), cls
        assert [(f.name, f.type, f.absent) for f in documented.fields[1:]] == code_fields(cls), (
            f"docs/journal-format.md lays out {cls.__name__} otherwise than the code: fix the "
            "page (new fields go at the end, with a default)"
        )
    assert sorted(page) == sorted(c.__name__ for c in RECORD_TYPES), "types the code lacks"
    assert spec.summary == {t.code: (t.tag, t.name) for t in spec.types.values()}, (
        "the Record types table and the sections of the types differ"
    )


def test_every_structure_inside_records_is_on_the_page(spec):
    inner = set()
    for cls in RECORD_TYPES:
        inner |= nested_structs(msgspec.inspect.type_info(cls), set()) - {cls}
    assert {c.__name__ for c in inner} == set(spec.nested)
    for cls in inner:
        documented = [(f.name, f.type, f.absent) for f in spec.nested[cls.__name__]]
        assert documented == code_fields(cls), f"the page lays out {cls.__name__} otherwise"


def test_the_page_states_the_current_version_and_every_value_extension_code(spec):
    assert spec.version == FORMAT_VERSION
    # the module's private int constants are its extension codes (_PYDANTIC = 1, ...)
    codes = {v for k, v in vars(value_codes).items() if k.startswith("_") and type(v) is int}
    assert set(spec.extensions) == codes, "value extension codes missing from the page"


def test_the_page_gives_the_sqlite_and_fluss_columns_the_stores_create(spec, tmp_path):
    SqliteStore(tmp_path / "journal.db").close()
    with sqlite3.connect(tmp_path / "journal.db") as db:
        columns = db.execute("PRAGMA table_info(journal)").fetchall()
    page = [(name, kind.split()[0]) for name, kind in spec.stores["SQLite"]]
    assert page == [(name, kind) for _, name, kind, *_ in columns]
    fluss_table = pytest.importorskip("actionjournal.stores.fluss.table")
    types = {"string": "STRING", "binary": "BYTES"}
    columns = [(f.name, types[str(f.type)]) for f in fluss_table.SCHEMA]
    assert spec.stores["Fluss"] == columns and fluss_table.BUCKET_KEY == "key_id"


# -- golden records ---------------------------------------------------------------------------


def builtins(value: Any) -> Any:
    """What the golden manifests hold: JSON, bytes in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, list):
        return [builtins(v) for v in value]
    return value


@pytest.mark.parametrize("golden", VERSIONS, ids=lambda p: f"v{p.name}")
def test_the_page_reads_the_golden_records_of_every_version(spec, golden):
    manifest = json.loads((golden / "records.json").read_text())
    key = manifest["signing_key"].encode()
    seen = set()
    for entry in manifest["records"]:
        data = (golden / entry["file"]).read_bytes()
        found = read_record(spec, data, key if entry["signed"] else None)
        assert (found.type.name, found.signed) == (entry["type"], entry["signed"]), entry["file"]
        assert builtins(found.payload) == entry["fields"], entry["file"]
        if entry["signed"]:
            with pytest.raises(format_reader.FormatError, match="signature"):
                read_record(spec, data, b"another key")
        seen.add(entry["type"])
    assert seen == {t.name for t in spec.types.values() if t.code in _golden_codes(golden)}


def _golden_codes(golden: Path) -> set[int]:
    return {(golden / f).read_bytes()[3] for f in _files(golden)}


def _files(golden: Path) -> list[str]:
    return [r["file"] for r in json.loads((golden / "records.json").read_text())["records"]]


def described(value: Any) -> Any:
    """A value read as the page's Values section says, in the golden manifest's notation."""
    if isinstance(value, Ext):
        data = unpack(value.data)
        if value.code == 1:  # pydantic model: class name, model_dump
            return {"model": data[0], "fields": data[1]}
        if value.code == 3:  # tuple
            return [described(v) for v in data]
        raise AssertionError(f"no golden value has extension {value.code}")
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {"dict": [[described(k), described(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [described(v) for v in value]
    return value


@pytest.mark.parametrize("golden", VERSIONS, ids=lambda p: f"v{p.name}")
def test_the_page_reads_the_golden_values(spec, golden):
    for sample in json.loads((golden / "records.json").read_text())["values"]:
        value = unpack((golden / sample["file"]).read_bytes())
        assert described(value) == sample["decodes_to"], sample["name"]


# -- records written now ----------------------------------------------------------------------


def sample(t: msgspec.inspect.Type, name: str, full: bool, depth: int = 0) -> Any:
    """A value of type ``t``: ``full`` fills optional parts, otherwise they are nil."""
    if isinstance(t, msgspec.inspect.UnionType):
        (other,) = [x for x in t.types if not isinstance(x, msgspec.inspect.NoneType)]
        return sample(other, name, full, depth) if full and depth < 2 else None
    if isinstance(t, msgspec.inspect.ListType):
        return [sample(t.item_type, name, full, depth + 1) for _ in range(2 if full else 0)]
    if isinstance(t, msgspec.inspect.StructType):
        return build(t.cls, full, depth + 1)
    if isinstance(t, msgspec.inspect.LiteralType):
        return t.values[-1 if full else 0]
    return {
        msgspec.inspect.StrType: f"{name}-ü",
        msgspec.inspect.IntType: 2**40 if full else 3,
        msgspec.inspect.FloatType: 1_767_225_600.25,
        msgspec.inspect.BoolType: True,
        msgspec.inspect.BytesType: b"\x00\xff" + name.encode(),
    }[type(t)]


def build(cls: type, full: bool, depth: int = 0) -> Any:
    """An instance of a record (or nested) type: optional trailing fields set when ``full``,
    left at their defaults otherwise."""
    info = msgspec.inspect.type_info(cls)
    values = {
        f.name: sample(f.type, f.name, full, depth) for f in info.fields if f.required or full
    }
    return cls(**values)


def samples() -> list[JournalRecord]:
    """Two records of every type (one with every optional part), each of another key."""
    records = [build(cls, full) for cls in RECORD_TYPES for full in (True, False)]
    return [msgspec.structs.replace(r, key_id=f"key-{i}") for i, r in enumerate(records)]


def fields_of(value: Any) -> Any:
    """A record (or nested struct) as the reader's dicts: field name to value."""
    if isinstance(value, msgspec.Struct):
        return {f: fields_of(getattr(value, f)) for f in value.__struct_fields__}
    if isinstance(value, list):
        return [fields_of(v) for v in value]
    return value


def check(decoded: Decoded, record: JournalRecord, signed: bool) -> None:
    assert decoded.type.name == type(record).__name__
    assert decoded.signed is signed
    assert decoded.fields == {"tag": decoded.type.tag, **fields_of(record)}


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_the_page_reads_every_record_type_the_codec_writes(spec, signed):
    codec = RecordCodec(KEY if signed else None)
    for record in samples():
        check(read_record(spec, codec.encode(record), KEY if signed else None), record, signed)


def test_the_page_refuses_what_it_says_a_reader_refuses(spec):
    data = RecordCodec().encode(samples()[0])
    with pytest.raises(format_reader.FormatError, match="unsigned record in a signed"):
        read_record(spec, data, KEY)
    with pytest.raises(format_reader.FormatError, match="newer"):
        read_record(spec, data[:2] + bytes([FORMAT_VERSION + 1]) + data[3:])
    with pytest.raises(format_reader.FormatError, match="not a journal record"):
        read_record(spec, b"{" + data[1:])


def test_sqlite_rows_are_as_the_page_says(spec, tmp_path):
    store = SqliteStore(tmp_path / "journal.db", RecordCodec(KEY))
    records = samples()
    for record in records:
        store.append(record)
    store.close()
    with sqlite3.connect(f"file:{tmp_path / 'journal.db'}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT pos, namespace, operator_uid, key_id, seq, body FROM journal ORDER BY pos"
        ).fetchall()
        (uid,) = db.execute("SELECT v FROM meta WHERE k = 'store_uid'").fetchone()
    assert uid and len(rows) == len(records)
    for (_pos, namespace, uid_, key_id, seq, body), record in zip(rows, records, strict=True):
        decoded = read_record(spec, body, KEY)
        check(decoded, record, True)
        assert (namespace, uid_, key_id, seq) == (
            decoded.fields["namespace"],
            decoded.fields["operator_uid"],
            decoded.fields["key_id"],
            decoded.fields["seq"],
        )


@pytest.mark.kafka
def test_kafka_messages_are_as_the_page_says(spec, aj_kafka):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from actionjournal.stores.kafka import KafkaStore

    store = KafkaStore(aj_kafka, RecordCodec(KEY))
    records = samples()
    try:
        for record in records:
            store.append(record)
    finally:
        store.close()
    consumer = Consumer(
        {
            "bootstrap.servers": aj_kafka.bootstrap_servers,
            "group.id": "journal-format-test",
            "enable.auto.commit": False,
        }
    )
    partitions = range(aj_kafka.partitions)
    consumer.assign([TopicPartition(aj_kafka.topic, p, OFFSET_BEGINNING) for p in partitions])
    messages: list[Any] = []
    deadline = time.monotonic() + 60  # a bound on waiting, not a speed target
    try:
        while len(messages) < len(records) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    assert len(messages) == len(records)
    parts = [part for part, _ in spec.stores["Kafka"]]
    headers = {part.removeprefix("header ") for part in parts if part.startswith("header ")}
    remaining = list(records)
    for message in messages:
        decoded = read_record(spec, message.value(), KEY)
        (record,) = [r for r in remaining if fields_of(r) == _without_tag(decoded.fields)][:1]
        remaining.remove(record)
        check(decoded, record, True)
        assert message.key() == decoded.fields["key_id"].encode()
        assert set(dict(message.headers())) == headers == {"aj.namespace", "aj.operator_uid"}
        assert dict(message.headers()) == {
            "aj.namespace": decoded.fields["namespace"].encode(),
            "aj.operator_uid": decoded.fields["operator_uid"].encode(),
        }
        key_id = decoded.fields["key_id"]
        assert message.partition() == format_reader.kafka_partition(key_id, aj_kafka.partitions)
    assert remaining == []


def _without_tag(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k != "tag"}


@pytest.mark.fluss
@pytest.mark.slow
def test_fluss_rows_are_as_the_page_says(spec, aj_fluss):
    fluss = pytest.importorskip("fluss")
    from actionjournal.stores.fluss import FlussStore

    store = FlussStore(aj_fluss, RecordCodec(KEY))
    records = samples()
    try:
        for record in records:
            store.append(record)
    finally:
        store.close()
    columns = [name for name, _ in spec.stores["Fluss"]]

    async def rows() -> list[dict[str, Any]]:
        conn = await fluss.FlussConnection.create(
            fluss.Config({"bootstrap.servers": aj_fluss.bootstrap_servers})
        )
        try:
            table = await conn.get_table(fluss.TablePath(aj_fluss.database, aj_fluss.table))
            scanner = await table.new_scan().create_record_batch_log_scanner()
            scanner.subscribe_buckets({b: 0 for b in range(aj_fluss.buckets)})
            found: list[dict[str, Any]] = []
            deadline = time.monotonic() + 60  # a bound on waiting, not a speed target
            while len(found) < len(records) and time.monotonic() < deadline:
                for batch in await scanner.poll_record_batch(1000):
                    found += batch.batch.select(columns).to_pylist()
            return found
        finally:
            await conn.close()

    found = asyncio.run(rows())
    assert len(found) == len(records)
    remaining = list(records)
    for row in found:
        decoded = read_record(spec, row["record"], KEY)
        (record,) = [r for r in remaining if fields_of(r) == _without_tag(decoded.fields)][:1]
        remaining.remove(record)
        check(decoded, record, True)
        identity = [c for c in columns if c != "record"]  # key_id, namespace, operator_uid
        assert {c: row[c] for c in identity} == {c: decoded.fields[c] for c in identity}
    assert remaining == []
