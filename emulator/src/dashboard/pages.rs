//! The dashboard's pages as HTML, from plain values: no state, no I/O, so
//! that each page's text can be tested and its cost measured alone.

use std::fmt::Write as _;

use crate::catalogue;
use crate::request_log::Entry;
use crate::state::BodyKind;
use crate::state::view::{MessageRow, QueueRow, SortBy, Standing};
use crate::state::{ConsumerKind, QueueRecord, SubscriptionRecord};

/// Rows a page of a list shows.
pub(crate) const PAGE_ROWS: usize = 100;

/// Escapes text for HTML content and quoted attributes.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a query parameter's value or a path segment.
pub(crate) fn url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A whole page: the layout around `main`.
pub(crate) fn page(title: &str, kind: &str, main: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · cf-queues emulator</title>
<link rel="stylesheet" href="/_dashboard/assets/dashboard.css">
</head>
<body data-page="{kind}">
<header><nav aria-label="Dashboard"><span class="brand">cf-queues emulator</span> <a href="/_dashboard/">Queues</a> <a href="/_dashboard/requests">Requests</a></nav></header>
<main>
<h1>{title}</h1>
{main}
</main>
<script src="/_dashboard/assets/dashboard.js"></script>
</body>
</html>
"#,
        title = esc(title),
    )
}

/// What an action did, shown once at the top of the page it led to.
pub(crate) fn note(text: Option<&str>) -> String {
    text.map_or_else(String::new, |text| {
        format!(r#"<p class="done" role="status">{}</p>"#, esc(text))
    })
}

/// The form token every form carries.
fn token_field(token: &str) -> String {
    format!(
        r#"<input type="hidden" name="token" value="{}">"#,
        esc(token)
    )
}

/// The emulator's knobs as the account page shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Knobs {
    pub round_trip_ms: u64,
    pub rate_limits: bool,
}

/// A page that only says why it is not shown.
pub(crate) fn refused(why: &str) -> String {
    page("Not allowed", "refused", &format!("<p>{}</p>", esc(why)))
}

/// How long ago `ms` was, before `now_ms`: `3m 12s`.
pub(crate) fn age(ms: u64, now_ms: u64) -> String {
    if ms == 0 {
        return "-".into();
    }
    span(now_ms.saturating_sub(ms))
}

/// A duration in ms for people: `850 ms`, `12s`, `3m 12s`, `2h 5m`.
pub(crate) fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms} ms"),
        1..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// Bytes for people (1 KB = 1000 bytes, as Cloudflare's limits count).
pub(crate) fn bytes(n: u64) -> String {
    match n {
        0..1000 => format!("{n} B"),
        1000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

/// The account page's columns: (key, heading, numeric).
pub(crate) const COLUMNS: [(&str, &str, bool); 9] = [
    ("name", "Name", false),
    ("id", "Id", false),
    ("available", "Available", true),
    ("delayed", "Delayed", true),
    ("leased", "Leased", true),
    ("bytes", "Backlog bytes", true),
    ("oldest", "Oldest message", true),
    ("consumer", "Consumer", false),
    ("delivery", "Delivery", false),
];

/// The account page's query: filter, sort and page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListQuery {
    pub filter: String,
    pub sort: String,
    pub descending: bool,
    /// From 1.
    pub page: usize,
}

impl ListQuery {
    fn link(&self, sort: &str, descending: bool, page: usize) -> String {
        let mut link = format!(
            "/_dashboard/?sort={}&order={}",
            url(sort),
            if descending { "desc" } else { "asc" }
        );
        if !self.filter.is_empty() {
            let _ = write!(link, "&q={}", url(&self.filter));
        }
        if page > 1 {
            let _ = write!(link, "&page={page}");
        }
        link
    }
}

impl ListQuery {
    /// What the rows are sorted by.
    pub(crate) fn sort_by(&self) -> SortBy {
        match self.sort.as_str() {
            "id" => SortBy::Id,
            "available" => SortBy::Available,
            "delayed" => SortBy::Delayed,
            "leased" => SortBy::Leased,
            "bytes" => SortBy::Bytes,
            "oldest" => SortBy::Oldest,
            "consumer" => SortBy::Consumer,
            "delivery" => SortBy::Delivery,
            _ => SortBy::Name,
        }
    }
}

/// The account page's table and its pager (also served alone, for the
/// script that refreshes it).
pub(crate) fn queue_table(
    rows: &[QueueRow],
    total: usize,
    query: &ListQuery,
    now_ms: u64,
) -> String {
    let mut out = String::with_capacity(512 + rows.len() * 400);
    let pages = total.div_ceil(PAGE_ROWS).max(1);
    let _ = write!(
        out,
        r#"<p class="summary" id="queue-count">{total} queue{s}{filtered}. Page {page} of {pages}.</p>"#,
        s = if total == 1 { "" } else { "s" },
        filtered = if query.filter.is_empty() {
            String::new()
        } else {
            format!(" named like “{}”", esc(&query.filter))
        },
        page = query.page.max(1),
    );
    out.push_str(r#"<div class="scroll" tabindex="0" role="region" aria-label="Queues"><table><caption class="sr">Queues of the local account</caption><thead><tr>"#);
    for (key, heading, numeric) in COLUMNS {
        let sorted = query.sort == key || (query.sort.is_empty() && key == "name");
        let descending = sorted && !query.descending;
        let aria = if sorted {
            if query.descending {
                r#" aria-sort="descending""#
            } else {
                r#" aria-sort="ascending""#
            }
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<th scope="col"{aria}{class}><a href="{link}">{heading}</a></th>"#,
            class = if numeric { r#" class="num""# } else { "" },
            link = esc(&query.link(key, descending, 1)),
        );
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        let _ = write!(
            out,
            r#"<tr><td><a href="/_dashboard/queues/{id_url}">{name}</a></td><td><code>{id}</code></td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td>{}</td><td>{}</td></tr>"#,
            r.available,
            r.delayed,
            r.leased,
            bytes(r.backlog_bytes),
            age(r.oldest_ms, now_ms),
            consumer_label(r.consumer),
            if r.paused { "paused" } else { "active" },
            id_url = url(&r.id),
            name = esc(&r.name),
            id = esc(&r.id),
        );
    }
    out.push_str("</tbody></table></div>");
    let page = query.page.max(1);
    out.push_str(r#"<nav class="pager" aria-label="Pages">"#);
    if page > 1 {
        let _ = write!(
            out,
            r#"<a href="{}">Previous page</a> "#,
            esc(&query.link(&query.sort, query.descending, page - 1))
        );
    }
    if page < pages {
        let _ = write!(
            out,
            r#"<a href="{}">Next page</a>"#,
            esc(&query.link(&query.sort, query.descending, page + 1))
        );
    }
    out.push_str("</nav>");
    out
}

fn consumer_label(consumer: &str) -> &'static str {
    match consumer {
        "http_pull" => "HTTP pull",
        "worker" => "Worker",
        _ => "none",
    }
}

/// The account page.
pub(crate) fn account(
    rows: &[QueueRow],
    total: usize,
    query: &ListQuery,
    now_ms: u64,
    token: &str,
    done: Option<&str>,
    knobs: Knobs,
) -> String {
    let main = format!(
        r#"{done}<form method="get" action="/_dashboard/" class="filter" role="search"><label for="q">Filter by name</label> <input id="q" name="q" type="search" value="{filter}"><input type="hidden" name="sort" value="{sort}"><input type="hidden" name="order" value="{order}"> <button type="submit">Filter</button></form>
<div id="queues" data-refresh="{refresh}">{table}</div>
<section aria-labelledby="create-title"><h2 id="create-title">Create a queue</h2>
<form method="post" action="/_dashboard/queues" class="filter">{token}<label for="new-name">Name</label> <input id="new-name" name="name" required> <button type="submit">Create</button></form></section>
<section aria-labelledby="knobs-title"><h2 id="knobs-title">The emulator</h2>
<form method="post" action="/_dashboard/emulator" class="filter">{token}<label for="round-trip">Round trip (ms)</label> <input id="round-trip" name="round_trip_ms" inputmode="numeric" size="6" value="{round_trip}"> <label for="rate-limits">Rate limits</label> <select id="rate-limits" name="rate_limits"><option value="off"{off}>off</option><option value="cloudflare"{on}>Cloudflare's</option></select> <button type="submit">Apply</button></form></section>"#,
        done = note(done),
        token = token_field(token),
        round_trip = knobs.round_trip_ms,
        off = if knobs.rate_limits { "" } else { " selected" },
        on = if knobs.rate_limits { " selected" } else { "" },
        filter = esc(&query.filter),
        sort = esc(&query.sort),
        order = if query.descending { "desc" } else { "asc" },
        refresh = esc(&format!(
            "{}&fragment=table",
            query.link(&query.sort, query.descending, query.page.max(1))
        )),
        table = queue_table(rows, total, query, now_ms),
    );
    page("Queues", "account", &main)
}

/// The queue page: its figures (updated by the script), its charts, its
/// settings and a page of its messages.
#[allow(clippy::too_many_arguments)] // One call site, the queue page's.
pub(crate) fn queue(
    record: &QueueRecord,
    row: &QueueRow,
    messages: &[MessageRow],
    message_count: u64,
    page_number: usize,
    now_ms: u64,
    token: &str,
    done: Option<&str>,
    sources: &[(String, String)],
    subscriptions: &[SubscriptionRecord],
) -> String {
    let mut main = String::with_capacity(8192 + messages.len() * 700);
    let base = format!("/_dashboard/queues/{}", url(&record.id));
    let token = token_field(token);
    main.push_str(&note(done));
    let _ = write!(
        main,
        r#"<p class="summary"><code>{id}</code> · consumer: {consumer} · delivery {delivery}</p>
<dl class="figures" id="figures" data-series="/_dashboard/api/queues/{id_url}/series">
<div><dt>Available</dt><dd id="available">{available}</dd></div>
<div><dt>Delayed</dt><dd id="delayed">{delayed}</dd></div>
<div><dt>Leased</dt><dd id="leased">{leased}</dd></div>
<div><dt>Backlog bytes</dt><dd id="bytes">{bytes}</dd></div>
<div><dt>Oldest message</dt><dd id="oldest">{oldest}</dd></div>
</dl>
<section aria-labelledby="charts-title"><h2 id="charts-title">The last minutes</h2>
<p class="note">Sampled every second while this page is open, for up to 10 minutes.</p>
<div class="charts">
<figure><figcaption>Backlog (messages)</figcaption><svg id="chart-count" role="img" aria-label="Backlog in messages over the last minutes" viewBox="0 0 300 100" preserveAspectRatio="none"></svg></figure>
<figure><figcaption>Backlog (bytes)</figcaption><svg id="chart-bytes" role="img" aria-label="Backlog in bytes over the last minutes" viewBox="0 0 300 100" preserveAspectRatio="none"></svg></figure>
<figure><figcaption>Messages a second: <span class="k pushed">pushed</span> <span class="k pulled">pulled</span> <span class="k acked">acked</span> <span class="k retried">retried</span> <span class="k dead">dead-lettered</span></figcaption><svg id="chart-rates" role="img" aria-label="Messages pushed, pulled, acked, retried and dead-lettered a second" viewBox="0 0 300 100" preserveAspectRatio="none"></svg></figure>
</div></section>"#,
        id = esc(&record.id),
        id_url = url(&record.id),
        consumer = consumer_label(row.consumer),
        delivery = if row.paused { "paused" } else { "active" },
        available = row.available,
        delayed = row.delayed,
        leased = row.leased,
        bytes = bytes(row.backlog_bytes),
        oldest = age(row.oldest_ms, now_ms),
    );
    let _ = write!(
        main,
        r#"<section aria-labelledby="send-title"><h2 id="send-title">Send</h2>
<form method="post" action="{base}/send" class="stack">{token}
<label for="send-body">Body (<code>{{n}}</code> numbers each generated message)</label>
<textarea id="send-body" name="body" rows="3" required></textarea>
<div class="filter"><label for="send-type">Content type</label> <select id="send-type" name="content_type"><option value="text">text</option><option value="json">JSON</option></select>
<label for="send-delay">Delay (s)</label> <input id="send-delay" name="delay" inputmode="numeric" size="6">
<label for="send-count">How many</label> <input id="send-count" name="count" inputmode="numeric" size="6" value="1">
<button type="submit">Send</button></div></form></section>"#
    );
    main.push_str(&settings(record, &base, &token));
    main.push_str(&event_subscriptions(subscriptions, &base, &token));
    let _ = write!(
        main,
        r#"<section aria-labelledby="messages-title"><h2 id="messages-title">Messages</h2><p class="note">Listed without leasing them or using an attempt, oldest first: {message_count} in all.</p>
<form method="post" action="{base}/messages" id="messages-form">{token}"#
    );
    if messages.is_empty() {
        main.push_str("<p>No message on this page.</p>");
    }
    main.push_str(r#"<ol class="messages">"#);
    for m in messages {
        main.push_str(&message(m, &base, now_ms));
    }
    main.push_str("</ol>");
    main.push_str(r#"<div class="filter actions"><button type="submit" name="action" value="delete">Delete selected</button> <label for="retry-delay">Retry delay (s)</label> <input id="retry-delay" name="delay" inputmode="numeric" size="6" value="0"> <button type="submit" name="action" value="retry">Retry selected</button></div>"#);
    if !sources.is_empty() {
        main.push_str(r#"<fieldset class="filter"><legend>Dead-letter redrive: move messages back to the queue that sent them</legend><label for="redrive-to">To</label> <select id="redrive-to" name="to">"#);
        for (id, name) in sources {
            let _ = write!(
                main,
                r#"<option value="{}">{}</option>"#,
                esc(id),
                esc(name)
            );
        }
        main.push_str(r#"</select> <button type="submit" name="action" value="redrive">Move selected back</button> <button type="submit" name="action" value="redrive_all">Move all back</button></fieldset>"#);
    }
    main.push_str("</form>");
    let pages = (message_count as usize).div_ceil(PAGE_ROWS).max(1);
    main.push_str(r#"<nav class="pager" aria-label="Pages of messages">"#);
    if page_number > 1 {
        let _ = write!(
            main,
            r#"<a href="{base}?page={}">Previous page</a> "#,
            page_number - 1
        );
    }
    if page_number < pages {
        let _ = write!(
            main,
            r#"<a href="{base}?page={}">Next page</a>"#,
            page_number + 1
        );
    }
    main.push_str("</nav></section>");
    let _ = write!(
        main,
        r#"<section aria-labelledby="danger-title"><h2 id="danger-title">Purge or delete</h2>
<form method="post" action="{base}/purge" class="filter">{token}<label for="purge-confirm">Type <strong>{name}</strong> to purge every message</label> <input id="purge-confirm" name="confirm" autocomplete="off"> <button type="submit" class="danger">Purge</button></form>
<form method="post" action="{base}/delete" class="filter">{token}<label for="delete-confirm">Type <strong>{name}</strong> to delete the queue</label> <input id="delete-confirm" name="confirm" autocomplete="off"> <button type="submit" class="danger">Delete queue</button></form></section>"#,
        name = esc(&record.name),
    );
    page(&record.name, "queue", &main)
}

/// The queue's event subscriptions, and a form that emits an event of a
/// source an enabled one subscribes to.
fn event_subscriptions(subscriptions: &[SubscriptionRecord], base: &str, token: &str) -> String {
    let mut out = String::from(
        r#"<section aria-labelledby="subscriptions-title"><h2 id="subscriptions-title">Event subscriptions</h2>"#,
    );
    if subscriptions.is_empty() {
        out.push_str("<p>None: no other product's events come into this queue. Create one with <code>cfq subscriptions create</code> or <code>wrangler queues subscription create</code>.</p></section>");
        return out;
    }
    out.push_str(r#"<div class="scroll" tabindex="0" role="region" aria-label="Event subscriptions"><table><caption class="sr">The event subscriptions into this queue</caption><thead><tr><th scope="col">Name</th><th scope="col">Source</th><th scope="col">Events</th><th scope="col">Enabled</th></tr></thead><tbody>"#);
    let mut options = String::new();
    for s in subscriptions {
        let source = s
            .source
            .iter()
            .map(|(k, v)| {
                if k == "type" {
                    v.clone()
                } else {
                    format!("{k} {v}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            out,
            r#"<tr><td>{name}<br><code>{id}</code></td><td>{source}</td><td>{events}</td><td>{enabled}</td></tr>"#,
            name = esc(&s.name),
            id = esc(&s.id),
            source = esc(&source),
            events = esc(&s.events.join(", ")),
            enabled = if s.enabled { "yes" } else { "no" },
        );
        if !s.enabled {
            continue;
        }
        for event in &s.events {
            if let Ok(documented) = catalogue::find(s.source_type(), event) {
                let _ = write!(
                    options,
                    r#"<option value="{}">{}</option>"#,
                    esc(&format!("{}|{event}", s.id)),
                    esc(&documented.message_type()),
                );
            }
        }
    }
    out.push_str("</tbody></table></div>");
    if options.is_empty() {
        out.push_str("<p>No enabled subscription names an event Cloudflare documents: none can be emitted.</p></section>");
        return out;
    }
    let _ = write!(
        out,
        r#"<form method="post" action="{base}/emit" class="stack" id="emit-form">{token}<h3>Emit an event</h3>
<p class="note">One message in Cloudflare's documented shape into the queue of every enabled subscription to the source whose events list it, this one included.</p>
<div class="filter"><label for="emit-event">Event</label> <select id="emit-event" name="event">{options}</select></div>
<label for="emit-payload">Payload (a JSON object; empty: the documented example's)</label>
<textarea id="emit-payload" name="payload" rows="3"></textarea>
<div class="filter"><button type="submit">Emit</button></div></form></section>"#
    );
    out
}

fn settings(record: &QueueRecord, base: &str, token: &str) -> String {
    let s = &record.settings;
    let pull = match record.consumer.as_ref().map(|c| &c.spec.kind) {
        Some(ConsumerKind::HttpPull(p)) => Some(*p),
        _ => None,
    };
    let defaults = pull.unwrap_or_default();
    let dlq = record
        .consumer
        .as_ref()
        .and_then(|c| c.spec.dead_letter_queue.as_deref())
        .unwrap_or("");
    let forms = format!(
        r#"<div class="forms">
<form method="post" action="{base}/settings" class="stack">{token}<h3>The queue</h3>
<label for="delivery-delay">Delivery delay (s)</label> <input id="delivery-delay" name="delivery_delay" inputmode="numeric" value="{delay}">
<label for="retention">Retention (s)</label> <input id="retention" name="retention" inputmode="numeric" value="{retention}">
<button type="submit">Save</button></form>
<form method="post" action="{base}/delivery" class="stack">{token}<h3>Delivery</h3><p>{delivery_state}</p>
<button type="submit" name="action" value="{delivery_action}">{delivery_button}</button></form>
<form method="post" action="{base}/consumer" class="stack">{token}<h3>HTTP pull</h3>
<label for="batch-size">Batch size</label> <input id="batch-size" name="batch_size" inputmode="numeric" value="{batch}">
<label for="max-retries">Max retries</label> <input id="max-retries" name="max_retries" inputmode="numeric" value="{retries}">
<label for="retry-delay-s">Retry delay (s)</label> <input id="retry-delay-s" name="retry_delay" inputmode="numeric" value="{retry_delay}">
<label for="visibility">Visibility timeout (ms)</label> <input id="visibility" name="visibility_timeout_ms" inputmode="numeric" value="{visibility}">
<label for="dlq">Dead-letter queue</label> <input id="dlq" name="dead_letter_queue" value="{dlq}">
<div><button type="submit" name="action" value="save">{pull_button}</button>{disable}</div></form>
</div>"#,
        delay = s.delivery_delay_s,
        retention = s.retention_s,
        delivery_state = if s.delivery_paused {
            "Paused: pulls are refused."
        } else {
            "Active."
        },
        delivery_action = if s.delivery_paused { "resume" } else { "pause" },
        delivery_button = if s.delivery_paused {
            "Resume delivery"
        } else {
            "Pause delivery"
        },
        batch = defaults.batch_size,
        retries = defaults.max_retries,
        retry_delay = defaults.retry_delay_s,
        visibility = defaults.visibility_timeout_ms,
        dlq = esc(dlq),
        pull_button = if pull.is_some() {
            "Save"
        } else {
            "Enable HTTP pull"
        },
        disable = if record.consumer.is_some() {
            r#" <button type="submit" name="action" value="disable" class="danger">Disable</button>"#
        } else {
            ""
        },
    );
    let mut out = format!(
        r#"<section aria-labelledby="settings-title"><h2 id="settings-title">Settings</h2><div class="scroll" tabindex="0" role="region" aria-label="Settings"><table><caption class="sr">The queue's and its consumer's settings</caption><tbody>
<tr><th scope="row">Delivery delay</th><td>{}s</td></tr>
<tr><th scope="row">Delivery</th><td>{}</td></tr>
<tr><th scope="row">Retention</th><td>{}</td></tr>"#,
        s.delivery_delay_s,
        if s.delivery_paused {
            "paused"
        } else {
            "active"
        },
        span(u64::from(s.retention_s) * 1000),
    );
    match &record.consumer {
        None => out.push_str(r#"<tr><th scope="row">Consumer</th><td>none</td></tr>"#),
        Some(consumer) => {
            let dlq = consumer.spec.dead_letter_queue.as_deref().unwrap_or("none");
            match &consumer.spec.kind {
                ConsumerKind::HttpPull(p) => {
                    let _ = write!(
                        out,
                        r#"<tr><th scope="row">Consumer</th><td>HTTP pull <code>{}</code></td></tr>
<tr><th scope="row">Batch size</th><td>{}</td></tr>
<tr><th scope="row">Max retries</th><td>{}</td></tr>
<tr><th scope="row">Retry delay</th><td>{}s</td></tr>
<tr><th scope="row">Visibility timeout</th><td>{}</td></tr>"#,
                        esc(&consumer.id),
                        p.batch_size,
                        p.max_retries,
                        p.retry_delay_s,
                        span(p.visibility_timeout_ms),
                    );
                }
                ConsumerKind::Worker {
                    script_name,
                    settings: w,
                    ..
                } => {
                    let _ = write!(
                        out,
                        r#"<tr><th scope="row">Consumer</th><td>Worker <code>{}</code> (script {})</td></tr>
<tr><th scope="row">Batch size</th><td>{}</td></tr>
<tr><th scope="row">Max retries</th><td>{}</td></tr>
<tr><th scope="row">Retry delay</th><td>{}s</td></tr>
<tr><th scope="row">Max wait</th><td>{}</td></tr>"#,
                        esc(&consumer.id),
                        esc(script_name),
                        w.batch_size,
                        w.max_retries,
                        w.retry_delay_s,
                        span(w.max_wait_time_ms),
                    );
                }
            }
            let _ = write!(
                out,
                r#"<tr><th scope="row">Dead-letter queue</th><td>{}</td></tr>"#,
                esc(dlq)
            );
        }
    }
    out.push_str("</tbody></table></div>");
    out.push_str(&forms);
    out.push_str("</section>");
    out
}

/// The most of a body a queue's list shows (a JSON body this small is
/// pretty-printed, up to four times as long): a page of 100 messages stays
/// within [`MAX_QUEUE_PAGE_BYTES`] however large and however nested the
/// bodies (a 120 KB JSON body of nested arrays pretty-prints to about
/// 15 MB).
pub(crate) const SHOWN_BODY_BYTES: usize = 1024;
/// The most of one body its own page shows pretty-printed; a larger one
/// is shown as it was sent.
pub(crate) const PRETTY_BODY_BYTES: usize = 16 * 1024;
/// A bound on one message of a queue's list (tested): its body at most
/// four times [`SHOWN_BODY_BYTES`], escaped (at most six bytes a
/// character), and its markup; a page of 100 stays within 2.7 MB.
#[cfg(test)]
pub(crate) const MAX_LISTED_MESSAGE_BYTES: usize = 4 * SHOWN_BODY_BYTES * 6 + 2048;
/// A bound on the requests page (tested): the log's entries, each path
/// escaped.
#[cfg(test)]
pub(crate) const MAX_REQUESTS_PAGE_BYTES: usize =
    crate::request_log::CAPACITY * (crate::request_log::MAX_PATH_BYTES * 6 + 1024) + 64 * 1024;

/// A body's text as a page shows it: its lines and tabs kept, every other
/// control character and bidirectional override written as an escape
/// (`\u{202e}`), as the client's errors show them: a body is the
/// network's text, and an override would make a line read as another.
fn printable(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            line.split('\t')
                .map(cf_queues::error::escape_controls)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A JSON body pretty-printed, when it is at most `up_to` bytes and its
/// pretty text at most four times that (nesting indents every line).
fn pretty(m: &MessageRow, up_to: usize) -> Option<String> {
    if m.kind != BodyKind::Json || m.body.len() > up_to {
        return None;
    }
    let value = serde_json::from_slice::<serde_json::Value>(&m.body).ok()?;
    serde_json::to_string_pretty(&value)
        .ok()
        .filter(|text| text.len() <= 4 * up_to)
}

/// A body's text as the list shows it: pretty, or at most
/// [`SHOWN_BODY_BYTES`] as it was sent; and whether that is all of it.
fn shown_body(m: &MessageRow) -> (String, bool) {
    if let Some(pretty) = pretty(m, SHOWN_BODY_BYTES) {
        return (pretty, true);
    }
    let raw = String::from_utf8_lossy(&m.body);
    (
        crate::request_log::cut(&raw, SHOWN_BODY_BYTES),
        raw.len() <= SHOWN_BODY_BYTES,
    )
}

/// The note for a body that is not text: its kind and size.
fn not_shown(m: &MessageRow) -> String {
    format!(
        r#"<p class="note">A {} body of {}: not shown.</p>"#,
        m.kind.as_str(),
        bytes(m.body.len() as u64)
    )
}

/// The page of one message's whole body: pretty up to
/// [`PRETTY_BODY_BYTES`], as it was sent past it (at most a message's
/// 128 KB, escaped).
pub(crate) fn body(record: &QueueRecord, m: &MessageRow) -> String {
    let back = format!("/_dashboard/queues/{}", url(&record.id));
    let shown = match m.kind {
        BodyKind::Bytes | BodyKind::V8 => not_shown(m),
        _ => {
            let text = pretty(m, PRETTY_BODY_BYTES)
                .unwrap_or_else(|| String::from_utf8_lossy(&m.body).into_owned());
            format!(r#"<pre class="body">{}</pre>"#, esc(&printable(&text)))
        }
    };
    let main = format!(
        r#"<p class="summary"><a href="{back}">{name}</a> · message <code>{id}</code> · {kind} · {size}</p>{shown}"#,
        name = esc(&record.name),
        id = esc(&m.id),
        kind = m.kind.as_str(),
        size = bytes(m.body.len() as u64),
    );
    page(&record.name, "body", &main)
}

fn message(m: &MessageRow, base: &str, now_ms: u64) -> String {
    let standing = match m.standing {
        Standing::Available => "available".to_owned(),
        Standing::Delayed(until) => format!("delayed for {}", span(until.saturating_sub(now_ms))),
        Standing::Leased(until) => {
            format!("leased for {} more", span(until.saturating_sub(now_ms)))
        }
    };
    let shown = match m.kind {
        BodyKind::Bytes | BodyKind::V8 => not_shown(m),
        _ => {
            let (text, whole) = shown_body(m);
            let more = if whole {
                String::new()
            } else {
                format!(
                    r#"<p class="note">The first {} of {}: <a href="{base}/messages/{seq}">the whole body</a>.</p>"#,
                    bytes(SHOWN_BODY_BYTES as u64),
                    bytes(m.body.len() as u64),
                    seq = m.seq,
                )
            };
            format!(
                r#"<pre class="body">{}</pre>{more}"#,
                esc(&printable(&text))
            )
        }
    };
    format!(
        r#"<li><input type="checkbox" name="m" value="{seq}" id="m-{seq}" aria-label="Select message {id}"> <details><summary><code>{id}</code> · {kind} · {size} · attempts {attempts} · {standing}</summary>{shown}<dl class="meta"><div><dt>Pushed</dt><dd>{pushed} ago</dd></div><div><dt>Content type</dt><dd>{kind}</dd></div><div><dt>Delay</dt><dd>{delay}</dd></div><div><dt>Attempts</dt><dd>{attempts}</dd></div><div><dt>Standing</dt><dd>{standing}</dd></div></dl></details></li>"#,
        id = esc(&m.id),
        seq = m.seq,
        kind = m.kind.as_str(),
        size = bytes(m.body.len() as u64),
        attempts = m.attempts,
        pushed = age(m.timestamp_ms, now_ms),
        delay = span(m.delay_ms),
    )
}

/// The request list, with its filter.
pub(crate) fn requests(entries: &[Entry], queue: &str, status: &str, now_ms: u64) -> String {
    let mut main = format!(
        r#"<form method="get" action="/_dashboard/requests" class="filter"><label for="rq">Queue id</label> <input id="rq" name="queue" value="{q}"> <label for="rs">Status</label> <input id="rs" name="status" inputmode="numeric" value="{s}" size="4"> <button type="submit">Filter</button></form>
<p class="summary">The last {n} request{plural} answered{filtered}, newest first (at most 1,000 are kept; no bodies, credentials by fingerprint).</p>
<div class="scroll" tabindex="0" role="region" aria-label="Requests"><table><caption class="sr">Requests the emulator answered</caption><thead><tr><th scope="col">When</th><th scope="col">Method</th><th scope="col">Path</th><th scope="col">Operation</th><th scope="col" class="num">Status</th><th scope="col" class="num">Code</th><th scope="col" class="num">Took</th><th scope="col">Credential</th></tr></thead><tbody>"#,
        q = esc(queue),
        s = esc(status),
        n = entries.len(),
        plural = if entries.len() == 1 { "" } else { "s" },
        filtered = if queue.is_empty() && status.is_empty() {
            ""
        } else {
            " that match"
        },
    );
    for e in entries {
        let _ = write!(
            main,
            r#"<tr><td>{} ago</td><td>{}</td><td><code>{}</code></td><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td><code>{}</code></td></tr>"#,
            age(e.at_ms.max(1), now_ms.max(e.at_ms)),
            esc(&e.method),
            esc(&e.path),
            e.operation,
            e.status,
            e.code.map_or_else(String::new, |c| c.to_string()),
            if e.took_us < 1000 {
                format!("{} µs", e.took_us)
            } else {
                format!("{:.1} ms", e.took_us as f64 / 1000.0)
            },
            esc(e.credential.as_deref().unwrap_or("none")),
        );
    }
    main.push_str("</tbody></table></div>");
    page("Requests", "requests", &main)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, available: u64, oldest_ms: u64) -> QueueRow {
        QueueRow {
            id: format!("id-{name}"),
            name: name.to_owned(),
            available,
            delayed: 0,
            leased: 0,
            backlog_bytes: available * 10,
            oldest_ms,
            consumer: "none",
            paused: false,
        }
    }

    #[test]
    fn text_is_escaped_wherever_it_goes() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(url("a b/é"), "a%20b%2F%C3%A9");
        let knobs = Knobs {
            round_trip_ms: 0,
            rate_limits: false,
        };
        let html = account(
            &[row("<script>", 1, 0)],
            1,
            &ListQuery::default(),
            0,
            "t\"oken",
            Some("<b>"),
            knobs,
        );
        assert!(html.contains(r#"value="t&quot;oken""#), "{html}");
        assert!(html.contains("&lt;b&gt;"), "{html}");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    /// A JSON body of `depth` nested arrays around `width` numbers: the
    /// shape that pretty-prints to the most lines.
    fn nested(depth: usize, width: usize) -> Vec<u8> {
        let numbers = vec!["12345"; width].join(",");
        format!("{}{numbers}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
    }

    fn listed(kind: BodyKind, body: Vec<u8>) -> MessageRow {
        MessageRow {
            seq: 7,
            id: "m".into(),
            kind,
            body: body.into(),
            timestamp_ms: 0,
            attempts: 1,
            delay_ms: 0,
            standing: Standing::Available,
        }
    }

    #[test]
    fn a_listed_body_is_cut_and_pretty_printed_only_when_small() {
        let base = "/_dashboard/queues/q";
        // 120 KB of nested arrays, and a small one: the list shows at most
        // its bound, and links the whole body when it cut it.
        for (body, cut) in [
            (nested(120, 20_000), true),
            (nested(100, 2), false),
            (vec![b'"'; 128 * 1024], true),
        ] {
            let kind = if body[0] == b'[' {
                BodyKind::Json
            } else {
                BodyKind::Text
            };
            let html = message(&listed(kind, body), base, 0);
            assert!(html.len() <= MAX_LISTED_MESSAGE_BYTES, "{}", html.len());
            assert_eq!(
                html.contains(r#"<a href="/_dashboard/queues/q/messages/7">the whole body</a>"#),
                cut
            );
        }
        // Small JSON is pretty-printed; a JSON body too deep to pretty-print
        // within four times its size is shown as sent.
        let small = message(&listed(BodyKind::Json, br#"{"a":[1,2]}"#.to_vec()), base, 0);
        assert!(
            small.contains("{\n  &quot;a&quot;: [\n")
                || small.contains(
                    "{
  &quot;a&quot;: [
"
                ),
            "{small}"
        );
        let deep = message(&listed(BodyKind::Json, nested(120, 1)), base, 0);
        assert!(deep.contains(&"[".repeat(120)), "shown as sent");
    }

    #[test]
    fn a_body_s_controls_and_overrides_are_shown_escaped_its_lines_kept() {
        let body = b"line one\tcol\n\x1b]52;c;aGk=\x07 \xe2\x80\xaegnp.exe".to_vec();
        let base = "/_dashboard/queues/q";
        let html = message(&listed(BodyKind::Text, body), base, 0);
        assert!(
            html.contains("line one\tcol\n\\u{1b}]52;c;aGk=\\u{7} \\u{202e}gnp.exe"),
            "{html}"
        );
        assert!(
            !html.contains('\u{1b}') && !html.contains('\u{202e}'),
            "{html}"
        );
    }

    #[test]
    fn the_requests_page_stays_within_its_bound_whatever_the_paths() {
        let log = crate::request_log::RequestLog::default();
        let hostile = format!("/accounts/a/queues/{}", "\"<&".repeat(20_000));
        for _ in 0..crate::request_log::CAPACITY {
            log.record(Entry {
                at_ms: 1,
                method: "GET".into(),
                path: hostile.clone(),
                operation: "list_queues",
                queue: crate::request_log::queue_of(&hostile).to_owned(),
                status: 401,
                code: Some(10000),
                took_us: 1,
                credential: None,
            });
        }
        let html = requests(&log.newest_first(|_| true), "", "", 2);
        assert!(html.len() <= MAX_REQUESTS_PAGE_BYTES, "{}", html.len());
        assert!(
            html.len() > 1_000_000,
            "every entry is shown, cut: {}",
            html.len()
        );
    }

    #[test]
    fn durations_and_sizes_read_as_people_write_them() {
        assert_eq!(span(850), "850 ms");
        assert_eq!(span(192_000), "3m 12s");
        assert_eq!(span(7_500_000), "2h 5m");
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(5_600_000), "5.6 MB");
        assert_eq!(age(0, 5), "-");
    }
}
