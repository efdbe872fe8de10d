"""The lines ``cfq emulator`` prints on stdout when it starts, read by the
rules of their version 1: one line at a time, surrounding whitespace
stripped; ``press Ctrl-C to stop`` is the ready line and the last of them
(the emulator accepts connections and stops in order on its signals); an
``export NAME=VALUE`` value is the rest of its line; lines not known here
are skipped, since a version only ever adds lines; a ``start-up lines:
version N`` line with another N is refused; a start with no version line
(cfq 0.3 and earlier) is version 1. Stderr is for people."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, Optional

#: The version of the start-up lines this reader knows.
VERSION = 1
READY = "press Ctrl-C to stop"
_VERSION_PREFIX = "start-up lines: version "
_QUEUE = re.compile(r"queue (\S+): (\S+)")


class StartLinesError(ValueError):
    """Start-up lines this reader cannot take."""


@dataclass
class StartLines:
    """What the start-up lines say."""

    base_url: str
    account_id: str
    api_token: Optional[str] = None
    dashboard_url: Optional[str] = None
    #: The queues a ``--config`` file declares: name to id.
    queues: Dict[str, str] = field(default_factory=dict)
    version: int = VERSION


def read_start_lines(lines: Iterable[str]) -> Optional[StartLines]:
    """Reads lines up to the ready line, and no further: what is left of an
    iterator over a stream is the caller's to drain. ``None`` when the lines
    end before the ready line. Raises :class:`StartLinesError` on a version
    other than 1, and on a ready line without the base URL or the account."""
    found: dict = {}
    queues: Dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if line == READY:
            if "base_url" not in found or "account_id" not in found:
                raise StartLinesError(
                    "cfq emulator said it was ready without export CLOUDFLARE_BASE_URL= "
                    "and export CLOUDFLARE_ACCOUNT_ID="
                )
            return StartLines(queues=queues, **found)
        if line.startswith(_VERSION_PREFIX):
            version = line[len(_VERSION_PREFIX):]
            if version != str(VERSION):
                raise StartLinesError(
                    f"cfq emulator prints start-up lines of version {version}, and this "
                    f"cfq-emulator reads version {VERSION}: use a cfq binary of the same release"
                )
        for key, prefix in (
            ("base_url", "export CLOUDFLARE_BASE_URL="),
            ("account_id", "export CLOUDFLARE_ACCOUNT_ID="),
            ("api_token", "export CLOUDFLARE_API_TOKEN="),
            ("dashboard_url", "dashboard: "),
        ):
            if line.startswith(prefix):
                found.setdefault(key, line[len(prefix):])
        queue = _QUEUE.fullmatch(line)
        if queue:
            queues.setdefault(queue.group(1), queue.group(2))
    return None
