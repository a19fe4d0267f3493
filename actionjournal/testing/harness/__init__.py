"""The restore-scenario harness: run an agent, checkpoint, crash, restore, count.

A :class:`RestoreScenario` drives one agent the way a job's life does: inputs
arrive from a source, checkpoints are taken, the process fails at a named
point, the job is restored from a checkpoint, possibly against another journal
or in upgrade mode, and the source is replayed from the checkpoint's offset.
What ran is counted by a real HTTP service (:class:`CountingService`), not by
the engine's own bookkeeping: each execution of a durable call made through
:func:`call_service`, and each execution of an action body.

::

    from actionjournal.testing.harness import RestoreMode, call_service

    class Checkout(Agent):
        uid = "checkout"

        def __init__(self, url):          # the scenario passes its service's URL
            self.url = url

        @action(InputEvent)
        def pay(self, event, ctx):
            receipt = ctx.durable_execute(call_service, self.url, "charge", event.input)
            ctx.send_event(OutputEvent(receipt))

    def test_upgrade_reruns_only_what_the_old_journal_had(restore_scenario, aj_sqlite):
        sc = restore_scenario(Checkout, aj_sqlite)
        sc.run([("alice", 30)])
        cp = sc.checkpoint()
        sc.run([("alice", 40)])                         # finished after the checkpoint
        step = sc.restore(cp, RestoreMode.UPGRADE_NEW)  # new journal: the old one is skipped
        assert step.calls == {"charge": 1}              # input 40 is charged again
        step = sc.restore(cp)                           # a failure before the next checkpoint
        assert step.calls == {}                         # replayed from the new journal

Steps run **in this process** (fast; used for claims about restore modes,
replay and upgrade) unless they are given a crash point: then they run in a
**child process that is SIGKILLed** at that point (``before:<Record>:<n>`` or
``after:<Record>:<n>``, see :mod:`actionjournal.testing.crash`). Claims about
crashes need the real kill; :meth:`RestoreScenario.abandon` drops the
in-process job between steps, when nothing is in flight, and is only a
stand-in for a failure at a quiet moment.

Agents for crash steps are built in the child from the factory you gave, so
the factory must be picklable: a class or function defined at module level in
an importable module (a test module collected by pytest is fine), or a
``functools.partial`` of one.

A scenario's journals are named by the job's own store configs
(``SqliteStoreConfig``, ``KafkaStoreConfig``, ``FlussStoreConfig``); the pytest fixtures
``aj_sqlite``, ``aj_kafka`` and ``aj_fluss`` give one each. One job per module: ``calls``
(what agents under test call), ``agents`` (building and instrumenting them),
``journals`` (new, deleted and recreated journals by config), ``scenario`` (the steps),
``child`` (crash steps in a SIGKILLed child process). See docs/testing.md for the guide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.testing.harness.calls import (
        call_service as call_service,
    )
    from actionjournal.testing.harness.calls import (
        service_reconciler as service_reconciler,
    )
    from actionjournal.testing.harness.errors import (
        CrashNotReachedError as CrashNotReachedError,
    )
    from actionjournal.testing.harness.errors import (
        HarnessError as HarnessError,
    )
    from actionjournal.testing.harness.journals import (
        Journal as Journal,
    )
    from actionjournal.testing.harness.journals import (
        name_of as name_of,
    )
    from actionjournal.testing.harness.scenario import (
        Checkpoint as Checkpoint,
    )
    from actionjournal.testing.harness.scenario import (
        Output as Output,
    )
    from actionjournal.testing.harness.scenario import (
        RestoreMode as RestoreMode,
    )
    from actionjournal.testing.harness.scenario import (
        RestoreScenario as RestoreScenario,
    )
    from actionjournal.testing.harness.scenario import (
        Step as Step,
    )

_LAZY = {
    "actionjournal.testing.harness.calls": ("call_service", "service_reconciler"),
    "actionjournal.testing.harness.errors": ("CrashNotReachedError", "HarnessError"),
    "actionjournal.testing.harness.journals": ("Journal", "name_of"),
    "actionjournal.testing.harness.scenario": (
        "Checkpoint",
        "Output",
        "RestoreMode",
        "RestoreScenario",
        "Step",
    ),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
