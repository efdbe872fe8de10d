//! The name a client, a consumer or a producer carries in its gauges
//! (`cf_queues.instance`), so that two of them in one process, on one
//! queue or one token, do not overwrite each other's levels.
//!
//! A name the user gives ([`ClientBuilder::instance`](crate::ClientBuilder::instance),
//! and the consumer's and producer's builders' `instance`) is taken as it
//! is, once checked: a short label of letters, digits, `.`, `_` and `-`, so
//! that no body, token or other unbounded text can become one. Without
//! one, each gets the smallest number of its kind (clients, consumers,
//! producers) that no living one of this process holds, and gives it back
//! when dropped: a process that rebuilds its clients keeps the same few
//! labels instead of growing the label set, which a metrics backend keeps
//! for every value it ever saw.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use crate::error::{Error, Result};

/// The longest name a user may give: a label, not a description.
pub(crate) const MAX_INSTANCE_NAME_LEN: usize = 64;

/// What an instance is: each kind is numbered on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Client,
    #[cfg_attr(not(feature = "consumer"), allow(dead_code))]
    Consumer,
    #[cfg_attr(not(feature = "producer"), allow(dead_code))]
    Producer,
}

impl Kind {
    fn pool(self) -> &'static Pool {
        static POOLS: [Pool; 3] = [Pool::new(), Pool::new(), Pool::new()];
        &POOLS[self as usize]
    }
}

/// The numbers of one kind held now.
#[derive(Debug)]
struct Pool(Mutex<BTreeSet<u32>>);

impl Pool {
    const fn new() -> Pool {
        Pool(Mutex::new(BTreeSet::new()))
    }

    /// The smallest number from 1 up that no one holds, now held.
    fn take(&self) -> u32 {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let number = (1..)
            .zip(held.iter())
            .find(|(wanted, held)| wanted != *held)
            .map_or(held.len() as u32 + 1, |(wanted, _)| wanted);
        held.insert(number);
        number
    }

    fn give_back(&self, number: u32) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        held.remove(&number);
    }
}

/// One instance's label, held for its life.
#[derive(Debug)]
pub(crate) struct Instance {
    // Read by the metrics' keys alone (the counters' under the consumer
    // and producer features).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    label: String,
    /// The number it holds, given back on drop.
    number: Option<(&'static Pool, u32)>,
}

impl Instance {
    /// The instance the user named, or the smallest free number of `kind`.
    pub(crate) fn new(kind: Kind, name: Option<&str>) -> Result<Instance> {
        match name {
            Some(name) => {
                check_name(name)?;
                Ok(Instance {
                    label: name.to_owned(),
                    number: None,
                })
            }
            None => Ok(Instance::numbered(kind.pool())),
        }
    }

    fn numbered(pool: &'static Pool) -> Instance {
        let number = pool.take();
        Instance {
            label: number.to_string(),
            number: Some((pool, number)),
        }
    }

    /// The label's value.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn label(&self) -> &str {
        &self.label
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some((pool, number)) = self.number {
            pool.give_back(number);
        }
    }
}

/// A name is a short label: 1 to [`MAX_INSTANCE_NAME_LEN`] ASCII letters,
/// digits, `.`, `_` or `-`.
fn check_name(name: &str) -> Result<()> {
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.len() > MAX_INSTANCE_NAME_LEN || !name.chars().all(fine) {
        return Err(Error::invalid(
            "instance",
            format!(
                "must be 1 to {MAX_INSTANCE_NAME_LEN} ASCII letters, digits, '.', '_' or '-': \
                 it becomes a metrics label"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_the_smallest_free_and_come_back_when_dropped() {
        // A pool of its own: other tests build clients meanwhile.
        static POOL: Pool = Pool::new();
        let (a, b, c) = (
            Instance::numbered(&POOL),
            Instance::numbered(&POOL),
            Instance::numbered(&POOL),
        );
        assert_eq!([a.label(), b.label(), c.label()], ["1", "2", "3"]);
        drop(b);
        let d = Instance::numbered(&POOL);
        assert_eq!(d.label(), "2", "a dropped instance's number is reused");
        drop((a, c, d));
        assert_eq!(Instance::numbered(&POOL).label(), "1");
    }

    #[test]
    fn a_name_is_a_short_label() {
        let named = Instance::new(Kind::Client, Some("orders-eu.1_b")).expect("a fine name");
        assert_eq!(named.label(), "orders-eu.1_b");
        let long = "x".repeat(MAX_INSTANCE_NAME_LEN + 1);
        for bad in ["", "two words", "tok=abc", "é", "a\u{1b}[2J", long.as_str()] {
            let error = Instance::new(Kind::Client, Some(bad)).expect_err(bad);
            assert!(
                matches!(&error, Error::InvalidInput { field, .. } if field == "instance"),
                "{error:?}"
            );
        }
    }
}
