"""``actionjournal journal quarantine``: skip one unreadable record, as an audited decision.

A record of a key that cannot be read stops that key's recovery (it may hold what a run
did). When it cannot be repaired, this command journals a ``Quarantined`` record next to
the key's records; recovery then skips the unreadable record, and durable calls whose
start or outcome it may have held follow their ``on_unknown`` policy (docs/operations.md).
It refuses anything else: a record that reads fine, a foreign record (jobs skip those
already), another namespace's record, a record already quarantined.
"""

from __future__ import annotations

import argparse
import time

from actionjournal.durable.records import CONTROL_KEY, Quarantined
from actionjournal.durable.store import Cleanable, Inspectable, ScannedRecord
from actionjournal.tools.store_options import (
    add_store_args,
    describe,
    opened,
    record_codec,
    store_config,
)
from actionjournal.tools.toolkit import (
    EXIT_OK,
    ArgumentParser,
    ToolError,
    add_namespace_args,
    positive_int,
)


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal journal quarantine",
        description="Make recovery skip one record that cannot be read (an audited decision, "
        "journaled). The error that stopped the key prints this command with its options.",
    )
    add_store_args(p)
    add_namespace_args(p)
    p.add_argument(
        "--partition",
        type=positive_int,
        default=0,
        metavar="N",
        help="the record's partition (Kafka) or bucket (Fluss) (default: 0)",
    )
    p.add_argument(
        "--position",
        type=positive_int,
        required=True,
        metavar="P",
        help="the record's offset (Kafka, Fluss) or row (SQLite)",
    )
    p.add_argument(
        "--reason",
        default="",
        help="why, for the audit trail (default: the error the record gives)",
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    where = f"partition {args.partition} position {args.position} of {describe(config)}"
    codec = record_codec(args)
    with opened(config, codec, write=True) as store:
        if args.partition not in store.partitions():
            raise ToolError(f"{describe(config)} has no partition {args.partition}")
        item = _record_at(store, args.partition, args.position, args.namespace)
        if item is None:
            low, high = store.position_range(args.partition)
            raise ToolError(
                f"no record at {where} (it holds positions [{low}, {high})); nothing quarantined"
            )
        _refuse(item, args, where)
        if item.key_id != CONTROL_KEY and store.partition_of(item.key_id) != args.partition:
            raise ToolError(
                f"the record at {where} is filed under key {item.key_id}, whose records are in "
                f"partition {store.partition_of(item.key_id)}: recovery never reads it; "
                "nothing quarantined"
            )
        uid = item.operator_uid
        done, signed = _decisions(store, args.partition, args.position, args.namespace, uid)
        if done is not None:
            print(f"{where} was already quarantined at position {done}; nothing to do")
            return EXIT_OK
        if signed and not codec.signed:
            raise ToolError(
                "the journal's records are signed: give --signing-key-env VAR (VAR holding "
                "journal.signing_key), or the job would refuse the decision as unsigned; "
                "nothing quarantined"
            )
        record = Quarantined(
            namespace=args.namespace,
            operator_uid=uid,
            epoch=0,
            key_id=item.key_id,
            seq=0,
            partition=args.partition,
            position=args.position,
            size=item.size,
            reason=args.reason or item.error,
            at=time.time(),
        )
        if item.key_id == CONTROL_KEY:
            if not isinstance(store, Cleanable):
                raise ToolError(
                    f"{store.identity.backend} journal {store.identity.name} cannot take a "
                    "control record into a chosen partition, so a partition's control record "
                    "cannot be quarantined there; nothing quarantined"
                )
            marker = store.append_control(record, args.partition)
        else:
            marker = store.append(record)
    whose = f"key {item.key_id}" if item.key_id else "the partition's control records"
    print(
        f"quarantined {where} ({item.size} bytes, {whose}, operator {uid}): the decision is "
        f"journaled at position {marker.position}. Restart the job: recovery skips the record, "
        "and durable calls whose start or outcome it may have held follow their on_unknown policy"
    )
    return EXIT_OK


def _record_at(
    store: Inspectable, partition: int, position: int, namespace: str
) -> ScannedRecord | None:
    for item in store.scan(partition, namespace, start=position, end=position + 1, foreign=True):
        return item
    return None


def _refuse(item: ScannedRecord, args: argparse.Namespace, where: str) -> None:
    """Only an unreadable record of the namespace (and operator) may be quarantined."""
    if item.foreign:
        raise ToolError(
            f"the record at {where} is foreign ({item.error}): jobs skip it already; nothing "
            "quarantined"
        )
    if item.record is not None:
        raise ToolError(
            f"the record at {where} reads fine (a {type(item.record).__name__} of key "
            f"{item.record.key_id or '(control)'}): only records that cannot be read are "
            "quarantined; nothing done"
        )
    if not item.error:
        raise ToolError(
            f"the record at {where} belongs to namespace {item.namespace!r} (operator "
            f"{item.operator_uid!r}), not {args.namespace!r}: recovery of {args.namespace!r} "
            "never reads it. Give its --namespace to quarantine it there"
        )
    if args.operator_uid is not None and args.operator_uid != item.operator_uid:
        raise ToolError(
            f"the record at {where} belongs to operator {item.operator_uid!r}, not "
            f"{args.operator_uid!r}; nothing quarantined"
        )


def _decisions(
    store: Inspectable,
    partition: int,
    position: int,
    namespace: str,
    uid: str,
) -> tuple[int | None, bool]:
    """Where an earlier decision about the same record is, if there is one; and whether the
    operator's records in the partition are signed."""
    signed = False
    for found in store.scan(partition, namespace, uid, foreign=True):
        signed = signed or found.signed
        record = found.record
        if isinstance(record, Quarantined) and (record.partition, record.position) == (
            partition,
            position,
        ):
            return found.position, signed
    return None, signed
