//! Errors: [`Error`] (at the crate root) is the one error of
//! every call; this module holds what it carries: [`ApiError`] for a
//! failure the API answered, with each [`ApiErrorDetail`], and
//! [`BodyError`] for a body that cannot be decoded or pushed.

mod api;
mod body;
pub(crate) mod error_type;

pub use api::{ApiError, ApiErrorDetail};
pub use body::BodyError;

pub(crate) use error_type::{Error, Result, built, snippet};
