"""What every local dev server shares: its work directory, its processes' lifecycle, ``with``.

A server is one or more :class:`~actionjournal.dev.process.ServerProcess` bound to a work
directory. ``workdir=None`` makes a fresh temp dir that :meth:`DevServer.close` deletes;
a given one is kept. Subclasses (the Kafka broker, the Fluss cluster) say how they start and
what describes them once started.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar, Generic, Self, TypeVar

from actionjournal.dev.process import ServerProcess

Info = TypeVar("Info")


class DevServer(ABC, Generic[Info]):
    """A local server in a work directory; ``with`` starts it and closes it."""

    service: ClassVar[str]
    """Its name in temp dirs (``actionjournal-<service>-``) and the ``dev`` CLI."""
    stop_timeout: ClassVar[float] = 30.0
    """Seconds a clean stop waits for each process before it is killed."""
    port: int
    """The port clients connect to."""

    def __init__(self, workdir: str | os.PathLike[str] | None) -> None:
        self._owns_workdir = workdir is None
        if workdir is None:
            workdir = tempfile.mkdtemp(prefix=f"actionjournal-{self.service}-")
        self.workdir = Path(workdir).resolve()

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the client port."""
        return f"127.0.0.1:{self.port}"

    @property
    @abstractmethod
    def servers(self) -> tuple[ServerProcess, ...]:
        """Its processes, in the order they start (they stop in the reverse order)."""

    @abstractmethod
    def start(self) -> Info:
        """Start what is not running and wait until it serves; what describes it."""

    @abstractmethod
    def info(self) -> Info:
        """What describes the running server (pids, ports, work dir)."""

    def stop(self, timeout: float | None = None) -> None:
        """Shut down cleanly (SIGTERM), last started first; SIGKILL after ``timeout`` s."""
        for process in reversed(self.servers):
            process.stop(self.stop_timeout if timeout is None else timeout)

    def kill(self) -> None:
        """Crash every process (SIGKILL), as a power loss would."""
        for process in reversed(self.servers):
            process.kill()

    def is_running(self) -> bool:
        return all(process.is_running() for process in self.servers)

    def close(self) -> None:
        """Stop the server and delete the work directory if it was a temp dir it made."""
        try:
            self.stop()
        finally:
            if self._owns_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def detach(self) -> Info:
        """Leave the server running after this object and this process are gone."""
        info = self.info()
        for process in self.servers:
            process.detach()
        self._owns_workdir = False
        return info

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
