"""Cloudflare's official Python SDK against the cf-queues emulator.

Every operation the SDK exposes goes through its method; the ones it does not
expose (extend, preview, deleting previewed messages) go through the SDK
client's own `post`/`get`. Every raw response is checked field by field
against the shapes of Cloudflare's API reference, and the SDK's models must
parse it. Run by `cargo xtask sdk-conformance`, which starts `cfq emulator` and sets:
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
# The queue sprang into being on its first push: one HTTP pull consumer.
lax_consumers = result.get("consumers") or [{}]
check(result.get("producers") == [] and len(lax_consumers) == 1 and lax_consumers[0].get("type") == "http_pull", "purge start: producer and consumer lists")
check(result.get("producers_total_count") == 0 and result.get("consumers_total_count") == 1, "purge start: counts")
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

# Queues and consumers as resources (SDK: queues.create/list/get/edit/update/delete,
# queues.consumers.create/list/get/update/delete), field by field.
QUEUE_KEYS = {
    "queue_id", "queue_name", "created_on", "modified_on", "producers",
    "producers_total_count", "consumers", "consumers_total_count", "settings",
}
SETTINGS_KEYS = {"delivery_delay", "delivery_paused", "message_retention_period"}
PULL_CONSUMER_KEYS = {"type", "consumer_id", "created_on", "queue_name", "dead_letter_queue", "settings"}
PULL_SETTINGS_KEYS = {"batch_size", "max_retries", "retry_delay", "visibility_timeout_ms"}


def is_hex32(value):
    return isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def check_queue(result, name, queue_name):
    check(set(result) == QUEUE_KEYS, f"{name}: queue keys {sorted(result)}")
    check(is_hex32(result.get("queue_id")), f"{name}: a 32-hex queue_id {result.get('queue_id')!r}")
    check(result.get("queue_name") == queue_name, f"{name}: queue_name {result.get('queue_name')!r}")
    check(set(result.get("settings", {})) == SETTINGS_KEYS, f"{name}: settings keys {sorted(result.get('settings', {}))}")
    for key in ("created_on", "modified_on"):
        stamp = result.get(key)
        check(isinstance(stamp, str) and datetime.fromisoformat(stamp.replace("Z", "+00:00")) is not None, f"{name}: {key} {stamp!r}")
    check(result.get("consumers_total_count") == len(result.get("consumers", [])), f"{name}: consumers_total_count")
    check(result.get("producers") == [] and result.get("producers_total_count") == 0, f"{name}: no producers")


def check_pull_consumer(result, name, queue_name):
    check(set(result) == PULL_CONSUMER_KEYS, f"{name}: consumer keys {sorted(result)}")
    check(result.get("type") == "http_pull", f"{name}: type http_pull")
    check(is_hex32(result.get("consumer_id")), f"{name}: a 32-hex consumer_id")
    check(result.get("queue_name") == queue_name, f"{name}: the queue's name")
    check(set(result.get("settings", {})) == PULL_SETTINGS_KEYS, f"{name}: settings keys {sorted(result.get('settings', {}))}")


queues = client.queues
raw_created = queues.with_raw_response.create(account_id=ACCOUNT, queue_name="sdk-resources")
created = envelope(raw_created, "queues.create")
check_queue(created, "queues.create", "sdk-resources")
check(created.get("consumers") == [], "queues.create: no consumer yet")
check(created.get("settings") == {"delivery_delay": 0, "delivery_paused": False, "message_retention_period": 345600}, f"queues.create: default settings {created.get('settings')}")
model = raw_created.parse()
check(model is not None and model.queue_name == "sdk-resources", "queues.create: SDK model parses")
RID = created.get("queue_id", "")
try:
    queues.create(account_id=ACCOUNT, queue_name="sdk-resources")
    check(False, "queues.create twice: an error")
except cf.ConflictError as e:
    body = e.body if isinstance(e.body, dict) else {}
    check(e.status_code == 409 and (body.get("errors") or [{}])[0].get("code") == 11009, f"queues.create twice: 409/11009 {e.body}")
try:
    messages.pull(RID, account_id=ACCOUNT)
    check(False, "pull without http_pull: an error")
except cf.APIStatusError as e:
    body = e.body if isinstance(e.body, dict) else {}
    first = (body.get("errors") or [{}])[0]
    check(e.status_code == 405, f"pull without http_pull: 405, got {e.status_code}")
    check(first.get("code") == 0 and first.get("message") == "messages cannot be pulled unless http_pull mode is enabled", f"pull without http_pull: {first}")

# list: SyncSinglePage of Queue models; the raw body has result_info
page = queues.list(account_id=ACCOUNT)
listed = [q.queue_name for q in page]
check("sdk-resources" in listed and QUEUE in listed and NEW in listed, f"queues.list: created and lax queues {listed}")
raw_list = queues.with_raw_response.list(account_id=ACCOUNT)
body = json.loads(raw_list.http_response.text)
check(set(body) == {"success", "errors", "messages", "result", "result_info"}, f"queues.list: envelope keys {sorted(body)}")
info = body.get("result_info", {})
check(set(info) == {"count", "page", "per_page", "total_count", "total_pages"}, f"queues.list: result_info keys {sorted(info)}")
check(info.get("count") == len(body.get("result", [])) and info.get("page") == 1, f"queues.list: result_info {info}")
for queue in body.get("result", []):
    check(set(queue) == QUEUE_KEYS, f"queues.list: queue keys {sorted(queue)}")
lax = next((q for q in body.get("result", []) if q.get("queue_id") == QUEUE), {})
check(lax.get("queue_name") == QUEUE and lax.get("consumers_total_count") == 1, f"queues.list: a lax queue named by its id, with its consumer {lax}")
if lax.get("consumers"):
    check_pull_consumer(lax["consumers"][0], "queues.list lax consumer", QUEUE)

# get, edit (PATCH: keeps), update (PUT: replaces)
raw_get = queues.with_raw_response.get(RID, account_id=ACCOUNT)
check(envelope(raw_get, "queues.get") == created, "queues.get: the queue as created")
raw_edit = queues.with_raw_response.edit(RID, account_id=ACCOUNT, settings={"delivery_delay": 5, "message_retention_period": 3600})
edited = envelope(raw_edit, "queues.edit")
check_queue(edited, "queues.edit", "sdk-resources")
check(edited.get("settings") == {"delivery_delay": 5, "delivery_paused": False, "message_retention_period": 3600}, f"queues.edit: {edited.get('settings')}")
edited = envelope(queues.with_raw_response.edit(RID, account_id=ACCOUNT, settings={"delivery_paused": True}), "queues.edit again")
check(edited.get("settings") == {"delivery_delay": 5, "delivery_paused": True, "message_retention_period": 3600}, f"queues.edit keeps the others: {edited.get('settings')}")
raw_update = queues.with_raw_response.update(RID, account_id=ACCOUNT, queue_name="sdk-renamed", settings={"delivery_delay": 1})
updated = envelope(raw_update, "queues.update")
check_queue(updated, "queues.update", "sdk-renamed")
check(updated.get("settings") == {"delivery_delay": 1, "delivery_paused": False, "message_retention_period": 345600}, f"queues.update resets the others: {updated.get('settings')}")
model = raw_update.parse()
check(model is not None and model.settings is not None and model.settings.delivery_delay == 1, "queues.update: SDK model parses settings")

# consumers: create (http_pull), list, get, update, delete
consumers = queues.consumers
raw_consumer = consumers.with_raw_response.create(
    RID,
    account_id=ACCOUNT,
    type="http_pull",
    dead_letter_queue="sdk-dlq",
    settings={"batch_size": 10, "max_retries": 5, "retry_delay": 2, "visibility_timeout_ms": 60000},
)
consumer = envelope(raw_consumer, "consumers.create")
check_pull_consumer(consumer, "consumers.create", "sdk-renamed")
check(consumer.get("dead_letter_queue") == "sdk-dlq", "consumers.create: dead_letter_queue by name")
check(consumer.get("settings") == {"batch_size": 10, "max_retries": 5, "retry_delay": 2, "visibility_timeout_ms": 60000}, f"consumers.create: settings {consumer.get('settings')}")
parsed = raw_consumer.parse()
check(parsed is not None and parsed.type == "http_pull" and parsed.settings.visibility_timeout_ms == 60000, "consumers.create: SDK model parses")
check(parsed is not None and parsed.created_on is not None, "consumers.create: SDK reads created_on as a date")
CID = consumer.get("consumer_id", "")
check(any(q.queue_name == "sdk-dlq" for q in queues.list(account_id=ACCOUNT)), "consumers.create: the dead-letter queue was created by name")
try:
    consumers.create(RID, account_id=ACCOUNT, type="worker", script_name="w")
    check(False, "a second consumer: an error")
except cf.ConflictError as e:
    check(e.status_code == 409, "a second consumer: 409")
listed = [c for c in consumers.list(RID, account_id=ACCOUNT)]
check(len(listed) == 1 and listed[0].consumer_id == CID, "consumers.list: the one consumer")
raw_clist = consumers.with_raw_response.list(RID, account_id=ACCOUNT)
clist = envelope(raw_clist, "consumers.list")
check(clist == [consumer], f"consumers.list: the consumer as created {clist}")
got = envelope(consumers.with_raw_response.get(CID, account_id=ACCOUNT, queue_id=RID), "consumers.get")
check(got == consumer, "consumers.get: the consumer as created")
# HTTP pull works now, with the consumer's settings (batch 10, a 60 s lease)
messages.push(RID, account_id=ACCOUNT, body="resource", content_type="text", delay_seconds=0)
pulled = messages.pull(RID, account_id=ACCOUNT).messages
check(len(pulled) == 1 and pulled[0].body == "resource", "pull after consumers.create: served")
raw_cupdate = consumers.with_raw_response.update(CID, account_id=ACCOUNT, queue_id=RID, type="http_pull", settings={"batch_size": 3})
cupdated = envelope(raw_cupdate, "consumers.update")
check_pull_consumer(cupdated, "consumers.update", "sdk-renamed")
check(cupdated.get("consumer_id") == CID and cupdated.get("dead_letter_queue") == "", "consumers.update: same id, configuration replaced")
check(cupdated.get("settings") == {"batch_size": 3, "max_retries": 3, "retry_delay": 0, "visibility_timeout_ms": 30000}, f"consumers.update: {cupdated.get('settings')}")
raw_cdelete = consumers.with_raw_response.delete(CID, account_id=ACCOUNT, queue_id=RID)
cdeleted = json.loads(raw_cdelete.http_response.text)
check(cdeleted == {"success": True, "errors": [], "messages": [], "result": None}, f"consumers.delete: {cdeleted}")
check(raw_cdelete.parse().success is True, "consumers.delete: SDK model parses")
try:
    messages.pull(RID, account_id=ACCOUNT)
    check(False, "pull after consumers.delete: an error")
except cf.APIStatusError as e:
    check(e.status_code == 405, f"pull after consumers.delete: 405, got {e.status_code}")

# delete the queue: gone, messages included
raw_delete = queues.with_raw_response.delete(RID, account_id=ACCOUNT)
deleted = json.loads(raw_delete.http_response.text)
check(deleted == {"success": True, "errors": [], "messages": [], "result": None}, f"queues.delete: {deleted}")
check(raw_delete.parse().success is True, "queues.delete: SDK model parses")
for call, name in (
    (lambda: queues.get(RID, account_id=ACCOUNT), "queues.get"),
    (lambda: client.queues.get_metrics(RID, account_id=ACCOUNT), "get_metrics"),
    (lambda: messages.push(RID, account_id=ACCOUNT, body="x", content_type="text"), "push"),
):
    try:
        call()
        check(False, f"{name} after queues.delete: an error")
    except cf.NotFoundError as e:
        body = e.body if isinstance(e.body, dict) else {}
        check((body.get("errors") or [{}])[0].get("code") == 10104, f"{name} after queues.delete: 404/10104")

# Event subscriptions (SDK: queues.subscriptions.create/list/get/update/delete):
# account resources, each into a queue; on queues of their own.
import itertools
import re
import time

SUBSCRIPTION_KEYS = {"id", "name", "enabled", "source", "destination", "events", "created_at", "modified_at"}
LIST_KEYS = {"success", "errors", "messages", "result", "result_info"}
RESULT_INFO_KEYS = {"count", "page", "per_page", "total_count", "total_pages"}
MS_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
AI_SOURCE = {"type": "workersAi.model", "model_name": "@cf/meta/llama-3.1-8b-instruct"}
AI_EVENTS = ["batch.queued", "batch.succeeded", "batch.failed"]
KV_EVENTS = ["namespace.created", "namespace.deleted"]
WF_SOURCE = {"type": "workflows.workflow", "workflow_name": "sdk-flow"}
WF_EVENTS = ["instance.queued", "instance.completed"]
subscriptions = queues.subscriptions


def to_queue(queue_id):
    return {"type": "queues.queue", "queue_id": queue_id}


def stamp(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def check_subscription(result, name, source, queue_id, events):
    check(set(result) == SUBSCRIPTION_KEYS, f"{name}: subscription keys {sorted(result)}")
    check(is_hex32(result.get("id")), f"{name}: a 32-hex id {result.get('id')!r}")
    check(isinstance(result.get("name"), str) and result["name"], f"{name}: a name {result.get('name')!r}")
    check(isinstance(result.get("enabled"), bool), f"{name}: enabled a boolean {result.get('enabled')!r}")
    check(result.get("source") == source, f"{name}: source {result.get('source')}")
    check(result.get("destination") == to_queue(queue_id), f"{name}: destination {result.get('destination')}")
    check(result.get("events") == events, f"{name}: events {result.get('events')}")
    for key in ("created_at", "modified_at"):
        check(isinstance(result.get(key), str) and MS_STAMP.match(result[key]) is not None, f"{name}: {key} RFC 3339 with ms and Z {result.get(key)!r}")


def error_code(error):
    body = error.body if isinstance(error.body, dict) else {}
    return (body.get("errors") or [{}])[0].get("code")


def listed_ids(name, **query):
    """The ids of every page the SDK iterates, at most 20 (an endless list stops there)."""
    ids = [s.id for s in itertools.islice(subscriptions.list(account_id=ACCOUNT, **query), 20)]
    check(len(ids) < 20, f"{name}: the SDK's pages end")
    return ids


def raw_list(name, **query):
    """The raw JSON of one list page, its envelope and result_info keys checked."""
    body = json.loads(subscriptions.with_raw_response.list(account_id=ACCOUNT, **query).http_response.text)
    check(set(body) == LIST_KEYS, f"{name}: envelope keys {sorted(body)}")
    check(body.get("success") is True and body.get("errors") == [] and body.get("messages") == [], f"{name}: success envelope")
    check(set(body.get("result_info", {})) == RESULT_INFO_KEYS, f"{name}: result_info keys {sorted(body.get('result_info', {}))}")
    return body


SQ = envelope(queues.with_raw_response.create(account_id=ACCOUNT, queue_name="sdk-subs"), "subscriptions: queue").get("queue_id", "")
SQB = envelope(queues.with_raw_response.create(account_id=ACCOUNT, queue_name="sdk-subs-b"), "subscriptions: second queue").get("queue_id", "")
check(listed_ids("subscriptions.list before any") == [], "subscriptions.list: none before any is created")

# create: a Workers AI model's, named and enabled by default
raw_ai = subscriptions.with_raw_response.create(account_id=ACCOUNT, source=AI_SOURCE, destination=to_queue(SQ), events=AI_EVENTS)
ai = envelope(raw_ai, "subscriptions.create")
check_subscription(ai, "subscriptions.create", AI_SOURCE, SQ, AI_EVENTS)
check(ai.get("name") == "sdk-subs workersAi.model", f"subscriptions.create: default name, the queue's and the source type {ai.get('name')!r}")
check(ai.get("enabled") is True, "subscriptions.create: enabled by default")
check(ai.get("created_at") == ai.get("modified_at"), "subscriptions.create: modified_at is created_at")
AI_ID = ai.get("id", "")
model = raw_ai.parse()
check(model is not None and model.id == AI_ID and model.name == ai.get("name"), "subscriptions.create: SDK model parses")
check(model is not None and getattr(model.source, "ai_model_name", None) == AI_SOURCE["model_name"], "subscriptions.create: SDK reads model_name as ai_model_name")
check(model is not None and model.source.type == "workersAi.model" and model.destination.queue_id == SQ, "subscriptions.create: SDK model's source and destination")
check(model is not None and isinstance(model.created_at, datetime) and model.created_at == stamp(ai["created_at"]), "subscriptions.create: SDK reads created_at as a datetime")
check(model is not None and isinstance(model.modified_at, datetime) and model.events == AI_EVENTS, "subscriptions.create: SDK reads modified_at and events")

# create: KV, named, disabled (a few ms later: creation order shows in created_at)
time.sleep(0.01)
raw_kv = subscriptions.with_raw_response.create(
    account_id=ACCOUNT, name="kv-changes", enabled=False, source={"type": "kv"}, destination=to_queue(SQ), events=KV_EVENTS
)
kv = envelope(raw_kv, "subscriptions.create kv")
check_subscription(kv, "subscriptions.create kv", {"type": "kv"}, SQ, KV_EVENTS)
check(kv.get("name") == "kv-changes" and kv.get("enabled") is False, f"subscriptions.create kv: name and enabled as sent {kv.get('name')!r} {kv.get('enabled')!r}")
check(kv.get("id") != AI_ID, "subscriptions.create kv: a new id")
KV_ID = kv.get("id", "")
model = raw_kv.parse()
check(model is not None and model.enabled is False and model.source.type == "kv", "subscriptions.create kv: SDK model parses")

# create: a workflow's, into the second queue
time.sleep(0.01)
wf = envelope(
    subscriptions.with_raw_response.create(account_id=ACCOUNT, source=WF_SOURCE, destination=to_queue(SQB), events=WF_EVENTS),
    "subscriptions.create workflow",
)
check_subscription(wf, "subscriptions.create workflow", WF_SOURCE, SQB, WF_EVENTS)
check(wf.get("name") == "sdk-subs-b workflows.workflow", f"subscriptions.create workflow: default name {wf.get('name')!r}")
WF_ID = wf.get("id", "")
check(stamp(ai["created_at"]) < stamp(kv["created_at"]) < stamp(wf["created_at"]), "subscriptions.create: created_at in creation order")

# list: by name by default, every field as created, result_info exact
body = raw_list("subscriptions.list")
check(body.get("result") == [kv, ai, wf], f"subscriptions.list: the three as created, by name {[s.get('name') for s in body.get('result', [])]}")
check(body.get("result_info") == {"count": 3, "page": 1, "per_page": 20, "total_count": 3, "total_pages": 1}, f"subscriptions.list: result_info {body.get('result_info')}")
parsed = subscriptions.with_raw_response.list(account_id=ACCOUNT).parse()
check([s.id for s in parsed.result] == [KV_ID, AI_ID, WF_ID], "subscriptions.list: SDK page parses")
check(parsed.result_info is not None and parsed.result_info.total_count == 3, "subscriptions.list: SDK reads result_info")
check(getattr(parsed.result[1].source, "ai_model_name", None) == AI_SOURCE["model_name"], "subscriptions.list: SDK reads ai_model_name")
body = raw_list("subscriptions.list page 2 of 2", page=2, per_page=2)
check([s.get("id") for s in body.get("result", [])] == [WF_ID], "subscriptions.list page 2 of 2: the last one")
check(body.get("result_info") == {"count": 1, "page": 2, "per_page": 2, "total_count": 3, "total_pages": 2}, f"subscriptions.list page 2 of 2: result_info {body.get('result_info')}")
body = raw_list("subscriptions.list past the end", page=4, per_page=1)
check(body.get("result") == [], f"subscriptions.list past the end: empty {body.get('result')}")
check(body.get("result_info") == {"count": 0, "page": 4, "per_page": 1, "total_count": 3, "total_pages": 3}, f"subscriptions.list past the end: result_info {body.get('result_info')}")
check(listed_ids("subscriptions.list per_page=1", per_page=1) == [KV_ID, AI_ID, WF_ID], "subscriptions.list per_page=1: auto-pagination yields all three")
check(listed_ids("subscriptions.list by queue", extra_query={"queue_id": SQ}) == [KV_ID, AI_ID], "subscriptions.list by queue: the first queue's two")
check(listed_ids("subscriptions.list by second queue", extra_query={"queue_id": SQB}) == [WF_ID], "subscriptions.list by queue: the second queue's one")
body = raw_list("subscriptions.list by queue raw", extra_query={"queue_id": SQ})
check(body.get("result_info", {}).get("total_count") == 2 and body.get("result_info", {}).get("count") == 2, f"subscriptions.list by queue: result_info {body.get('result_info')}")
check(listed_ids("subscriptions.list created_at asc", order="created_at", direction="asc") == [AI_ID, KV_ID, WF_ID], "subscriptions.list order=created_at: creation order")
check(listed_ids("subscriptions.list created_at desc", order="created_at", direction="desc") == [WF_ID, KV_ID, AI_ID], "subscriptions.list order=created_at desc: reverse creation order")
check(listed_ids("subscriptions.list name desc", direction="desc") == [WF_ID, AI_ID, KV_ID], "subscriptions.list direction=desc: by name, reversed")
check(listed_ids("subscriptions.list enabled", order="enabled")[0] == KV_ID, "subscriptions.list order=enabled: the disabled one first")
check(listed_ids("subscriptions.list source", order="source") == [KV_ID, AI_ID, WF_ID], "subscriptions.list order=source: by source type")

# get: the subscription as created; an unknown id is 404/7003
raw_get = subscriptions.with_raw_response.get(AI_ID, account_id=ACCOUNT)
check(envelope(raw_get, "subscriptions.get") == ai, "subscriptions.get: the subscription as created")
model = raw_get.parse()
check(model is not None and model.id == AI_ID and getattr(model.source, "ai_model_name", None) == AI_SOURCE["model_name"], "subscriptions.get: SDK model parses")
try:
    subscriptions.get("0" * 32, account_id=ACCOUNT)
    check(False, "subscriptions.get unknown: an error")
except cf.NotFoundError as e:
    check(e.status_code == 404 and error_code(e) == 7003, f"subscriptions.get unknown: 404/7003 {e.body}")

# update: disable and rename; the source and events kept, modified_at moves
time.sleep(0.01)
raw_update = subscriptions.with_raw_response.update(AI_ID, account_id=ACCOUNT, enabled=False, name="sdk-subs ai")
updated = envelope(raw_update, "subscriptions.update")
check_subscription(updated, "subscriptions.update", AI_SOURCE, SQ, AI_EVENTS)
check(updated.get("id") == AI_ID and updated.get("name") == "sdk-subs ai" and updated.get("enabled") is False, f"subscriptions.update: renamed and disabled {updated.get('name')!r} {updated.get('enabled')!r}")
check(updated.get("created_at") == ai.get("created_at"), "subscriptions.update: created_at kept")
check(stamp(updated["modified_at"]) >= stamp(ai["created_at"]), "subscriptions.update: modified_at >= created_at")
check(stamp(updated["modified_at"]) > stamp(ai["modified_at"]), f"subscriptions.update: modified_at moved {updated.get('modified_at')}")
model = raw_update.parse()
check(model is not None and model.enabled is False and model.name == "sdk-subs ai" and isinstance(model.modified_at, datetime), "subscriptions.update: SDK model parses")
check(envelope(subscriptions.with_raw_response.get(AI_ID, account_id=ACCOUNT), "subscriptions.get after update") == updated, "subscriptions.update: get reads the change")
time.sleep(0.01)
same = envelope(subscriptions.with_raw_response.update(AI_ID, account_id=ACCOUNT, enabled=False, name="sdk-subs ai"), "subscriptions.update unchanged")
check(same == updated, f"subscriptions.update changing nothing: modified_at kept {same.get('modified_at')} {updated.get('modified_at')}")
events = envelope(subscriptions.with_raw_response.update(AI_ID, account_id=ACCOUNT, events=["batch.failed"]), "subscriptions.update events")
check(events.get("events") == ["batch.failed"] and events.get("name") == "sdk-subs ai" and events.get("enabled") is False, f"subscriptions.update events: only events changed {events}")
AI_EVENTS = ["batch.failed"]

# update: a new destination moves the subscription to the other queue
moved = envelope(subscriptions.with_raw_response.update(KV_ID, account_id=ACCOUNT, destination=to_queue(SQB)), "subscriptions.update destination")
check_subscription(moved, "subscriptions.update destination", {"type": "kv"}, SQB, KV_EVENTS)
check(moved.get("id") == KV_ID and moved.get("name") == "kv-changes" and moved.get("enabled") is False, "subscriptions.update destination: the rest kept")
check(listed_ids("subscriptions.list by queue after move", extra_query={"queue_id": SQ}) == [AI_ID], "subscriptions.update destination: gone from the first queue's list")
check(listed_ids("subscriptions.list by second queue after move", extra_query={"queue_id": SQB}) == [KV_ID, WF_ID], "subscriptions.update destination: in the second queue's list")
try:
    subscriptions.update(KV_ID, account_id=ACCOUNT, destination=to_queue("f" * 32))
    check(False, "subscriptions.update to an unknown queue: an error")
except cf.NotFoundError as e:
    check(e.status_code == 404 and error_code(e) == 10104, f"subscriptions.update to an unknown queue: 404/10104 {e.body}")
check(envelope(subscriptions.with_raw_response.get(KV_ID, account_id=ACCOUNT), "subscriptions.get after refused update") == moved, "subscriptions.update to an unknown queue: nothing changed")
try:
    subscriptions.update("0" * 32, account_id=ACCOUNT, enabled=True)
    check(False, "subscriptions.update unknown: an error")
except cf.NotFoundError as e:
    check(e.status_code == 404 and error_code(e) == 7003, f"subscriptions.update unknown: 404/7003 {e.body}")

# refusals: nothing created by any
try:
    subscriptions.create(account_id=ACCOUNT, source={"type": "r2"}, destination=to_queue(SQ), events=[])
    check(False, "subscriptions.create without events: an error")
except cf.BadRequestError as e:
    check(failure_code(e, "subscriptions.create without events", "/events") == 10207, "subscriptions.create without events: 10207")
try:
    subscriptions.create(account_id=ACCOUNT, source={"type": "workersAi.model"}, destination=to_queue(SQ), events=AI_EVENTS)
    check(False, "subscriptions.create without model_name: an error")
except cf.BadRequestError as e:
    check(failure_code(e, "subscriptions.create without model_name", "/source/model_name") == 10207, "subscriptions.create without model_name: 10207")
try:
    subscriptions.create(account_id=ACCOUNT, source={"type": "r2"}, destination=to_queue("f" * 32), events=["bucket.created"])
    check(False, "subscriptions.create into an unknown queue: an error")
except cf.NotFoundError as e:
    check(e.status_code == 404 and error_code(e) == 10104, f"subscriptions.create into an unknown queue: 404/10104 {e.body}")
try:
    subscriptions.create(account_id=ACCOUNT, source=dict(AI_SOURCE), destination=to_queue(SQB), events=AI_EVENTS)
    check(False, "subscriptions.create to a source taken: an error")
except cf.APIStatusError as e:
    check(e.status_code == 405 and error_code(e) == 10026, f"subscriptions.create to a source taken: 405/10026 {e.status_code} {e.body}")
check(listed_ids("subscriptions.list after refusals") == [KV_ID, AI_ID, WF_ID], "subscriptions.create refused: nothing created")
other = subscriptions.create(
    account_id=ACCOUNT, source={"type": "workersAi.model", "model_name": "@cf/other"}, destination=to_queue(SQB), events=AI_EVENTS
)
check(other is not None and other.id not in (AI_ID, KV_ID, WF_ID) and other.source.ai_model_name == "@cf/other", "subscriptions.create: another model of the same type is another source")

# delete: answers the subscription as it was; then it is gone
raw_delete = subscriptions.with_raw_response.delete(other.id, account_id=ACCOUNT)
check(envelope(raw_delete, "subscriptions.delete other").get("id") == other.id, "subscriptions.delete: the other model's")
raw_delete = subscriptions.with_raw_response.delete(WF_ID, account_id=ACCOUNT)
check(envelope(raw_delete, "subscriptions.delete") == wf, "subscriptions.delete: the subscription as it was")
model = raw_delete.parse()
check(model is not None and model.id == WF_ID and model.source.type == "workflows.workflow", "subscriptions.delete: SDK model parses")
for call, name in (
    (lambda: subscriptions.get(WF_ID, account_id=ACCOUNT), "subscriptions.get"),
    (lambda: subscriptions.delete(WF_ID, account_id=ACCOUNT), "subscriptions.delete"),
):
    try:
        call()
        check(False, f"{name} after subscriptions.delete: an error")
    except cf.NotFoundError as e:
        check(e.status_code == 404 and error_code(e) == 7003, f"{name} after subscriptions.delete: 404/7003 {e.body}")
check(listed_ids("subscriptions.list after delete") == [KV_ID, AI_ID], "subscriptions.delete: gone from the list")
again = subscriptions.create(account_id=ACCOUNT, source=WF_SOURCE, destination=to_queue(SQ), events=WF_EVENTS)
check(again is not None and again.id != WF_ID and again.destination.queue_id == SQ, "subscriptions.delete: the source is free again")

# deleting a queue deletes the subscriptions into it, and frees their sources
queues.delete(SQB, account_id=ACCOUNT)
try:
    subscriptions.get(KV_ID, account_id=ACCOUNT)
    check(False, "subscriptions.get after its queue's deletion: an error")
except cf.NotFoundError as e:
    check(e.status_code == 404 and error_code(e) == 7003, f"subscriptions.get after its queue's deletion: 404/7003 {e.body}")
check(listed_ids("subscriptions.list after queue delete") == [AI_ID, again.id], "queues.delete: the other queue's subscriptions kept")
freed = subscriptions.create(account_id=ACCOUNT, source={"type": "kv"}, destination=to_queue(SQ), events=KV_EVENTS)
check(freed is not None and freed.id != KV_ID and freed.name == "sdk-subs kv", "queues.delete: the deleted subscription's source is free")
queues.delete(SQ, account_id=ACCOUNT)
for sid in (AI_ID, again.id, freed.id):
    try:
        subscriptions.get(sid, account_id=ACCOUNT)
        check(False, "subscriptions.get after the last queue's deletion: an error")
    except cf.NotFoundError as e:
        check(e.status_code == 404, f"subscriptions.get after the last queue's deletion: 404 {e.status_code}")
body = raw_list("subscriptions.list at the end")
check(body.get("result") == [] and body.get("result_info", {}).get("total_count") == 0, f"subscriptions.list: none left {body}")

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
