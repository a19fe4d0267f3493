"""The interpreter that runs one page-level sequence of docs blocks, as a script would.

Started by tests/test_docs_samples.py in the sequence's working directory with this file's
text as ``python -c``. It reads one JSON request per line on stdin (``{"code",
"filename", "line"}`` to run a block in ``__main__``, ``{"module"}`` to import a module
the parent wrote) and answers each on file descriptor 3 with ``{}`` or ``{"error":
traceback}``. A class whose header line says ``# continued`` adds its body to the class
of that name an earlier block defined. Imports nothing of the test suite.
"""

import ast
import importlib
import json
import os
import re
import sys
import traceback
import types


def _continued_classes(code):
    lines = code.splitlines()
    return [
        node.name
        for node in ast.parse(code).body
        if isinstance(node, ast.ClassDef) and re.search(r"#\s*continued\b", lines[node.lineno - 1])
    ]


def _run(request, namespace):
    if "module" in request:
        sys.modules.pop(request["module"], None)
        importlib.import_module(request["module"])
        return
    code = request["code"]
    earlier = {name: namespace.get(name) for name in _continued_classes(code)}
    padded = "\n" * request["line"] + code  # tracebacks point at the page's own lines
    exec(compile(padded, request["filename"], "exec"), namespace)
    for name, cls in earlier.items():
        if not isinstance(cls, type):
            raise NameError(f"class {name} says '# continued' but no earlier block defined it")
        for attr, value in vars(namespace[name]).items():
            if attr not in ("__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"):
                setattr(cls, attr, value)
        namespace[name] = cls


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
