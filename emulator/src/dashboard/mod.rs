//! The dashboard: the local account in a browser, at `/` and under
//! `/_dashboard/` (paths no API operation uses), served by the same server
//! as the API and reading the same state machine (a data directory's
//! included), without counting against any emulated limit.
//!
//! Server-rendered pages ([`pages`]) and one small script (live figures
//! and charts, from [`series`]); every asset is compiled in, nothing comes
//! from the network. Who may see it is decided in [`access`].

mod access;
mod actions;
mod pages;
mod series;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::EMULATOR_ACCOUNT_ID;
use crate::http::App;
use crate::server::ServerState;
use crate::state::At;
use access::{Access, Denied};
use series::{Reading, Series};

const SCRIPT: &str = include_str!("assets/dashboard.js");
const STYLE: &str = include_str!("assets/dashboard.css");

/// What the dashboard's handlers share.
struct Dashboard {
    app: Arc<App>,
    /// The server, whose round trip the page switches.
    server: Arc<ServerState>,
    access: Access,
    series: Mutex<Series>,
    notes: actions::Notes,
}

/// The dashboard's routes, and the path of the link that logs a browser
/// in. `open`: the emulator accepts any credential, and so does the page.
pub(crate) fn router(app: Arc<App>, server: Arc<ServerState>, open: bool) -> (Router, String) {
    let access = Access::new(open);
    let login = access.login_path();
    let dashboard = Arc::new(Dashboard {
        app,
        server,
        access,
        series: Mutex::default(),
        notes: actions::Notes::default(),
    });
    let router = Router::new()
        .route("/", get(root))
        .route("/_dashboard/login", get(login_page))
        .route("/_dashboard/", get(account))
        .route("/_dashboard/queues/{id}", get(queue))
        .route("/_dashboard/queues/{id}/messages/{seq}", get(message_body))
        .route("/_dashboard/requests", get(requests))
        .route("/_dashboard/api/queues/{id}/series", get(series_points))
        .route("/_dashboard/queues", post(actions::create))
        .route("/_dashboard/queues/{id}/send", post(actions::send))
        .route("/_dashboard/queues/{id}/emit", post(actions::emit))
        .route("/_dashboard/queues/{id}/messages", post(actions::messages))
        .route("/_dashboard/queues/{id}/settings", post(actions::settings))
        .route("/_dashboard/queues/{id}/delivery", post(actions::delivery))
        .route("/_dashboard/queues/{id}/consumer", post(actions::consumer))
        .route(
            "/_dashboard/queues/{id}/{what}",
            post(actions::purge_or_delete),
        )
        .route("/_dashboard/emulator", post(actions::knobs))
        .route("/_dashboard/assets/dashboard.js", get(script))
        .route("/_dashboard/assets/dashboard.css", get(style))
        .with_state(dashboard);
    (router, login)
}

/// A response with the headers every dashboard answer carries: never
/// cached, never framed, never sniffed, scripts and styles from this
/// server only.
fn answer(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (CONTENT_TYPE, content_type),
        (CACHE_CONTROL, "no-store"),
        (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (X_FRAME_OPTIONS, "DENY"),
        (REFERRER_POLICY, "same-origin"),
        (
            CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn html(body: String) -> Response {
    answer(StatusCode::OK, "text/html; charset=utf-8", body)
}

/// A page that is not there (any more): 404, with `title` and `text`.
fn missing(title: &str, text: &str) -> Response {
    answer(
        StatusCode::NOT_FOUND,
        "text/html; charset=utf-8",
        pages::page(title, "missing", &format!("<p>{text}</p>")),
    )
}

fn refused(denied: Denied) -> Response {
    let status = match denied {
        Denied::NoSession => StatusCode::UNAUTHORIZED,
        Denied::ForeignHost | Denied::CrossSite => StatusCode::FORBIDDEN,
    };
    answer(
        status,
        "text/html; charset=utf-8",
        pages::refused(denied.explain()),
    )
}

fn see_other(location: &'static str) -> Response {
    let mut response = answer(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        String::new(),
    );
    response
        .headers_mut()
        .insert(LOCATION, HeaderValue::from_static(location));
    response
}

impl Dashboard {
    /// Every rule of [`access`], in order.
    fn admit(&self, headers: &HeaderMap) -> Result<(), Denied> {
        self.access.check_origin(headers)?;
        self.access.check_session(headers)
    }

    fn now_ms(&self) -> u64 {
        self.app.clock.now_ms()
    }
}

async fn root(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    match d.access.check_origin(&headers) {
        Ok(()) => see_other("/_dashboard/"),
        Err(denied) => refused(denied),
    }
}

#[derive(Debug, Deserialize)]
struct LoginQuery {
    key: Option<String>,
}

async fn login_page(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Response {
    if let Err(denied) = d.access.check_origin(&headers) {
        return refused(denied);
    }
    let Some(session) = query.key.as_deref().and_then(|key| d.access.login(key)) else {
        // Under `without_auth` the link is the page itself; a wrong key is refused.
        return match d.access.check_session(&headers) {
            Ok(()) => see_other("/_dashboard/"),
            Err(denied) => refused(denied),
        };
    };
    let mut response = see_other("/_dashboard/");
    let cookie = d.access.session_cookie(&session);
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    response
}

#[derive(Debug, Default, Deserialize)]
struct AccountQuery {
    q: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    page: Option<usize>,
    fragment: Option<String>,
    note: Option<String>,
}

async fn account(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Query(query): Query<AccountQuery>,
) -> Response {
    if let Err(denied) = d.admit(&headers) {
        return refused(denied);
    }
    let list = pages::ListQuery {
        filter: query.q.unwrap_or_default(),
        sort: query
            .sort
            .filter(|s| pages::COLUMNS.iter().any(|(key, _, _)| key == s))
            .unwrap_or_default(),
        descending: query.order.as_deref() == Some("desc"),
        page: query.page.unwrap_or(1).max(1),
    };
    let now_ms = d.now_ms();
    let skip = (list.page - 1).saturating_mul(pages::PAGE_ROWS);
    let (rows, total) = d.app.broker().queue_page(
        EMULATOR_ACCOUNT_ID,
        now_ms,
        &list.filter,
        list.sort_by(),
        list.descending,
        skip,
        pages::PAGE_ROWS,
    );
    if query.fragment.as_deref() == Some("table") {
        return html(pages::queue_table(&rows, total, &list, now_ms));
    }
    let token = d.access.form_token(&headers).unwrap_or_default();
    let done = query.note.as_deref().and_then(|id| d.notes.take(id));
    let knobs = pages::Knobs {
        round_trip_ms: d.server.latency.get().map_or(0, |l| {
            u64::try_from(l.fixed().as_millis()).unwrap_or(u64::MAX)
        }),
        rate_limits: d.app.rate_limiter().is_some(),
    };
    html(pages::account(
        &rows,
        total,
        &list,
        now_ms,
        &token,
        done.as_deref(),
        knobs,
    ))
}

#[derive(Debug, Default, Deserialize)]
struct PageQuery {
    page: Option<usize>,
    note: Option<String>,
}

async fn queue(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> Response {
    if let Err(denied) = d.admit(&headers) {
        return refused(denied);
    }
    let page = query.page.unwrap_or(1).max(1);
    let now_ms = d.now_ms();
    let at = At {
        account: EMULATOR_ACCOUNT_ID,
        queue: &id,
    };
    let broker = d.app.broker();
    let Ok(record) = broker.get_queue(at) else {
        drop(broker);
        return missing(
            "No such queue",
            "The local account has no queue of this id.",
        );
    };
    let row = broker.queue_row(&record, now_ms);
    let skip = (page - 1).saturating_mul(pages::PAGE_ROWS);
    let (count, messages) = broker.message_rows(at, now_ms, skip, pages::PAGE_ROWS);
    let sources = broker.dead_letter_sources(EMULATOR_ACCOUNT_ID, &record.name);
    let subscriptions = broker.subscriptions_into(EMULATOR_ACCOUNT_ID, &record.id);
    drop(broker);
    let token = d.access.form_token(&headers).unwrap_or_default();
    let done = query.note.as_deref().and_then(|id| d.notes.take(id));
    html(pages::queue(
        &record,
        &row,
        &messages,
        count,
        page,
        now_ms,
        &token,
        done.as_deref(),
        &sources,
        &subscriptions,
    ))
}

/// One message's whole body, which the queue's list shows cut.
async fn message_body(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path((id, seq)): Path<(String, u64)>,
) -> Response {
    if let Err(denied) = d.admit(&headers) {
        return refused(denied);
    }
    let at = At {
        account: EMULATOR_ACCOUNT_ID,
        queue: &id,
    };
    let shown = {
        let broker = d.app.broker();
        broker.get_queue(at).ok().and_then(|record| {
            let row = broker.message_row(at, seq, d.now_ms())?;
            Some((record, row))
        })
    };
    match shown {
        Some((record, row)) => html(pages::body(&record, &row)),
        None => missing(
            "No such message",
            "The queue holds no such message (any more).",
        ),
    }
}

#[derive(Debug, Default, Deserialize)]
struct RequestsQuery {
    queue: Option<String>,
    status: Option<String>,
}

async fn requests(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Query(query): Query<RequestsQuery>,
) -> Response {
    if let Err(denied) = d.admit(&headers) {
        return refused(denied);
    }
    let queue = query.queue.unwrap_or_default();
    let status = query.status.unwrap_or_default();
    let wanted_status: Option<u16> = status.trim().parse().ok();
    let entries = d.app.request_log.as_ref().map_or_else(Vec::new, |log| {
        log.newest_first(|e| {
            (queue.is_empty() || e.queue == queue) && wanted_status.is_none_or(|s| e.status == s)
        })
    });
    html(pages::requests(&entries, &queue, &status, d.now_ms()))
}

async fn series_points(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(denied) = d.admit(&headers) {
        return refused(denied);
    }
    let now = Instant::now();
    let now_ms = d.now_ms();
    let at = At {
        account: EMULATOR_ACCOUNT_ID,
        queue: &id,
    };
    // The broker, then the series: the one order these two are taken in.
    let mut broker = d.app.broker();
    let Ok(record) = broker.get_queue(at) else {
        return answer(StatusCode::NOT_FOUND, "application/json", "{}".into());
    };
    let row = broker.queue_row(&record, now_ms);
    let mut series = d.series.lock().unwrap_or_else(PoisonError::into_inner);
    for idle in series.forget_idle(now) {
        broker.unwatch(At {
            account: EMULATOR_ACCOUNT_ID,
            queue: &idle,
        });
    }
    let sample = series.due(&id, now).then(|| {
        let (counts, dead_lettered) = broker.watch(at);
        let reading = Reading {
            backlog_count: row.available + row.delayed + row.leased,
            backlog_bytes: row.backlog_bytes,
            counts,
            dead_lettered,
        };
        (now_ms, reading)
    });
    let points = series.asked(&id, now, sample);
    drop(series);
    drop(broker);
    let body = serde_json::json!({
        "available": row.available,
        "delayed": row.delayed,
        "leased": row.leased,
        "backlog_bytes": pages::bytes(row.backlog_bytes),
        "oldest": pages::age(row.oldest_ms, now_ms),
        "points": points,
    });
    answer(StatusCode::OK, "application/json", body.to_string())
}

async fn script(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    match d.admit(&headers) {
        Ok(()) => answer(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            SCRIPT.to_owned(),
        ),
        Err(denied) => refused(denied),
    }
}

async fn style(State(d): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    match d.admit(&headers) {
        Ok(()) => answer(StatusCode::OK, "text/css; charset=utf-8", STYLE.to_owned()),
        Err(denied) => refused(denied),
    }
}
