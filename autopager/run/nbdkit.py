"""An nbdkit server (Debian: nbdkit) started and stopped by this process: an NBD export on a Unix socket, for
the tests and experiments that put a region on network-attached memory (``nbdkit memory SIZE``)."""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from autopager.parameters import parse_size

_STATS = re.compile(r"^(read|write): \d+ ops, [\d.]+ s, ([\d.]+) (\w+)", re.M)


class Nbdkit:
    """``nbdkit [--filter=F ...] PLUGIN ARGS`` serving on ``directory``/nbd.sock once constructed (its pid file
    written); ``uri`` is its export. With ``stats=True`` the stats filter counts the bytes moved (``stop()``)."""

    def __init__(self, directory: Path, *arguments: str, filters: tuple[str, ...] = (), stats: bool = False):
        directory = Path(directory)
        self.socket, self.stats_file = directory / "nbd.sock", directory / "nbd-stats.txt"
        pidfile = directory / "nbd.pid"
        for stale in (self.socket, self.stats_file, pidfile):
            stale.unlink(missing_ok=True)
        filters = ("stats", *filters) if stats else filters
        self.process = subprocess.Popen(
            ["nbdkit", "--foreground", "--exit-with-parent", "--unix", str(self.socket), "--pidfile", str(pidfile),
             *(f"--filter={name}" for name in filters), *arguments,
             *([f"statsfile={self.stats_file}"] if stats else [])])
        while not (pidfile.exists() and pidfile.stat().st_size > 0):
            if self.process.poll() is not None:
                raise RuntimeError(f"nbdkit {' '.join(arguments)} exited with status {self.process.returncode} "
                                   f"before serving")
            time.sleep(0.01)
        self.uri = f"nbd+unix:///?socket={self.socket}"

    def stop(self) -> dict[str, int]:
        """Stops the server (at once); the bytes read and written over its life when it counted them."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
        moved = {"read": 0, "write": 0}
        text = self.stats_file.read_text() if self.stats_file.exists() else ""
        for kind, number, unit in _STATS.findall(text):
            moved[kind] = int(float(number) * parse_size("1" + unit.replace("bytes", "")))
        return moved

    def kill(self) -> None:
        """Kills the server as a crash would (SIGKILL)."""
        self.process.kill()
        self.process.wait()
