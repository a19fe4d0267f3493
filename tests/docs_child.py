"""The interpreter that runs one page-level sequence of docs blocks, as a script would.

Started by tests/test_docs_samples.py in the sequence's working directory with this file's
text as ``python -c``. It reads one JSON request per line on stdin (``{"code",
"filename", "line"}`` to run a block in ``__main__``, ``{"module"}`` to import a module
the parent wrote) and answers each on file descriptor 3 with ``{}`` or ``{"error":
traceback}``. Imports nothing of the test suite.
"""

import importlib
import json
import os
import sys
import traceback
import types


def _run(request, namespace):
    if "module" in request:
        sys.modules.pop(request["module"], None)
        importlib.import_module(request["module"])
        return
    padded = "\n" * request["line"] + request["code"]  # tracebacks point at the page's lines
    exec(compile(padded, request["filename"], "exec"), namespace)


def _main():
    answers = os.fdopen(int(sys.argv[1]), "w")
    main = types.ModuleType("__main__")  # the blocks' module, as for a script
    sys.modules["__main__"] = main
    sys.path.insert(0, os.getcwd())
    for line in sys.stdin:
        try:
            _run(json.loads(line), main.__dict__)
            answer = {}
        except BaseException:  # SystemExit too: the parent reports it
            answer = {"error": traceback.format_exc()}
        sys.stdout.flush()
        sys.stderr.flush()
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


_main()
