"""The public surface users import from: ``actionjournal``, ``.operator``, ``.testing``.

Each ``__all__`` is pinned (a name leaving it is a breaking change, so it must show up in
review), every name in it resolves, and every error in ``durable/errors.py`` is exported
from the top package, where the docs tell users to catch them.
"""

from __future__ import annotations

import subprocess
import sys

import actionjournal
import actionjournal.durable.errors as errors
import actionjournal.operator as operator
import actionjournal.testing as testing


def test_top_package_all_is_pinned_and_every_name_resolves():
    assert actionjournal.__all__ == [
        "ActionFailedError",
        "ActionJournalError",
        "Agent",
        "CallArgumentsError",
        "CallInfo",
        "ChatError",
        "ChatResponseError",
        "ChatTimeoutError",
        "ChatUnreachableError",
        "CleanupBoundaryError",
        "ConfigurationError",
        "ContextClosedError",
        "CorruptRecordError",
        "DataLossError",
        "DeadLetter",
        "DivergenceError",
        "EncodingError",
        "Event",
        "Failed",
        "InputEvent",
        "JournalConfig",
        "JournalUnavailableError",
        "JournalWriteError",
        "LocalRunner",
        "MarkerMismatchError",
        "NotStarted",
        "OutputEvent",
        "PayloadTooLargeError",
        "PickleDisabledError",
        "ReconcileError",
        "RecordError",
        "RecordTooLargeError",
        "RecordedCallError",
        "Recovered",
        "RecoveryError",
        "RedriveError",
        "RemoteAgentError",
        "RemoteJobFailed",
        "RetryPolicy",
        "RunJournalTooLongError",
        "RunnerContext",
        "Signal",
        "SignalInput",
        "SignalReceived",
        "SignalTimedOut",
        "SignatureError",
        "StillRunning",
        "StoreError",
        "StoreRecreatedError",
        "StructuredOutputError",
        "UnknownOutcomeError",
        "UnsupportedFormatError",
        "action",
        "current_call",
    ]
    for name in actionjournal.__all__:
        assert getattr(actionjournal, name) is not None


def test_every_public_error_is_exported_from_the_top_package():
    """One error module per layer; every error a user can catch is in the top package."""
    import actionjournal.chat.errors as chat_errors
    import actionjournal.reconcilers.errors as reconciler_errors

    for module in (errors, chat_errors, reconciler_errors):
        defined = {
            name
            for name, value in vars(module).items()
            if isinstance(value, type)
            and issubclass(value, errors.ActionJournalError)
            and value.__module__ == module.__name__
            and not name.startswith("_")
        }
        assert defined, module
        assert defined - set(actionjournal.__all__) == set()
        for name in defined:
            assert getattr(actionjournal, name) is getattr(module, name)
            assert name in (errors.__doc__ or ""), f"{name} is not drawn in the error tree"


def test_errors_say_where_as_attributes_and_rebuild_equal_without_them():
    error = errors.UnknownOutcomeError("boom", key_id="k1", seq=3, action="pay", call_id="c9")
    assert (error.key_id, error.seq, error.action, error.call_id) == ("k1", 3, "pay", "c9")
    plain = errors.DivergenceError("no fields")
    assert (plain.key_id, plain.seq, plain.action, plain.call_id) == (None,) * 4
    assert vars(plain) == {}  # nothing new in what a journaled error records


def test_operator_all_is_pinned_and_every_name_resolves():
    assert operator.__all__ == [
        "DeadLetter",
        "LocalRunner",
        "Memory",
        "RunFailurePolicy",
        "RunnerContext",
        "Snapshot",
    ]
    for name in operator.__all__:
        assert getattr(operator, name) is not None
    assert operator.LocalRunner is actionjournal.LocalRunner


def test_flink_all_is_pinned():
    import actionjournal.flink as flink

    assert flink.__all__ == [
        "AgentOutput",
        "AgentsConfig",
        "AgentsExecutionEnvironment",
        "KafkaMessage",
        "MessageKey",
        "kafka_sink",
        "kafka_source",
        "savepoint",
        "set_log_dir",
        "set_python_worker_mode",
        "stop_with_savepoint",
    ]


def test_each_package_names_its_public_attributes_once():
    """``_LAZY`` is where a package names its public attributes; its ``TYPE_CHECKING``
    imports (for type checkers) must name the same ones, from the same modules, as
    re-exports (``name as name``), and ``__all__`` is built from ``_LAZY``."""
    import ast
    import importlib
    from pathlib import Path

    root = Path(actionjournal.__file__).parent
    checked = 0
    for init in sorted(root.rglob("__init__.py")):
        tree = ast.parse(init.read_text())
        typed: dict[str, list[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                for imp in node.body:
                    assert isinstance(imp, ast.ImportFrom), init
                    for alias in imp.names:
                        assert alias.asname == alias.name, f"{init}: {alias.name} not re-exported"
                        typed.setdefault(str(imp.module), []).append(alias.name)
        parts = init.parent.relative_to(root.parent).parts
        package = importlib.import_module(".".join(parts))
        lazy = getattr(package, "_LAZY", None)
        if lazy is None:
            assert not typed, init
            continue
        checked += 1
        assert {m: sorted(n) for m, n in typed.items()} == {
            m: sorted(n) for m, n in lazy.items()
        }, init
        assert package.__all__ == sorted(n for names in lazy.values() for n in names)
        for name in package.__all__:
            assert getattr(package, name) is not None
    assert checked >= 10


def test_testing_all_is_pinned_and_every_name_resolves():
    assert testing.__all__ == [
        "CountingService",
        "CrashNotReachedError",
        "CrashOnce",
        "CrashingStore",
        "HarnessError",
        "JsonLines",
        "ManualClock",
        "ModelServer",
        "RemoteAgentService",
        "RestoreMode",
        "RestoreScenario",
        "call_service",
        "kill_now",
        "local_env",
        "paced_source",
        "service_reconciler",
    ]
    for name in testing.__all__:
        assert getattr(testing, name) is not None


def test_operator_and_testing_import_without_pyflink():
    """A job on the local runner, and a user's pytest run, do not pay for PyFlink."""
    code = (
        "import sys\n"
        "import actionjournal.operator, actionjournal.testing, actionjournal.testing.plugin\n"
        "print('pyflink' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
