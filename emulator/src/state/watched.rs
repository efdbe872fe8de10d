//! What the broker keeps for the dashboard's read-only views: the counts
//! of the queues a page watches, and an account's names for the filter.
//! The views (`view.rs`) read the broker; the broker holds these; neither
//! file needs the other for them.

use std::collections::HashMap;

use super::At;

/// Cumulative counts of what happened to a watched queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub pushed: u64,
    pub pulled: u64,
    pub acked: u64,
    pub retried: u64,
}

/// The watched queues' counts, by (account, queue id).
#[derive(Debug, Default)]
pub(crate) struct Activity {
    pub(super) watched: HashMap<(String, String), Counts>,
}

impl Activity {
    /// Adds to the counts of `at`, if someone watches it.
    pub(super) fn note(&mut self, at: At<'_>, change: impl FnOnce(&mut Counts)) {
        if self.watched.is_empty() {
            return;
        }
        if let Some(counts) = self
            .watched
            .get_mut(&(at.account.to_owned(), at.queue.to_owned()))
        {
            change(counts);
        }
    }
}

/// One account's queue names, side by side in one string, with their ids:
/// what the account page's filter scans.
#[derive(Debug)]
pub(crate) struct NameIndex {
    pub(super) account: String,
    /// The account's `names_changed` when it was built.
    pub(super) changes: u64,
    names: String,
    /// Where each name ends in `names`, and its queue's id.
    entries: Vec<(usize, String)>,
}

impl NameIndex {
    pub(super) fn of(
        account: &str,
        records: &crate::state::management::resources::Account,
    ) -> NameIndex {
        let mut names = String::new();
        let mut entries = Vec::with_capacity(records.names.len());
        for (name, id) in &records.names {
            names.push_str(name);
            entries.push((names.len(), id.clone()));
        }
        NameIndex {
            account: account.to_owned(),
            changes: records.names_changed,
            names,
            entries,
        }
    }

    /// The ids of the queues whose name contains `filter` (lower case).
    pub(super) fn matching<'a>(&'a self, filter: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let mut start = 0;
        self.entries.iter().filter_map(move |(end, id)| {
            let name = self.names.get(start..*end).unwrap_or_default();
            start = *end;
            contains_folded(name, filter).then_some(id.as_str())
        })
    }
}

/// Whether `name` contains `filter` (already lower case), ignoring ASCII
/// case, without allocating. Queue names are lower case already (the API
/// refuses others), so the common case is a plain substring search.
pub(super) fn contains_folded(name: &str, filter: &str) -> bool {
    let (name_bytes, wanted) = (name.as_bytes(), filter.as_bytes());
    // A plain scan: names are short, and a searcher's set-up would cost
    // more than the search.
    if wanted.is_empty() || name_bytes.windows(wanted.len()).any(|w| w == wanted) {
        return true;
    }
    name.bytes().any(|b| b.is_ascii_uppercase())
        && name.as_bytes().windows(filter.len()).any(|w| {
            w.iter()
                .zip(filter.as_bytes())
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
        })
}
