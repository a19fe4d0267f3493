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
        "RetryPolicy",
        "RunJournalTooLongError",
        "RunnerContext",
        "SignatureError",
        "StillRunning",
        "StoreError",
        "StoreRecreatedError",
        "UnknownOutcomeError",
        "UnsupportedFormatError",
        "action",
        "current_call",
    ]
    for name in actionjournal.__all__:
        assert getattr(actionjournal, name) is not None


def test_every_public_error_is_exported_from_the_top_package():
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, errors.ActionJournalError)
        and value.__module__ == errors.__name__
        and not name.startswith("_")
    }
    assert defined - set(actionjournal.__all__) == set()
    for name in defined:
        assert getattr(actionjournal, name) is getattr(errors, name)


def test_operator_all_is_pinned_and_every_name_resolves():
    assert operator.__all__ == [
        "Agent",
        "AgentsConfig",
        "AgentsExecutionEnvironment",
        "Event",
        "InputEvent",
        "LocalRunner",
        "Memory",
        "OutputEvent",
        "RunnerContext",
        "Snapshot",
        "action",
        "savepoint",
        "set_log_dir",
        "set_python_worker_mode",
        "stop_with_savepoint",
    ]
    for name in operator.__all__:
        assert getattr(operator, name) is not None
    assert operator.Agent is actionjournal.Agent


def test_testing_all_is_pinned_and_every_name_resolves():
    assert testing.__all__ == [
        "CountingService",
        "CrashNotReachedError",
        "CrashOnce",
        "CrashingStore",
        "HarnessError",
        "JsonLines",
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


def test_the_agent_models_former_paths_are_the_same_names():
    from actionjournal.operator.agent import Agent, action
    from actionjournal.operator.events import Event, InputEvent, OutputEvent

    assert (Agent, action) == (actionjournal.Agent, actionjournal.action)
    assert (Event, InputEvent, OutputEvent) == (
        actionjournal.Event,
        actionjournal.InputEvent,
        actionjournal.OutputEvent,
    )
