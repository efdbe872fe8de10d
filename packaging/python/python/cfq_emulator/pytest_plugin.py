"""The pytest plugin of cfq-emulator (entry point ``pytest11``): installing
the wheel is enough.

Fixtures:

- ``cf_queues_emulator``: one emulator for the whole session;
- ``cf_queues_emulator_per_test``: a fresh one for each test (isolation);
- ``cf_queues_emulator_factory``: ``start(**options)`` and ``restart(emulator)``
  for tests that need emulators of their own (all stopped after the test).

Options, in ``pytest.ini`` / ``pyproject.toml``'s ``[tool.pytest.ini_options]``:
``cfq_emulator_data_dir``, ``cfq_emulator_config``, ``cfq_emulator_rate_limits``
(``cloudflare``); they apply to the first two fixtures.
"""

from __future__ import annotations

from typing import Iterator, List

import pytest

from . import Emulator, start_emulator


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("cfq_emulator_data_dir", "a data directory for the emulator of the session")
    parser.addini("cfq_emulator_config", "a TOML file declaring the emulator's account")
    parser.addini("cfq_emulator_rate_limits", "`cloudflare`: enforce Cloudflare's rate limits")


def _options(config: pytest.Config, data_dir: bool = True) -> dict:
    options = {}
    if data_dir and config.getini("cfq_emulator_data_dir"):
        options["data_dir"] = config.getini("cfq_emulator_data_dir")
    if config.getini("cfq_emulator_config"):
        options["config"] = config.getini("cfq_emulator_config")
    if config.getini("cfq_emulator_rate_limits"):
        options["rate_limits"] = config.getini("cfq_emulator_rate_limits")
    return options


@pytest.fixture(scope="session")
def cf_queues_emulator(pytestconfig: pytest.Config) -> Iterator[Emulator]:
    """One ``cfq emulator`` for the session: ``base_url``, ``account_id``,
    ``api_token``, ``dashboard_url`` and ``env`` (what Cloudflare's SDK reads)."""
    with start_emulator(**_options(pytestconfig)) as emulator:
        yield emulator


@pytest.fixture
def cf_queues_emulator_per_test(pytestconfig: pytest.Config) -> Iterator[Emulator]:
    """A fresh emulator for one test, sharing nothing (no data directory)."""
    with start_emulator(**_options(pytestconfig, data_dir=False)) as emulator:
        yield emulator


class EmulatorFactory:
    """Starts and restarts emulators for one test; stops them all after it."""

    def __init__(self) -> None:
        self._started: List[Emulator] = []
        self._options: dict = {}

    def start(self, **options) -> Emulator:
        """An emulator with these options (those of ``start_emulator``)."""
        emulator = start_emulator(**options)
        self._started.append(emulator)
        self._options[id(emulator)] = options
        return emulator

    def restart(self, emulator: Emulator) -> Emulator:
        """Stops ``emulator`` and starts one with the same options and token
        (with a data directory, the same account and messages)."""
        options = dict(self._options.get(id(emulator), {}))
        options.setdefault("api_token", emulator.api_token)
        emulator.stop()
        return self.start(**options)

    def stop_all(self) -> None:
        for emulator in self._started:
            emulator.stop()


@pytest.fixture
def cf_queues_emulator_factory() -> Iterator[EmulatorFactory]:
    """``start(**options)`` and ``restart(emulator)``, for tests that need
    emulators of their own."""
    factory = EmulatorFactory()
    try:
        yield factory
    finally:
        factory.stop_all()
