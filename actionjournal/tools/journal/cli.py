"""``actionjournal journal inspect`` and ``actionjournal journal keys``: options and output."""

from __future__ import annotations

import argparse
import re

from actionjournal.durable.store import Inspectable
from actionjournal.tools.journal.documents import KeyDoc, to_json
from actionjournal.tools.journal.keys import AUTO, KEY_TYPES, forms, matching_form
from actionjournal.tools.journal.read import (
    FULL_ID,
    find_ids,
    key_document,
    keys_document,
    summary_document,
)
from actionjournal.tools.journal.render import render_keys, render_summary, render_tree
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.reading import describe as describe_unreadable
from actionjournal.tools.store_options import (
    ToolStoreConfig,
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
    UsageError,
    add_namespace_args,
    add_progress_args,
    parse_time,
    positive_int,
    report,
    warn,
)

DEFAULT_RUNS = 20
DEFAULT_KEYS = 50
_HEX = re.compile(r"^[0-9a-f]+$")


def add_key_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", help="the Flink key's value, e.g. user_1 (see --key-type)")
    parser.add_argument(
        "--key-type",
        default=AUTO,
        choices=(AUTO, *KEY_TYPES),
        help="how to read --key: key ids are digests of typed keys, so 1, '1' and b'1' differ; "
        "auto: each reading of the text (str, bytes, int, float, JSON, a Python literal) and "
        "the one the journal holds, said on stderr; literal: a Python literal, for tuples and "
        "bytes, e.g. \"('eu', 7)\" or \"b'\\x01'\"",
    )
    parser.add_argument(
        "--key-id", metavar="ID", help="the key id (or a unique prefix of it) instead of --key"
    )


def key_id_from_args(args: argparse.Namespace) -> str | None:
    """The key id of ``--key`` with a ``--key-type``, or the id or prefix of ``--key-id``;
    ``None`` for ``--key`` alone (:func:`matching_form` finds it in the journal)."""
    if args.key is not None and args.key_id is not None:
        raise UsageError("give --key or --key-id, not both")
    if args.key_id is not None:
        return _hex_id(args.key_id, "--key-id")
    if args.key is None:
        return None
    if args.key_type == AUTO:
        return None
    (form,) = forms(args.key, args.key_type)
    return form.key_id


def _hex_id(text: str, option: str) -> str:
    value = text.strip().lower().rstrip("…")
    if not value or len(value) > FULL_ID or not _HEX.match(value):
        raise UsageError(
            f"{option} {text!r} is not an id: ids are up to {FULL_ID} hex digits (a prefix, as "
            "`journal inspect` prints them, is enough when it is unique)"
        )
    return value


def _listing_args(parser: argparse.ArgumentParser, what: str, default: int) -> None:
    parser.add_argument(
        "--limit",
        type=positive_int,
        default=default,
        metavar="N",
        help=f"show at most N {what} (the most recent); 0: all",
    )
    parser.add_argument(
        "--since",
        metavar="TIME",
        help=f"only {what} active at or after TIME (epoch seconds or ISO 8601)",
    )


def inspect_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal journal inspect",
        description="Show runs -> actions -> calls of a key, or a summary of a namespace. "
        "Never writes to the journal.",
    )
    add_store_args(p)
    add_namespace_args(p)
    add_key_args(p)
    p.add_argument("--run", type=int, metavar="SEQ", help="only this run (seq) of the key")
    p.add_argument(
        "--action", metavar="ID", help="the run holding this action id (or a unique prefix)"
    )
    p.add_argument("--call", metavar="ID", help="the run holding this call id (or a unique prefix)")
    _listing_args(p, "runs", DEFAULT_RUNS)
    p.add_argument("--summary", action="store_true", help="per-partition summary (the default)")
    p.add_argument(
        "--all-partitions",
        action="store_true",
        help="summary: list partitions without records of the namespace too",
    )
    p.add_argument("--json", action="store_true", help="JSON on stdout, for scripts")
    add_progress_args(p)
    return p


def keys_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal journal keys",
        description="List the keys of a namespace: runs, runs in flight, records, bytes and "
        "last activity, the most recently active first. Never writes to the journal.",
    )
    add_store_args(p)
    add_namespace_args(p)
    _listing_args(p, "keys", DEFAULT_KEYS)
    p.add_argument("--json", action="store_true", help="JSON on stdout, for scripts")
    add_progress_args(p)
    return p


def inspect_main(argv: list[str]) -> int:
    args = inspect_parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    key_id = key_id_from_args(args)
    action = _hex_id(args.action, "--action") if args.action is not None else None
    call = _hex_id(args.call, "--call") if args.call is not None else None
    keyed = args.key is not None or args.key_id is not None
    if args.run is not None and not keyed:
        raise UsageError("--run SEQ needs --key or --key-id")
    chosen = keyed + (action is not None) + (call is not None)
    if chosen > 1:
        raise UsageError("give one of --key/--key-id, --action, --call")
    if args.summary and chosen:
        raise UsageError("--summary is for a whole namespace: drop --key/--action/--call")
    since = parse_time(args.since, "--since") if args.since is not None else None
    with opened(config, record_codec(args)) as store:
        if not chosen:
            summary = summary_document(
                store,
                args.namespace,
                args.operator_uid,
                all_partitions=args.all_partitions,
                progress=args.progress,
            )
            _check_namespace(args, config, summary.operator_uids, summary.other_namespaces)
            report_unreadable(summary.unreadable)
            print(to_json(summary) if args.json else render_summary(summary))
            return EXIT_OK
        seq = args.run
        key = None
        if action is not None or call is not None:
            key_id, seq = _run_of(store, args, config, action, call)
        elif key_id is None:  # --key, its type to be found
            skipped: list[Unreadable] = []
            # Of any operator: a key of another one is then named as such (_no_runs).
            form = matching_form(
                store, args.namespace, args.key, describe(config), skipped, args.progress
            )
            report_unreadable(skipped)
            if not isinstance(form.value, str):  # not what the text says at first sight
                report(f"key {args.key!r} matched as {form}", "note")
            key_id, key = form.key_id, repr(form.value)
        elif len(key_id) < FULL_ID:
            key_id = _resolve_key(store, args, config, key_id)
        elif args.key is not None:
            key = repr(forms(args.key, args.key_type)[0].value)
        assert key_id is not None
        limit = 0 if seq is not None else args.limit
        doc = key_document(
            store,
            args.namespace,
            args.operator_uid,
            key_id,
            limit=limit,
            since=since,
            progress=args.progress,
        )
    report_unreadable(doc.unreadable)
    doc.key = doc.key or key
    if seq is not None:
        doc.runs = [r for r in doc.runs if r.seq == seq]
        doc.runs_total = len(doc.runs)
        doc.records = sum(r.records for r in doc.runs)
        doc.bytes = sum(r.bytes for r in doc.runs)
    if not doc.runs:
        raise ToolError(_no_runs(args, config, doc, seq, since))
    print(to_json(doc) if args.json else render_tree(doc, limited=seq is None))
    return EXIT_OK


def keys_main(argv: list[str]) -> int:
    args = keys_parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    since = parse_time(args.since, "--since") if args.since is not None else None
    with opened(config, record_codec(args)) as store:
        if args.operator_uid is not None:  # a typo must not look like an empty namespace
            summary = summary_document(store, args.namespace, None, progress=args.progress)
            _check_namespace(args, config, summary.operator_uids, summary.other_namespaces)
        doc = keys_document(
            store,
            args.namespace,
            args.operator_uid,
            limit=args.limit,
            since=since,
            progress=args.progress,
        )
    report_unreadable(doc.unreadable)
    if not doc.keys_total and since is None:
        raise ToolError(f"namespace {args.namespace!r} has no keys in {describe(config)}")
    print(to_json(doc) if args.json else render_keys(doc))
    return EXIT_OK


def _check_namespace(
    args: argparse.Namespace,
    config: ToolStoreConfig,
    uids: dict[str, int],
    other: dict[str, int],
) -> None:
    if not uids:
        found = sorted({label.split("/")[0] for label in other})
        raise ToolError(
            f"namespace {args.namespace!r} has no records in {describe(config)}"
            + (f"; namespaces found: {', '.join(found)}" if found else "; the journal is empty")
        )
    if args.operator_uid is not None and args.operator_uid not in uids:
        raise ToolError(
            f"namespace {args.namespace!r} has no records of operator {args.operator_uid!r}; "
            f"operators found: {', '.join(sorted(uids))}"
        )


def _run_of(
    store: Inspectable,
    args: argparse.Namespace,
    config: ToolStoreConfig,
    action: str | None,
    call: str | None,
) -> tuple[str, int]:
    attribute, prefix, what = (
        ("action_id", action, "action") if action is not None else ("call_id", call, "call")
    )
    assert prefix is not None
    found, skipped = find_ids(
        store, args.namespace, args.operator_uid, attribute, prefix, args.progress
    )
    report_unreadable(skipped)
    if not found:
        raise ToolError(
            f"no record of {what} {prefix} in namespace {args.namespace!r} of {describe(config)}"
        )
    if len(found) > 1:
        raise ToolError(_ambiguous(what, prefix, list(found)))
    record = next(iter(found.values()))
    return record.key_id, record.seq


def _resolve_key(
    store: Inspectable, args: argparse.Namespace, config: ToolStoreConfig, prefix: str
) -> str:
    doc = keys_document(store, args.namespace, args.operator_uid, progress=args.progress)
    matches = [k.key_id for k in doc.keys if k.key_id.startswith(prefix)]
    if not matches:
        raise ToolError(
            f"no key id starts with {prefix} in namespace {args.namespace!r} of "
            f"{describe(config)} (`actionjournal journal keys` lists them)"
        )
    if len(matches) > 1:
        raise ToolError(_ambiguous("key", prefix, matches))
    return matches[0]


def _ambiguous(what: str, prefix: str, ids: list[str]) -> str:
    shown = ", ".join(sorted(ids)[:5]) + (", …" if len(ids) > 5 else "")
    return f"{what} id prefix {prefix} matches {len(ids)} {what}s ({shown}): give more digits"


def _no_runs(
    args: argparse.Namespace,
    config: ToolStoreConfig,
    doc: KeyDoc,
    seq: int | None,
    since: float | None,
) -> str:
    what = f"key {doc.key_id}" + (f" run seq={seq}" if seq is not None else "")
    if args.operator_uid is not None and doc.operator_uids:
        return (
            f"{what} has no runs of operator {args.operator_uid!r}; it has runs of "
            f"{', '.join(doc.operator_uids)}"
        )
    if since is not None and doc.operator_uids and seq is None:
        return f"{what} has no runs active since {args.since}"
    return (
        f"no records of {what} in namespace {args.namespace!r} of {describe(config)} "
        "(deleted by cleanup, never written, or another --key-type?)"
    )


def report_unreadable(skipped: list[Unreadable]) -> None:
    for bad in skipped[:10]:
        warn(f"skipped {describe_unreadable(bad)}")
    if len(skipped) > 10:
        warn(f"and {len(skipped) - 10} more unreadable records (--json lists them all)")
