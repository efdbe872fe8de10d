//! The one way a JSON answer is made, for success and failure alike: the
//! answers' shapes (`wire.rs`) and the failures (`error_answer.rs`) both
//! use it, and neither needs the other for it.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// An `application/json` answer of `status` with `body`.
pub(crate) fn json_response(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body.into(),
    )
        .into_response()
}
