"""The wheel as a Python developer meets it: its pytest fixtures, and
Cloudflare's Python SDK against them, each operation's effect read back.
Run by `cargo xtask python-conformance` in a fresh virtual environment
where the wheel was installed with no index and no dependencies."""

import base64
import json
import os
import re
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
from importlib.metadata import version

import cloudflare
import pytest

from cfq_emulator import EmulatorError, binary_path, start_emulator


def client(emulator):
    return cloudflare.Cloudflare(api_token=emulator.api_token, base_url=emulator.base_url, max_retries=0)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def eventually(what, check, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_the_session_fixture_gives_what_the_sdk_reads(cf_queues_emulator):
    e = cf_queues_emulator
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/client/v4", e.base_url)
    assert re.fullmatch(r"[0-9a-f]{32}", e.account_id)
    assert re.fullmatch(r"cfq-test-[0-9a-f]{32}", e.api_token)
    assert e.dashboard_url.startswith(e.base_url.split("/client/v4")[0] + "/_dashboard/login?key=")
    assert e.env == {
        "CLOUDFLARE_BASE_URL": e.base_url,
        "CLOUDFLARE_API_BASE_URL": e.base_url,
        "CLOUDFLARE_API_TOKEN": e.api_token,
        "CLOUDFLARE_ACCOUNT_ID": e.account_id,
    }
    # What the SDK reads from the environment is enough.
    env_client = cloudflare.Cloudflare(
        api_token=e.env["CLOUDFLARE_API_TOKEN"], base_url=e.env["CLOUDFLARE_BASE_URL"], max_retries=0
    )
    assert env_client.queues.list(account_id=e.account_id) is not None


def test_queues_create_get_list_update_edit_delete(cf_queues_emulator):
    cf, account_id = client(cf_queues_emulator), cf_queues_emulator.account_id
    created = cf.queues.create(account_id=account_id, queue_name="py-queues")
    assert created.queue_name == "py-queues"
    queue_id = created.queue_id
    assert cf.queues.get(queue_id, account_id=account_id).queue_name == "py-queues"
    assert "py-queues" in [q.queue_name for q in cf.queues.list(account_id=account_id)]
    cf.queues.update(queue_id, account_id=account_id, queue_name="py-queues", settings={"delivery_delay": 5})
    assert cf.queues.get(queue_id, account_id=account_id).settings.delivery_delay == 5
    cf.queues.edit(queue_id, account_id=account_id, settings={"message_retention_period": 3600})
    edited = cf.queues.get(queue_id, account_id=account_id)
    assert (edited.settings.message_retention_period, edited.settings.delivery_delay) == (3600, 5)
    cf.queues.delete(queue_id, account_id=account_id)
    with pytest.raises(cloudflare.NotFoundError):
        cf.queues.get(queue_id, account_id=account_id)


def test_consumers_create_list_get_update_delete(cf_queues_emulator):
    cf, account_id = client(cf_queues_emulator), cf_queues_emulator.account_id
    queue_id = cf.queues.create(account_id=account_id, queue_name="py-consumers").queue_id
    created = cf.queues.consumers.create(
        queue_id, account_id=account_id, type="http_pull",
        settings={"batch_size": 10, "max_retries": 3, "visibility_timeout_ms": 30_000},
    )
    listed = list(cf.queues.consumers.list(queue_id, account_id=account_id))
    assert [c.consumer_id for c in listed] == [created.consumer_id]
    cf.queues.consumers.update(
        created.consumer_id, account_id=account_id, queue_id=queue_id, type="http_pull",
        settings={"batch_size": 20, "max_retries": 5},
    )
    got = cf.queues.consumers.get(created.consumer_id, account_id=account_id, queue_id=queue_id)
    assert (got.settings.batch_size, got.settings.max_retries) == (20, 5)
    cf.queues.consumers.delete(created.consumer_id, account_id=account_id, queue_id=queue_id)
    assert list(cf.queues.consumers.list(queue_id, account_id=account_id)) == []


def test_messages_push_pull_ack_retry_peek_purge_metrics(cf_queues_emulator):
    cf, account_id = client(cf_queues_emulator), cf_queues_emulator.account_id
    queue_id = cf.queues.create(account_id=account_id, queue_name="py-messages").queue_id
    cf.queues.consumers.create(queue_id, account_id=account_id, type="http_pull")
    messages = cf.queues.messages
    messages.push(queue_id, account_id=account_id, body="hello", content_type="text")
    messages.bulk_push(queue_id, account_id=account_id, messages=[
        {"body": {"order": 42}, "content_type": "json"},
        {"body": "third", "content_type": "text"},
        {"body": "fourth", "content_type": "text"},
    ])
    assert cf.queues.get_metrics(queue_id, account_id=account_id).backlog_count == 4
    peeked = messages.peek(queue_id, account_id=account_id, batch_size=10)
    assert [m.attempts for m in peeked.messages] == [0, 0, 0, 0]
    pulled = messages.pull(queue_id, account_id=account_id, batch_size=2, visibility_timeout_ms=60_000)
    first, second = pulled.messages
    assert (first.body, first.attempts) == ("hello", 1)
    # As on Cloudflare, a pulled json body is base64.
    assert json.loads(base64.b64decode(second.body)) == {"order": 42}
    acked = messages.ack(queue_id, account_id=account_id,
                         acks=[{"lease_id": first.lease_id}],
                         retries=[{"lease_id": second.lease_id, "delay_seconds": 0}])
    assert (acked.ack_count, acked.retry_count) == (1, 1)
    assert cf.queues.get_metrics(queue_id, account_id=account_id).backlog_count == 3
    third = next(m for m in messages.peek(queue_id, account_id=account_id, batch_size=10).messages
                 if m.body == "third")
    messages.purge(queue_id, account_id=account_id, refs=[{"ref": third.ref}])
    assert cf.queues.get_metrics(queue_id, account_id=account_id).backlog_count == 2
    cf.queues.purge.start(queue_id, account_id=account_id, delete_messages_permanently=True)
    eventually("the purge completes",
               lambda: str(cf.queues.purge.status(queue_id, account_id=account_id).completed).lower() == "true")
    assert cf.queues.get_metrics(queue_id, account_id=account_id).backlog_count == 0


def test_a_per_test_emulator_holds_only_its_own_queue(cf_queues_emulator_per_test):
    e = cf_queues_emulator_per_test
    client(e).queues.create(account_id=e.account_id, queue_name="isolated")
    assert [q.queue_name for q in client(e).queues.list(account_id=e.account_id)] == ["isolated"]


def test_a_second_per_test_emulator_is_another(cf_queues_emulator_per_test):
    e = cf_queues_emulator_per_test
    assert list(client(e).queues.list(account_id=e.account_id)) == []


def test_a_data_directory_survives_a_restart(cf_queues_emulator_factory, tmp_path):
    first = cf_queues_emulator_factory.start(data_dir=tmp_path)
    queue_id = client(first).queues.create(account_id=first.account_id, queue_name="kept").queue_id
    client(first).queues.messages.push(queue_id, account_id=first.account_id, body="still here", content_type="text")
    second = cf_queues_emulator_factory.restart(first)
    assert not alive(first.process.pid)
    assert second.api_token == first.api_token
    assert client(second).queues.get_metrics(queue_id, account_id=second.account_id).backlog_count == 1


def stand_in(path, body):
    """An executable ``#!/bin/sh`` script standing in for cfq."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="shell scripts stand in for cfq")
def test_a_relative_cfq_binary_is_the_file_in_the_current_directory(tmp_path, monkeypatch):
    here = stand_in(tmp_path / "here" / "cfq", "echo the one here")
    stand_in(tmp_path / "in-path" / "cfq", "echo the one in PATH")
    monkeypatch.chdir(here.parent)
    monkeypatch.setenv("CFQ_BINARY", "cfq")
    monkeypatch.setenv("PATH", f"{tmp_path / 'in-path'}{os.pathsep}{os.environ['PATH']}")
    assert binary_path() == str(here)
    # What start_emulator runs is that path.
    run = subprocess.run([binary_path()], capture_output=True, text=True)
    assert run.stdout == "the one here\n"


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for cfq")
def test_a_cfq_printing_another_version_of_the_start_up_lines_is_refused(tmp_path):
    binary = stand_in(tmp_path / "cfq", textwrap.dedent("""\
        echo 'cf-queues emulator listening on http://127.0.0.1:9/client/v4'
        echo '  export CLOUDFLARE_BASE_URL=http://127.0.0.1:9/client/v4'
        echo '  export CLOUDFLARE_ACCOUNT_ID=0123456789abcdef0123456789abcdef'
        echo '  start-up lines: version 2'
        echo 'press Ctrl-C to stop'
        exec sleep 60"""))
    with pytest.raises(EmulatorError, match=r"^cfq emulator prints start-up lines of version 2, and this "
                                            r"cfq-emulator reads version 1"):
        start_emulator(binary=str(binary), start_timeout=5)


def test_a_start_failure_says_the_emulators_words():
    with pytest.raises(EmulatorError, match=r"(?s)exited before it was ready.*cannot read the emulator configuration"):
        start_emulator(config="/no/such/account.toml")


def test_the_session_emulator_stops_with_the_session_and_with_a_killed_run(tmp_path):
    test_file = tmp_path / "test_inner.py"
    test_file.write_text(textwrap.dedent("""
        import os, sys, time
        def test_records(cf_queues_emulator):
            print("PID", cf_queues_emulator.process.pid, flush=True)
            if os.environ.get("INNER_HANG"):
                time.sleep(120)
    """))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(test_file)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    pid = int(re.search(r"PID (\d+)", run.stdout).group(1))
    eventually("stopped with the session", lambda: not alive(pid))
    hanging = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(test_file)],
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "INNER_HANG": "1"})
    line = ""
    while "PID" not in line:
        line = hanging.stdout.readline()
    pid = int(line.split("PID")[1].split()[0])
    hanging.send_signal(signal.SIGKILL)
    hanging.wait()
    eventually("stopped with a killed run", lambda: not alive(pid))


@pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGKILL are Unix's")
def test_the_emulator_stops_with_a_killed_process_whatever_it_forked(tmp_path):
    # The forked child inherits the emulator's stdin pipe and keeps it open
    # after the test process is killed: the emulator goes with its parent.
    script = tmp_path / "forks.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing, time
        from cfq_emulator import start_emulator
        if __name__ == "__main__":
            emulator = start_emulator()
            child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(120,))
            child.start()
            print(emulator.process.pid, child.pid, flush=True)
            time.sleep(120)
    """))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    emulator_pid, child_pid = map(int, process.stdout.readline().split())
    try:
        process.send_signal(signal.SIGKILL)
        process.wait()
        eventually("the emulator stops", lambda: not alive(emulator_pid))
        assert alive(child_pid), "the forked child outlives the test process"
    finally:
        for pid in (child_pid, emulator_pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def pep440(crate_version):
    """What maturin makes of a crate's version: a SemVer pre-release as PEP 440's."""
    core, _, pre = crate_version.split("+")[0].partition("-")
    if not pre:
        return core
    kind, _, number = pre.partition(".")
    return core + {"alpha": "a", "beta": "b", "rc": "rc"}[kind] + (number or "0")


def test_the_wheel_carries_the_crate_version_and_the_cfq_command():
    assert pep440("0.4.0-rc.1") == "0.4.0rc1"
    assert pep440("1.0.0-alpha.2") == "1.0.0a2"
    assert pep440("1.0.0-beta") == "1.0.0b0"
    crate = os.environ["CFQ_CRATE_VERSION"]
    assert version("cfq-emulator") == pep440(crate)
    # The wheel put the command in the environment's scripts directory.
    command = os.path.join(sysconfig.get_path("scripts"), "cfq")
    run = subprocess.run([command, "--version"], capture_output=True, text=True)
    assert run.stdout.strip() == f"cfq {crate}"
