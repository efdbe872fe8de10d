//! Settings given or not: a flag left out keeps the builder's own default,
//! documented once where the builder is.

/// A builder that takes a setting only when it was given.
pub trait Optionally: Sized {
    /// `apply(self, value)` when there is a value, `self` unchanged when not.
    fn optionally<T>(self, value: Option<T>, apply: impl FnOnce(Self, T) -> Self) -> Self {
        match value {
            Some(value) => apply(self, value),
            None => self,
        }
    }
}

impl<B> Optionally for B {}
