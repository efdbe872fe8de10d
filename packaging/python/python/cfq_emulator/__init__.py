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
    """The ``cfq`` binary: ``CFQ_BINARY``, else the one this distribution installed."""
    override = os.environ.get("CFQ_BINARY")
    if override:
        if not Path(override).is_file():
            raise EmulatorError(f"CFQ_BINARY names {override}, which does not exist")
        return override
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
    and also when this process dies, however it dies: it watches its
    stdin, which only this process holds.
    """
    token = api_token or f"cfq-test-{secrets.token_hex(16)}"
    command = [binary or binary_path(), "emulator", "--listen", listen, "--token", token,
               "--stop-on-stdin-close"]
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
    ready = threading.Event()
    threading.Thread(target=_read_printed, args=(process.stdout, printed, ready), daemon=True).start()
    deadline = time.monotonic() + start_timeout

    def failed(why: str) -> EmulatorError:
        if process.poll() is None:
            process.kill()
        words = "\n".join(stderr).strip()
        return EmulatorError(f"cfq emulator {why}" + (f":\n{words}" if words else ""))

    while not ready.wait(0.05):
        if process.poll() is not None:
            time.sleep(0.1)  # the last of stderr
            raise failed(f"exited before it was ready (exit code {process.returncode})")
        if time.monotonic() > deadline:
            raise failed(f"printed no address within {start_timeout} s")
    emulator = Emulator(
        base_url=printed["CLOUDFLARE_BASE_URL"],
        account_id=printed["CLOUDFLARE_ACCOUNT_ID"],
        api_token=token,
        dashboard_url=printed.get("dashboard"),
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
            raise failed(f"exited before it answered (exit code {process.returncode})")
        if time.monotonic() > deadline:
            raise failed(f"did not answer {url} within {start_timeout} s")
        time.sleep(0.05)


def _keep(stream, lines: deque) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))


def _read_printed(stream, printed: dict, ready: threading.Event) -> None:
    for line in stream:
        line = line.strip()
        for name in ("CLOUDFLARE_BASE_URL", "CLOUDFLARE_ACCOUNT_ID"):
            prefix = f"export {name}="
            if line.startswith(prefix):
                printed.setdefault(name, line[len(prefix):])
        if line.startswith("dashboard: "):
            printed.setdefault("dashboard", line[len("dashboard: "):])
        if line == "press Ctrl-C to stop" and "CLOUDFLARE_BASE_URL" in printed:
            ready.set()
    # Read to the end: the emulator never blocks on a full pipe.
