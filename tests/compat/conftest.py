import os
from pathlib import Path

# PyFlink starts Python workers as separate processes; they unpickle the golden agent by
# module name (tests.compat.agents), so the repository root must be importable there too.
_root = str(Path(__file__).resolve().parents[2])
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_root, os.environ.get("PYTHONPATH")) if p)
