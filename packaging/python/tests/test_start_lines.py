"""The start-up lines of `cfq emulator` as cfq-emulator reads them (version
1 of their contract), on literal text. Needs no cfq binary."""

import io

import pytest

from cfq_emulator._start_lines import StartLines, StartLinesError, read_start_lines

BASE = "http://127.0.0.1:8787/client/v4"
ACCOUNT = "0123456789abcdef0123456789abcdef"
DASHBOARD = "http://127.0.0.1:8787/_dashboard/login?key=k3y"
VERSION_1 = f"""cf-queues emulator listening on {BASE}
  export CLOUDFLARE_BASE_URL={BASE}
  export CLOUDFLARE_API_TOKEN=t0ken
  export CLOUDFLARE_ACCOUNT_ID={ACCOUNT}
  queue orders: 11111111111111111111111111111111
  queue orders-dlq: 22222222222222222222222222222222
  dashboard: {DASHBOARD}
  start-up lines: version 1
press Ctrl-C to stop
stopping
"""


def read(text):
    return read_start_lines(io.StringIO(text))


def test_version_1_every_line_read():
    assert read(VERSION_1) == StartLines(
        base_url=BASE,
        account_id=ACCOUNT,
        api_token="t0ken",
        dashboard_url=DASHBOARD,
        queues={"orders": "1" * 32, "orders-dlq": "2" * 32},
        version=1,
    )


def test_the_lines_after_the_ready_line_are_left_to_the_caller():
    stream = io.StringIO(VERSION_1)
    read_start_lines(stream)
    assert stream.read() == "stopping\n"


def test_no_version_line_is_version_1_and_token_and_dashboard_are_optional():
    text = f"""cf-queues emulator listening on {BASE}
  export CLOUDFLARE_BASE_URL={BASE}
  export CLOUDFLARE_ACCOUNT_ID={ACCOUNT}
press Ctrl-C to stop
"""
    assert read(text) == StartLines(base_url=BASE, account_id=ACCOUNT, version=1)


def test_lines_not_known_are_skipped_with_surrounding_whitespace_and_crlf():
    text = VERSION_1.replace(
        "  dashboard:", "  export CLOUDFLARE_SOMETHING_NEW=1\n  a line of version 1.1: yes\n  dashboard:"
    ).replace("\n", " \r\n")
    lines = read(text)
    assert (lines.base_url, lines.dashboard_url) == (BASE, DASHBOARD)
    assert list(lines.queues) == ["orders", "orders-dlq"]


def test_version_2_is_refused_naming_both_versions():
    with pytest.raises(StartLinesError, match=r"start-up lines of version 2, and this cfq-emulator reads version 1"):
        read(VERSION_1.replace("version 1", "version 2"))


def test_no_ready_line_is_not_ready():
    assert read(VERSION_1[: VERSION_1.index("press Ctrl-C")]) is None
    assert read(VERSION_1.replace("press Ctrl-C to stop", "press Ctrl-C to stop!")) is None


def test_a_ready_line_without_the_base_url_is_refused():
    text = "".join(line for line in VERSION_1.splitlines(True) if "CLOUDFLARE_BASE_URL" not in line)
    with pytest.raises(StartLinesError, match="ready without export CLOUDFLARE_BASE_URL="):
        read(text)
