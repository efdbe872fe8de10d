//! The one shape of a builder's plain setters: `name(value) -> Self`,
//! storing the value as given (or in `Some`). Each setter keeps its own
//! docs; only the body is decided here.

/// Setters that each store their argument in a field of `self` and return
/// `self`; written inside an `impl` block:
///
/// ```ignore
/// cf_queues::__setters! {
///     /// How long a lease lasts.
///     visibility_timeout(timeout: Duration) => self.settings.visibility_timeout;
///     /// Pauses or resumes delivery.
///     delivery_paused(paused: bool) => self.delivery_paused = Some;
/// }
/// ```
///
/// Not part of the API: exported for the workspace's other crates (the
/// emulator's builders), hidden, and free to change with them.
#[doc(hidden)]
#[macro_export]
macro_rules! __setters {
    (@store; $value:ident) => { $value };
    (@store $wrap:ident; $value:ident) => { $wrap($value) };
    ($(
        $(#[$attr:meta])*
        $name:ident($value:ident: $type:ty) => self.$($field:ident).+ $(= $wrap:ident)?;
    )*) => {
        $(
            $(#[$attr])*
            pub fn $name(mut self, $value: $type) -> Self {
                self.$($field).+ = $crate::__setters!(@store $($wrap)?; $value);
                self
            }
        )*
    };
}
