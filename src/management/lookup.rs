//! Resolving a queue name to its id, and paging through a list (the
//! queues, the event subscriptions): the decisions, apart from the calls,
//! so that each rule has a test.

use std::future::Future;

use crate::envelope::{Page, QueuePage};
use crate::error::{Error, Result};
use crate::message::known_u32;
use crate::operation::Operation;
use crate::raw::types;

/// The most pages read in one listing. Cloudflare allows 10,000 queues per
/// account; at its page size of 20 that is 500 pages. A server that never
/// ends its list (or repeats a page) stops here instead of looping.
pub(crate) const MAX_PAGES: u32 = 1_000;

/// What to do after a page.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Ask for this page.
    Page(u32),
    /// The listing is complete.
    Done,
}

/// Whether the list goes on after page `number`: not after an empty page,
/// nor after the last page `result_info` names, nor past [`MAX_PAGES`].
pub(crate) fn after_page<T>(number: u32, page: &Page<T>) -> Next {
    let last = page
        .info
        .as_ref()
        .and_then(|info| known_u32(info.total_pages))
        .filter(|pages| *pages > 0);
    if page.items.is_empty() || last.is_some_and(|last| number >= last) || number >= MAX_PAGES {
        Next::Done
    } else {
        Next::Page(number + 1)
    }
}

/// The queue ids of a page, to tell a page served again (a server that
/// ignores `page` and gives no `result_info`) from the next one.
pub(crate) fn page_ids(page: &QueuePage) -> Vec<Option<String>> {
    page.items.iter().map(|q| q.queue_id.clone()).collect()
}

/// Every item of a list, read page by page from page 1 with `read` until
/// [`after_page`] ends it or a page comes again with the same ids (`id`
/// of each item): a server that ignores `page` and gives no `result_info`
/// would otherwise be read [`MAX_PAGES`] times.
pub(crate) async fn every_page<T, F, Fut>(
    mut read: F,
    id: fn(&T) -> Option<String>,
) -> Result<Vec<T>>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<Page<T>>>,
{
    let mut items = Vec::new();
    let mut number = 1;
    let mut previous: Option<Vec<Option<String>>> = None;
    loop {
        let page = read(number).await?;
        let ids: Vec<Option<String>> = page.items.iter().map(id).collect();
        // Only ids tell one page from another: items without them never
        // make a page look served twice.
        if ids.iter().all(Option::is_some) && previous.as_ref() == Some(&ids) {
            return Ok(items);
        }
        let next = after_page(number, &page);
        items.extend(page.items);
        match next {
            Next::Page(n) => number = n,
            Next::Done => return Ok(items),
        }
        previous = Some(ids);
    }
}

/// The lookup of one name through the pages of a filtered list.
#[derive(Debug)]
pub(crate) struct NameLookup<'a> {
    name: &'a str,
    /// The queues listed with the name, with their ids.
    found: Vec<(String, types::QueueDetails)>,
}

impl<'a> NameLookup<'a> {
    pub(crate) fn new(name: &'a str) -> NameLookup<'a> {
        NameLookup {
            name,
            found: Vec::new(),
        }
    }

    /// Reads page `number` of the list filtered by the name. The `name`
    /// filter is wrangler's, not in the published description: a server
    /// that ignores it sends other names, so only exact `queue_name`
    /// matches count, and the list is paged on only then, until a match.
    pub(crate) fn read(&mut self, number: u32, page: &QueuePage) -> Result<Next> {
        let mut others = false;
        for queue in &page.items {
            if queue.queue_name.as_deref() != Some(self.name) {
                others = true;
                continue;
            }
            match queue.queue_id.as_deref().filter(|id| !id.is_empty()) {
                Some(id) => self.found.push((id.to_owned(), queue.clone())),
                None => {
                    return Err(Error::Decode {
                        operation: Operation::ListQueues,
                        status: 200,
                        reason: format!(
                            "the queue named {:?} is listed without its queue_id",
                            self.name
                        ),
                        snippet: String::new(),
                        attempts: 1,
                    });
                }
            }
        }
        // Names are unique in an account: once one is found, further
        // pages only cost calls against the token's budget.
        if !others || !self.found.is_empty() {
            return Ok(Next::Done);
        }
        Ok(after_page(number, page))
    }

    /// The id of the queue of that name, and the queue as listed.
    pub(crate) fn finish(mut self) -> Result<(String, types::QueueDetails)> {
        match self.found.len() {
            0 => Err(Error::UnknownQueueName {
                name: self.name.to_owned(),
            }),
            1 => Ok(self.found.remove(0)),
            _ => Err(Error::AmbiguousQueueName {
                name: self.name.to_owned(),
                queue_ids: self.found.into_iter().map(|(id, _)| id).collect(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(lookup: NameLookup<'_>) -> Option<String> {
        lookup.finish().ok().map(|(id, _)| id)
    }

    fn page(names: &[(&str, &str)], total_pages: Option<f64>) -> QueuePage {
        QueuePage {
            items: names
                .iter()
                .map(|(name, id)| types::QueueDetails {
                    queue_name: Some((*name).to_owned()),
                    queue_id: Some((*id).to_owned()),
                    ..Default::default()
                })
                .collect(),
            info: total_pages.map(|pages| types::ResultInfo {
                total_pages: Some(pages),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_filtered_page_is_read_once() {
        let mut lookup = NameLookup::new("orders");
        let next = lookup.read(1, &page(&[("orders", "a1")], Some(9.0)));
        assert_eq!(next.ok(), Some(Next::Done));
        assert_eq!(id(lookup).as_deref(), Some("a1"));
    }

    #[test]
    fn an_ignored_filter_pages_on_until_a_match_or_the_end() {
        let mut lookup = NameLookup::new("orders");
        let first = page(&[("billing", "b1"), ("orders-dlq", "c1")], Some(3.0));
        assert_eq!(lookup.read(1, &first).ok(), Some(Next::Page(2)));
        let second = page(&[("Orders", "d1"), ("orders", "e1")], Some(3.0));
        assert_eq!(lookup.read(2, &second).ok(), Some(Next::Done));
        assert_eq!(id(lookup).as_deref(), Some("e1"));

        let mut lookup = NameLookup::new("orders");
        assert_eq!(lookup.read(3, &first).ok(), Some(Next::Done));
        let error = lookup.finish().expect_err("unknown");
        assert!(matches!(&error, Error::UnknownQueueName { name } if name == "orders"));
        assert!(error.is_not_found());
    }

    #[test]
    fn an_empty_page_means_unknown_and_two_matches_are_ambiguous() {
        let mut lookup = NameLookup::new("orders");
        assert_eq!(lookup.read(1, &page(&[], None)).ok(), Some(Next::Done));
        assert!(matches!(
            lookup.finish(),
            Err(Error::UnknownQueueName { .. })
        ));

        let mut lookup = NameLookup::new("orders");
        let twice = page(&[("orders", "a1"), ("orders", "a2")], None);
        assert_eq!(lookup.read(1, &twice).ok(), Some(Next::Done));
        let error = lookup.finish().expect_err("ambiguous");
        assert!(
            matches!(&error, Error::AmbiguousQueueName { queue_ids, .. } if queue_ids == &["a1", "a2"]),
            "{error:?}"
        );
    }

    #[test]
    fn a_match_without_an_id_is_a_decode_error() {
        let mut lookup = NameLookup::new("orders");
        let mut odd = page(&[("orders", "")], None);
        assert!(matches!(lookup.read(1, &odd), Err(Error::Decode { .. })));
        odd.items[0].queue_id = None;
        assert!(matches!(lookup.read(1, &odd), Err(Error::Decode { .. })));
    }

    #[test]
    fn listing_stops_at_an_empty_page_the_last_page_or_the_cap() {
        let full = page(&[("a", "1")], None);
        assert_eq!(after_page(1, &full), Next::Page(2));
        assert_eq!(after_page(2, &page(&[("a", "1")], Some(2.0))), Next::Done);
        assert_eq!(after_page(1, &page(&[], Some(5.0))), Next::Done);
        assert_eq!(after_page(MAX_PAGES, &full), Next::Done);
        assert_eq!(
            after_page(1, &page(&[("a", "1")], Some(0.0))),
            Next::Page(2)
        );
    }
}
