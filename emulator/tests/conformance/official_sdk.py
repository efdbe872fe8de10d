"""Cloudflare's official Python SDK against the cf-queues emulator.

Every operation the SDK exposes goes through its method; the ones it does not
expose (extend, preview, deleting previewed messages) go through the SDK
client's own `post`/`get`. Every raw response is checked field by field
against the shapes of Cloudflare's API reference, and the SDK's models must
parse it. Run by `.ci/sdk-conformance`, which starts `cfq emulator` and sets:
CFQ_BASE_URL, CFQ_TOKEN, CFQ_ACCOUNT.
"""

import base64
import json
import os
import sys
from datetime import datetime

import httpx
from cloudflare import Cloudflare

BASE_URL = os.environ["CFQ_BASE_URL"]
TOKEN = os.environ["CFQ_TOKEN"]
ACCOUNT = os.environ["CFQ_ACCOUNT"]
QUEUE = "sdkconformance"

failures = []
passed = 0


def check(condition, what):
    global passed
    if condition:
        passed += 1
    else:
        failures.append(what)
        print(f"FAIL {what}")


def envelope(raw, name):
    """The raw JSON of a response, with the success envelope checked."""
    body = json.loads(raw.http_response.text)
    check(set(body) == {"success", "errors", "messages", "result"}, f"{name}: envelope keys {sorted(body)}")
    check(body["success"] is True, f"{name}: success is true")
    check(body["errors"] == [] and body["messages"] == [], f"{name}: empty errors and messages")
    return body["result"]


def metrics(result, name):
    m = result["metadata"]["metrics"]
    check(set(m) == {"backlog_count", "backlog_bytes", "oldest_message_timestamp_ms"}, f"{name}: metrics keys {sorted(m)}")
    check(all(isinstance(v, (int, float)) for v in m.values()), f"{name}: metrics are numbers")
    return m


client = Cloudflare(api_token=TOKEN, base_url=BASE_URL, max_retries=0)
messages = client.queues.messages

# push: text and json
raw = messages.with_raw_response.push(QUEUE, account_id=ACCOUNT, body="hello", content_type="text")
m = metrics(envelope(raw, "push"), "push")
check(m["backlog_count"] == 1 and m["backlog_bytes"] == 5, f"push: metrics after one message {m}")
check(raw.parse().metadata.metrics.backlog_count == 1, "push: SDK model parses metrics")
raw = messages.with_raw_response.push(QUEUE, account_id=ACCOUNT, body={"order": 42}, content_type="json", delay_seconds=0)
envelope(raw, "push json")

# bulk push
raw = messages.with_raw_response.bulk_push(
    QUEUE,
    account_id=ACCOUNT,
    messages=[{"body": "b1", "content_type": "text"}, {"body": {"n": 2}, "content_type": "json"}],
    delay_seconds=0,
)
m = metrics(envelope(raw, "bulk_push"), "bulk_push")
check(m["backlog_count"] == 4, f"bulk_push: backlog 4, got {m}")

# pull
raw = messages.with_raw_response.pull(QUEUE, account_id=ACCOUNT, batch_size=10, visibility_timeout_ms=30000)
result = envelope(raw, "pull")
check(set(result) == {"messages", "message_backlog_count", "metadata"}, f"pull: result keys {sorted(result)}")
check(result["message_backlog_count"] == 4, "pull: message_backlog_count")
metrics(result, "pull")
pulled = result["messages"]
check(len(pulled) == 4, f"pull: 4 messages, got {len(pulled)}")
for msg in pulled:
    check(set(msg) == {"id", "attempts", "body", "lease_id", "metadata", "timestamp_ms"}, f"pull: message keys {sorted(msg)}")
    check(msg["attempts"] == 1, "pull: attempts 1")
    check(isinstance(msg["lease_id"], str) and msg["lease_id"], "pull: lease_id string")
    check(msg["metadata"].get("CF-Content-Type") in ("text", "json"), "pull: CF-Content-Type")
text, js = pulled[0], pulled[1]
check(text["body"] == "hello", "pull: text body plain")
check(json.loads(base64.b64decode(js["body"])) == {"order": 42}, "pull: json body base64")
model = raw.parse()
check(model.messages[0].lease_id == text["lease_id"], "pull: SDK model parses messages")

# ack and retry, with a stale lease id
raw = messages.with_raw_response.ack(
    QUEUE,
    account_id=ACCOUNT,
    acks=[{"lease_id": text["lease_id"]}, {"lease_id": "not-a-lease"}],
    retries=[{"lease_id": js["lease_id"], "delay_seconds": 0}],
)
result = envelope(raw, "ack")
check(set(result) == {"ackCount", "retryCount", "warnings"}, f"ack: result keys {sorted(result)}")
check(result["ackCount"] == 1 and result["retryCount"] == 1, f"ack: counts {result}")
check(isinstance(result["warnings"], dict) and "not-a-lease" in result["warnings"], "ack: warnings map by lease id")
parsed = raw.parse()
check(parsed.ack_count == 1 and parsed.retry_count == 1, "ack: SDK model reads camelCase counts")
check(parsed.warnings is not None and "not-a-lease" in parsed.warnings, "ack: SDK model reads warnings")

# peek
raw = messages.with_raw_response.peek(QUEUE, account_id=ACCOUNT, batch_size=10)
result = envelope(raw, "peek")
check(set(result) == {"messages"}, f"peek: result keys {sorted(result)}")
for msg in result["messages"]:
    check(set(msg) == {"id", "attempts", "body", "ref", "metadata", "timestamp_ms"}, f"peek: message keys {sorted(msg)}")
refs = [msg["ref"] for msg in result["messages"]]
check(len(refs) == 1, f"peek: the retried message is visible again, got {len(refs)}")

# purge
raw = messages.with_raw_response.purge(QUEUE, account_id=ACCOUNT, refs=[{"ref": r} for r in refs] + [{"ref": "unknown-ref"}])
result = envelope(raw, "purge")
check(set(result) <= {"errors", "warnings"}, f"purge: result keys {sorted(result)}")
check("unknown-ref" in result.get("warnings", {}), "purge: warning for an unknown ref")

# The operations beyond the first six, on a queue of their own.
import cloudflare as cf

NEW = "sdknewoperations"
PULL_KEYS = {"id", "attempts", "body", "lease_id", "metadata", "timestamp_ms"}
METRICS_KEYS = {"backlog_count", "backlog_bytes", "oldest_message_timestamp_ms"}


def raw(method, operation, body=None, headers=None):
    """A request the SDK has no method for, sent through its client: the
    parsed JSON (or the httpx response when `headers` asks for another type)."""
    path = f"/accounts/{ACCOUNT}/queues/{NEW}{operation}"
    options = {"headers": headers} if headers else {}
    cast_to = httpx.Response if headers else object
    if method == "get":
        return client.get(path, cast_to=cast_to, options=options)
    return client.post(path, cast_to=cast_to, body=body, options=options)


def success_envelope(body, name):
    check(set(body) == {"success", "errors", "messages", "result"}, f"{name}: envelope keys {sorted(body)}")
    check(body.get("success") is True, f"{name}: success is true")
    check(body.get("errors") == [] and body.get("messages") == [], f"{name}: empty errors and messages")
    return body.get("result", {})


def failure_code(error, name, pointer):
    """The code of a 400 the SDK raised as BadRequestError, with its pointer checked."""
    check(error.status_code == 400, f"{name}: 400, got {error.status_code}")
    body = error.body if isinstance(error.body, dict) else {}
    first = (body.get("errors") or [{}])[0]
    check(body.get("success") is False, f"{name}: success is false")
    check(first.get("source", {}).get("pointer") == pointer, f"{name}: pointer {first}")
    return first.get("code")


for text_body in ("one", "two", "three"):
    messages.push(NEW, account_id=ACCOUNT, body=text_body, content_type="text")

# metrics (SDK: queues.get_metrics)
raw_metrics = client.queues.with_raw_response.get_metrics(NEW, account_id=ACCOUNT)
result = envelope(raw_metrics, "get_metrics")
check(set(result) == METRICS_KEYS, f"get_metrics: result keys {sorted(result)}")
check(result.get("backlog_count") == 3 and result.get("backlog_bytes") == 11, f"get_metrics: exact backlog {result}")
check(isinstance(result.get("oldest_message_timestamp_ms"), int) and result["oldest_message_timestamp_ms"] > 0, "get_metrics: oldest timestamp")
parsed = raw_metrics.parse()
check(parsed is not None and parsed.backlog_count == 3 and parsed.backlog_bytes == 11, "get_metrics: SDK model parses")
stream = raw("get", "/metrics", headers={"Accept": "text/event-stream"})
check(stream.headers.get("content-type", "").startswith("text/event-stream"), f"metrics stream: content type {stream.headers.get('content-type')}")
event = stream.text
check(event.startswith("data: ") and event.endswith("\n\n"), f"metrics stream: one event {event!r}")
streamed = json.loads(event[len("data: "):]) if event.startswith("data: ") else {}
check(streamed == result, f"metrics stream: the same object {streamed}")

# preview (not in the SDK): the pull shape, nothing leased
body = raw("post", "/messages/preview", body={"batch_size": 10})
result = success_envelope(body, "preview")
check(set(result) == {"messages"}, f"preview: result keys {sorted(result)}")
previewed = result.get("messages", [])
check(len(previewed) == 3, f"preview: 3 messages, got {len(previewed)}")
for msg in previewed:
    check(set(msg) == PULL_KEYS, f"preview: message keys {sorted(msg)}")
    check(msg["attempts"] == 0, "preview: attempts 0, nothing leased")
    check(isinstance(msg["lease_id"], str) and msg["lease_id"], "preview: lease_id string")
    check(isinstance(msg["timestamp_ms"], int), "preview: timestamp_ms number")
check([m["body"] for m in previewed] == ["one", "two", "three"], "preview: text bodies plain, in order")
pulled = messages.pull(NEW, account_id=ACCOUNT, batch_size=10, visibility_timeout_ms=30000).messages
check([m.id for m in pulled] == [m["id"] for m in previewed], "preview: pull gets the same messages")
check(all(m.attempts == 1 for m in pulled), "preview: pull's attempts 1")

# extend (not in the SDK): {extendCount, warnings}
body = raw(
    "post",
    "/messages/extend",
    body={"extend": [{"lease_id": m.lease_id} for m in pulled] + [{"lease_id": "not-a-lease"}], "visibility_timeout_ms": 60000},
)
result = success_envelope(body, "extend")
check(set(result) == {"extendCount", "warnings"}, f"extend: result keys {sorted(result)}")
check(result.get("extendCount") == 3, f"extend: extendCount 3, got {result.get('extendCount')}")
check(isinstance(result.get("warnings"), dict) and set(result["warnings"]) == {"not-a-lease"}, f"extend: warnings map {result.get('warnings')}")
acked = messages.ack(
    NEW,
    account_id=ACCOUNT,
    acks=[{"lease_id": pulled[0].lease_id}],
    retries=[{"lease_id": m.lease_id, "delay_seconds": 0} for m in pulled[1:]],
)
check(acked.ack_count == 1 and acked.retry_count == 2, "extend: the held lease ids still ack and retry")
try:
    raw("post", "/messages/extend", body={"extend": [], "visibility_timeout_ms": 0})
    check(False, "extend of 0 ms: an error")
except cf.BadRequestError as e:
    check(failure_code(e, "extend of 0 ms", "/visibility_timeout_ms") == 10207, "extend of 0 ms: 10207")

# deleting previewed messages (not in the SDK): {warnings}
previewed = success_envelope(raw("post", "/messages/preview", body={}), "preview again").get("messages", [])
check(len(previewed) == 2 and all(m["attempts"] == 1 for m in previewed), "preview again: the retried two")
body = raw(
    "post",
    "/messages/preview/ack",
    body={
        "acks": [{"lease_id": previewed[0]["lease_id"]}, {"lease_id": "unknown-preview"}],
        "retries": [{"lease_id": previewed[1]["lease_id"], "delay_seconds": 0}],
    },
)
result = success_envelope(body, "preview ack")
check(set(result) == {"warnings"}, f"preview ack: result keys {sorted(result)}")
check(set(result.get("warnings", {})) == {"unknown-preview"}, f"preview ack: warnings map {result.get('warnings')}")
left = client.queues.get_metrics(NEW, account_id=ACCOUNT)
check(left is not None and left.backlog_count == 1, "preview ack: deleted at once")

# purge status before any purge, purge (SDK: queues.purge.start / status)
raw_status = client.queues.purge.with_raw_response.status(NEW, account_id=ACCOUNT)
result = envelope(raw_status, "purge status before")
check(result == {"completed": "false"}, f"purge status before: {result}")
try:
    client.queues.purge.start(NEW, account_id=ACCOUNT, delete_messages_permanently=False)
    check(False, "purge without confirmation: an error")
except cf.BadRequestError as e:
    code = failure_code(e, "purge without confirmation", "/delete_messages_permanently")
    check(code == 10207, f"purge without confirmation: 10207, got {code}")
check(client.queues.get_metrics(NEW, account_id=ACCOUNT).backlog_count == 1, "purge without confirmation: nothing deleted")
raw_purge = client.queues.purge.with_raw_response.start(NEW, account_id=ACCOUNT, delete_messages_permanently=True)
result = envelope(raw_purge, "purge start")
queue_keys = {
    "queue_id", "queue_name", "created_on", "modified_on", "producers",
    "producers_total_count", "consumers", "consumers_total_count", "settings",
}
check(set(result) == queue_keys, f"purge start: queue object keys {sorted(result)}")
check(result.get("queue_id") == NEW and isinstance(result.get("queue_name"), str), "purge start: queue id and name")
for key in ("created_on", "modified_on"):
    stamp = result.get(key)
    check(isinstance(stamp, str) and datetime.fromisoformat(stamp.replace("Z", "+00:00")) is not None, f"purge start: {key} timestamp {stamp}")
check(result.get("producers") == [] and result.get("consumers") == [], "purge start: producer and consumer lists")
check(result.get("producers_total_count") == 0 and result.get("consumers_total_count") == 0, "purge start: counts")
settings = result.get("settings", {})
check(set(settings) == {"delivery_delay", "delivery_paused", "message_retention_period"}, f"purge start: settings keys {sorted(settings)}")
check(isinstance(settings.get("delivery_paused"), bool), "purge start: delivery_paused boolean")
queue_model = raw_purge.parse()
check(queue_model is not None and queue_model.queue_id == NEW, "purge start: SDK model parses the queue")
check(queue_model is not None and queue_model.settings.message_retention_period == 345600, "purge start: SDK model parses settings")
raw_status = client.queues.purge.with_raw_response.status(NEW, account_id=ACCOUNT)
result = envelope(raw_status, "purge status")
check(set(result) == {"completed", "started_at"}, f"purge status: keys {sorted(result)}")
check(result.get("completed") == "true", f"purge status: completed is the string \"true\", got {result.get('completed')!r}")
started = result.get("started_at")
check(isinstance(started, str) and datetime.fromisoformat(started.replace("Z", "+00:00")) is not None, "purge status: started_at an RFC 3339 string")
check(isinstance(started, str) and started == raw_purge.parse().modified_on, "purge status: started_at is the purge's time")
status_model = raw_status.parse()
check(status_model is not None and status_model.completed == "true" and status_model.started_at == started, "purge status: SDK model parses")
after = client.queues.get_metrics(NEW, account_id=ACCOUNT)
check(after is not None and (after.backlog_count, after.backlog_bytes, after.oldest_message_timestamp_ms) == (0, 0, 0), "purge start: queue empty")

# failures: the SDK maps status codes to its exception classes

try:
    Cloudflare(api_token="wrong", base_url=BASE_URL, max_retries=0).queues.messages.pull(QUEUE, account_id=ACCOUNT)
    check(False, "wrong token: an error")
except cf.PermissionDeniedError as e:
    check(e.status_code == 403, "wrong token: 403")
    body = e.body if isinstance(e.body, dict) else {}
    check(body.get("success") is False and body.get("errors", [{}])[0].get("code") == 10000, f"wrong token: envelope {e.body}")
try:
    messages.pull("bad-queue-id!", account_id=ACCOUNT, batch_size=0)
    check(False, "bad queue id: an error")
except cf.BadRequestError as e:
    check(e.status_code == 400, "bad queue id: 400")

print("official Python SDK (cloudflare 5.9.0) against cfq emulator")
print(f"conformance: {passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
