"""Every python block of README.md and docs/*.md runs as written (tests/docs.py says how a
page marks what a block needs).

Each page-level sequence of blocks runs in its own interpreter (tests/docs_child.py), in
a new temporary working directory that is deleted when the sequence ends, so a block
sees what a script would and leaves nothing behind: no JVM, no thread, no file.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs import MARKERS, ROOT, Block, all_blocks, blocks_of, pages

CHILD = Path(__file__).with_name("docs_child.py")
BLOCK_TIMEOUT_S = 540
BLOCKS = all_blocks()
ENDS = {b.previous for b in BLOCKS if b.continues}  # blocks that another one continues
BOOTSTRAP_ENV = {
    "kafka": ("KAFKA_BOOTSTRAP", "aj_kafka_bootstrap"),
    "fluss": ("FLUSS_BOOTSTRAP", "aj_fluss_bootstrap"),
}
# Set by our own Flink tests in this process (actionjournal.testing.flink.local_env); a
# user's script does not have it.
TEST_ONLY_ENV = {"_python_worker_execution_mode"}


class Sequence:
    """A sequence's working directory and the interpreter that runs its blocks in turn."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="docs-sample-"))
        self.outcome: dict[Block, str | None] = {}  # a block's error, or None when it ran
        self.env = {k: v for k, v in os.environ.items() if k not in TEST_ONLY_ENV}
        self.env["FLINK_LOG_DIR"] = str(self.dir / ".flink-log")  # not into the venv's pyflink
        self._child: subprocess.Popen[str] | None = None
        self._output: list[str] = []

    def run(self, block: Block, request: pytest.FixtureRequest) -> None:
        """Run ``block`` (once: a block that ran already keeps its outcome)."""
        if block not in self.outcome:
            try:
                self.outcome[block] = self._run(block, request)
            finally:
                self._flush_output()
        if self.outcome[block] is not None:
            pytest.fail(f"{block.name} failed:\n{self.outcome[block]}", pytrace=False)

    def _run(self, block: Block, request: pytest.FixtureRequest) -> str | None:
        code = block.code
        for text, fixture in block.substitutions:
            assert text in code, f"{block.name}: {text!r} is not in the block"
            code = code.replace(text, str(request.getfixturevalue(fixture)))
        for marker in block.all_markers():
            if marker in BOOTSTRAP_ENV:  # the broker a pytest block's fixtures use
                variable, fixture = BOOTSTRAP_ENV[marker]
                self.env[variable] = str(request.getfixturevalue(fixture))
        if block.file:
            (self.dir / block.file).write_text(code)
        if block.pytest:
            return self._pytest(block)
        if block.file:
            return self._ask({"module": block.file.removesuffix(".py")})
        return self._ask({"code": code, "filename": str(ROOT / block.page), "line": block.line})

    def _pytest(self, block: Block) -> str | None:
        assert block.file
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", block.file],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )
        print(done.stdout, done.stderr)
        if done.returncode == 0:
            return None
        return f"python -m pytest {block.file} failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"

    def _ask(self, request: dict) -> str | None:
        if self._child is None:
            self._start()
        assert self._child is not None and self._child.stdin is not None
        self._child.stdin.write(json.dumps(request) + "\n")
        self._child.stdin.flush()
        ready, _, _ = select.select([self._answers], [], [], BLOCK_TIMEOUT_S)
        line = self._answers.readline() if ready else ""
        if not line:
            self.close()
            return f"no answer from the block's interpreter within {BLOCK_TIMEOUT_S} s, or it died"
        return json.loads(line).get("error")

    def _start(self) -> None:
        read, write = os.pipe()
        self._child = subprocess.Popen(
            [sys.executable, "-c", CHILD.read_text(), str(write)],
            cwd=self.dir,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(write,),
            text=True,
        )
        os.close(write)
        self._answers = os.fdopen(read)
        threading.Thread(target=self._collect, args=(self._child.stdout,), daemon=True).start()

    def _collect(self, stream) -> None:
        for line in stream:
            self._output.append(line)

    def _flush_output(self) -> None:
        """What the blocks printed so far, into the current test's captured output."""
        taken, self._output[:] = list(self._output), []
        sys.stdout.write("".join(taken))

    def close(self) -> None:
        if self._child is not None:
            assert self._child.stdin is not None
            self._child.stdin.close()
            try:
                self._child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()
            self._answers.close()
            self._child = None
        shutil.rmtree(self.dir, ignore_errors=True)


def assert_excerpt(block: Block) -> None:
    """Each line of the block (but ``...``) is a line of the file, in the file's order."""
    assert block.excerpt
    lines = iter(line.strip() for line in (ROOT / block.excerpt).read_text().splitlines())
    for line in block.code.splitlines():
        if line.strip() and line.strip() != "...":
            assert any(line.strip() == other for other in lines), (
                f"{block.name}: {line.strip()!r} is not in {block.excerpt}, after the lines before"
            )


@pytest.fixture(scope="module")
def sequences() -> Iterator[dict[Block, Sequence]]:
    """Open sequences by their first block; each is closed after its last block ran."""
    opened: dict[Block, Sequence] = {}
    yield opened
    for sequence in opened.values():
        sequence.close()


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(b, id=b.name, marks=[getattr(pytest.mark, m) for m in b.all_markers()])
        for b in BLOCKS
    ],
)
def test_docs_sample(block: Block, sequences: dict[Block, Sequence], request) -> None:
    compile(block.code, block.name, "exec")  # valid Python, whether it runs or not
    if block.not_run:
        pytest.skip(f"not run: {block.not_run}")
    if block.excerpt:
        assert_excerpt(block)
        return
    chain = block.chain()
    sequence = sequences.get(chain[0]) or sequences.setdefault(chain[0], Sequence())
    try:
        for earlier in chain[:-1]:  # also when this block was selected alone
            if earlier not in sequence.outcome:
                sequence.run(earlier, request)
            elif sequence.outcome[earlier] is not None:
                pytest.fail(f"{block.name} continues {earlier.name}, which failed", pytrace=False)
        sequence.run(block, request)
    finally:
        if block not in ENDS:
            sequences.pop(chain[0]).close()


def test_every_python_block_of_the_docs_is_collected():
    """A fence the extractor missed (an odd info string, an indented block) would never run."""
    for page in pages():
        text = page.read_text()
        fences = sum(1 for line in text.splitlines() if line.strip().startswith("```py"))
        assert fences == len(blocks_of(page)), page


def test_markers_are_the_registered_ones(pytestconfig):
    registered = {m.split(":")[0] for m in pytestconfig.getini("markers")}
    assert set(MARKERS) <= registered
