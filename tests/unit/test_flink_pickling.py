"""The agent's PyFlink functions unpickle through the top package first.

PyFlink's Python worker unpickles the functions of a job's operators on several threads at
once; a thread that first imported ``actionjournal.operator.flink`` held
``actionjournal.operator`` while waiting for ``actionjournal``, whose ``__init__`` another
thread (unpickling a function chained after the agent) was running: the job failed with
``_DeadlockError: deadlock detected by _ModuleLock('actionjournal.durable.lazy')`` (seen in
CI and reproduced under load). What decides it is the first global the pickle names.
"""

from __future__ import annotations

import pickletools

import cloudpickle

from actionjournal.operator.config import AgentsConfig
from actionjournal.operator.flink import AgentFunction, _RedriveAware
from tests.e2e.agents import Orders, key_of


def first_global(data: bytes) -> tuple[str, str]:
    strings: list[str] = []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            return strings[-2], strings[-1]
        elif op.name == "GLOBAL":
            module, name = arg.split(" ")
            return module, name
    raise AssertionError("no global in the pickle")


def test_the_agent_function_and_the_key_selector_name_the_top_package_first():
    function = AgentFunction(Orders("http://127.0.0.1:1"), AgentsConfig(), with_ids=True)
    for obj in (function, _RedriveAware(key_of)):
        data = cloudpickle.dumps(obj)
        assert first_global(data) == ("actionjournal", "_revive")
        back = cloudpickle.loads(data)
        assert type(back) is type(obj) and vars(back).keys() == vars(obj).keys()
    assert cloudpickle.loads(cloudpickle.dumps(function)).with_ids is True
