"""The process the porting crash tests SIGKILL: an upstream-style script, imports changed.

python tests/porting_child.py JOURNAL payments SERVICE_URL [--kill-after-charge ORDER]
    [--no-reconciler]
python tests/porting_child.py JOURNAL support MODEL_URL TOOLS_URL PROTOCOL
    [--kill-at TOOL] [--budget-rounds N [--final-round]]

Prints the outputs (``to_list()``) as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actionjournal.flink_agents.api.agents.budget import LoopBudget
from actionjournal.flink_agents.api.execution_environment import (
    AgentsExecutionEnvironment,
)
from actionjournal.flink_agents.api.resource import ResourceType
from tests import porting_agents

ORDERS = [{"key": f"customer-{i}", "value": {"id": f"o-{i}", "amount": 10 * i}} for i in (1, 2, 3)]


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("journal")
    p.add_argument("agent", choices=["payments", "support"])
    p.add_argument("urls", nargs="+")
    p.add_argument("--kill-after-charge")
    p.add_argument("--no-reconciler", action="store_true")
    p.add_argument("--kill-at")
    p.add_argument("--budget-rounds", type=int)
    p.add_argument("--final-round", action="store_true")
    args = p.parse_args(argv)
    env = AgentsExecutionEnvironment.get_execution_environment(journal=args.journal)
    if args.agent == "payments":
        if args.kill_after_charge:
            os.environ[porting_agents.KILL_AFTER_CHARGE] = args.kill_after_charge
        env.get_config().set_str("payments.url", args.urls[0])
        env.get_config().set_bool("payments.reconcile", not args.no_reconciler)
        outputs = env.from_list(ORDERS).apply(porting_agents.Payments()).to_list()
    else:
        model_url, tools_url, protocol = args.urls
        connection = porting_agents.model_server_connection(protocol, model_url)
        env.add_resource("model_server", ResourceType.CHAT_MODEL_CONNECTION, connection)
        porting_agents.SupportTools(tools_url, kill_at=args.kill_at).register(env)
        inputs = [{"key": "customer-1", "value": "refund my order o-1"}]
        budget = None
        if args.budget_rounds:
            ending = "final_round" if args.final_round else "stop"
            budget = LoopBudget(rounds=args.budget_rounds, on_exhausted=ending)
        agent = porting_agents.support_agent(protocol, budget)
        outputs = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    print(json.dumps(outputs))


if __name__ == "__main__":
    main(sys.argv[1:])
