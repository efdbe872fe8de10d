"""`cfq emulator` for Python tests: start one, get what Cloudflare's SDK needs.

The pytest fixtures are in :mod:`cfq_emulator.pytest_plugin`; this module
is the plain API they stand on, usable from any test runner::

    from cfq_emulator import start_emulator
    with start_emulator() as emulator:
        client = cloudflare.Cloudflare(api_token=emulator.api_token, base_url=emulator.base_url)
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from ._start_lines import StartLinesError, read_start_lines

__all__ = ["Emulator", "EmulatorError", "binary_path", "start_emulator"]

#: How long :func:`start_emulator` waits for the emulator to answer, by default.
START_TIMEOUT = 30.0
#: How long ``stop()`` waits after closing stdin before SIGTERM, then SIGKILL.
STOP_GRACE = 10.0
#: Lines of the emulator's stderr kept for an error message.
KEPT_STDERR_LINES = 40


class EmulatorError(RuntimeError):
    """The emulator could not start; the message holds its own words."""


def binary_path() -> str:
    """The absolute path of the ``cfq`` binary: ``CFQ_BINARY`` (resolved
    against the current directory), else the one this distribution installed."""
    override = os.environ.get("CFQ_BINARY")
    if override:
        # Resolved once, and that path is what runs: a bare `cfq` handed to
        # subprocess would be looked up in PATH instead.
        file = os.path.abspath(override)
        named = override if file == override else f"{override} ({file})"
        if not os.path.exists(file):
            raise EmulatorError(f"CFQ_BINARY names {named}, which does not exist")
        if not os.path.isfile(file):
            raise EmulatorError(f"CFQ_BINARY names {named}, which is not a file")
        return file
    name = "cfq.exe" if sys.platform == "win32" else "cfq"
    installed = Path(sysconfig.get_path("scripts")) / name
    if installed.is_file():
        return str(installed)
    found = shutil.which("cfq")
    if found:
        return found
    raise EmulatorError(
        "no cfq binary: install the cfq-emulator wheel for this platform, or set CFQ_BINARY"
    )


@dataclass
class Emulator:
    """A running ``cfq emulator``, from :func:`start_emulator`."""

    base_url: str
    account_id: str
    api_token: str
    dashboard_url: Optional[str]
    process: subprocess.Popen = field(repr=False)

    @property
    def env(self) -> dict:
        """The variables Cloudflare's SDKs and wrangler read."""
        return {
            "CLOUDFLARE_BASE_URL": self.base_url,
            "CLOUDFLARE_API_BASE_URL": self.base_url,
            "CLOUDFLARE_API_TOKEN": self.api_token,
            "CLOUDFLARE_ACCOUNT_ID": self.account_id,
        }

    def stop(self) -> None:
        """Closes the emulator's stdin (it stops in order), then SIGTERM, then SIGKILL."""
        process = self.process
        if process.poll() is not None:
            return
        try:
            if process.stdin:
                process.stdin.close()
            process.wait(STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            pass
        process.terminate()
        try:
            process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> "Emulator":
        return self

    def __exit__(self, *_exc) -> None:
        self.stop()


def start_emulator(
    *,
    data_dir: Optional[os.PathLike] = None,
    config: Optional[os.PathLike] = None,
    rate_limits: Optional[str] = None,
    latency: Optional[str] = None,
    api_token: Optional[str] = None,
    listen: str = "127.0.0.1:0",
    args: Sequence[str] = (),
    binary: Optional[str] = None,
    start_timeout: float = START_TIMEOUT,
) -> Emulator:
    """Starts ``cfq emulator`` on a free loopback port with a fresh token.

    Returns once it answers. The emulator stops with :meth:`Emulator.stop`,
    and also when this process dies, however it dies, whatever it forked:
    it watches its parent process.
    """
    token = api_token or f"cfq-test-{secrets.token_hex(16)}"
    # Closing stdin is stop()'s way to stop it in order. A child this
    # process forks (multiprocessing) holds the pipe too, so the end of this
    # process is told by the emulator's parent going (`--stop-with-parent`).
    command = [binary or binary_path(), "emulator", "--listen", listen, "--token", token,
               "--stop-on-stdin-close", "--stop-with-parent"]
    if data_dir:
        command += ["--data-dir", os.fspath(data_dir)]
    if config:
        command += ["--config", os.fspath(config)]
    if rate_limits:
        command += ["--rate-limits", rate_limits]
    if latency:
        command += ["--latency", latency]
    command += list(args)
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr: deque = deque(maxlen=KEPT_STDERR_LINES)
    threading.Thread(target=_keep, args=(process.stderr, stderr), daemon=True).start()
    printed: dict = {}
    read = threading.Event()
    threading.Thread(target=_read_start_lines, args=(process.stdout, printed, read), daemon=True).start()
    deadline = time.monotonic() + start_timeout

    def failed(why: str) -> EmulatorError:
        if process.poll() is None:
            process.kill()
        words = "\n".join(stderr).strip()
        return EmulatorError(why + (f":\n{words}" if words else ""))

    while not read.wait(0.05):
        if process.poll() is not None:
            time.sleep(0.1)  # the last of stderr
            raise failed(f"cfq emulator exited before it was ready (exit code {process.returncode})")
        if time.monotonic() > deadline:
            raise failed(f"cfq emulator was not ready within {start_timeout} s")
    if "error" in printed:
        raise failed(str(printed["error"]))
    lines = printed["lines"]
    emulator = Emulator(
        base_url=lines.base_url,
        account_id=lines.account_id,
        api_token=token,
        dashboard_url=lines.dashboard_url,
        process=process,
    )
    url = f"{emulator.base_url}/accounts/{emulator.account_id}/queues"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                if answer.status == 200:
                    return emulator
        except (urllib.error.URLError, OSError):
            pass
        if process.poll() is not None:
            raise failed(f"cfq emulator exited before it answered (exit code {process.returncode})")
        if time.monotonic() > deadline:
            raise failed(f"cfq emulator did not answer {url} within {start_timeout} s")
        time.sleep(0.05)


def _keep(stream, lines: deque) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))


def _read_start_lines(stream, printed: dict, read: threading.Event) -> None:
    # Lines that end before the ready line set nothing: the emulator is
    # exiting, and its exit says more.
    try:
        lines = read_start_lines(stream)
        if lines is not None:
            printed["lines"] = lines
            read.set()
    except StartLinesError as error:
        printed["error"] = error
        read.set()
    # Read to the end: the emulator never blocks on a full pipe.
    for _ in stream:
        pass
