"""Cloudflare's official Python SDK against the cf-queues emulator.

Every operation goes through the SDK, and every raw response is checked field
by field against the shapes of Cloudflare's API reference. Run by
`.ci/sdk-conformance`, which starts `cfq emulator` and sets:
CFQ_BASE_URL, CFQ_TOKEN, CFQ_ACCOUNT.
"""

import base64
import json
import os
import sys

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

# failures: the SDK maps status codes to its exception classes
import cloudflare as cf

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
