//! The catalogue's data, read from the page of this module's docs
//! (`catalogue.md`): one place that the emulator's emits, `cfq events`
//! and these docs all read.

use std::sync::OnceLock;

use serde_json::Value;

/// The page, compiled in: the module's docs and its data.
const PAGE: &str = include_str!("catalogue.md");

/// One event Cloudflare documents: its source's `type`, its name as a
/// subscription's `events` lists it, what it means, and the example
/// message Cloudflare shows for it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DocumentedEvent {
    /// The source's `type`: `r2`, `workflows.workflow`, ...
    pub source: String,
    /// The event's name: `bucket.created`, `instance.errored`, ...
    pub event: String,
    /// What it means, in Cloudflare's words.
    pub description: String,
    /// The whole example message: `type`, `source`, `payload`, `metadata`.
    pub example: Value,
}

impl DocumentedEvent {
    /// The `type` of the message it delivers: `cf.r2.bucket.created`.
    pub fn message_type(&self) -> String {
        format!("cf.{}.{}", self.source, self.event)
    }

    /// The example's `payload`, what an emitted message carries unless
    /// told otherwise (`{}` if the example has none).
    pub fn example_payload(&self) -> Value {
        match self.example.get("payload") {
            Some(payload) => payload.clone(),
            None => Value::Object(serde_json::Map::new()),
        }
    }
}

/// Every documented event, in the page's order (by source, then as each
/// product's page lists them).
///
/// ```
/// let first = &cf_queues_emulator::catalogue::events()[0];
/// assert_eq!((first.source.as_str(), first.event.as_str()), ("r2", "bucket.created"));
/// assert_eq!(first.message_type(), "cf.r2.bucket.created");
/// ```
pub fn events() -> &'static [DocumentedEvent] {
    static EVENTS: OnceLock<Vec<DocumentedEvent>> = OnceLock::new();
    EVENTS.get_or_init(|| parse(PAGE))
}

/// The sources with documented events, in the page's order.
pub fn sources() -> Vec<&'static str> {
    let mut sources: Vec<&'static str> = Vec::new();
    for documented in events() {
        if !sources.contains(&documented.source.as_str()) {
            sources.push(&documented.source);
        }
    }
    sources
}

/// The documented event `event` of `source`; for anything else, why not,
/// naming what there is: the known events of a known source, or the
/// sources.
///
/// ```
/// use cf_queues_emulator::catalogue;
/// assert!(catalogue::find("kv", "namespace.created").is_ok());
/// let unknown = catalogue::find("kv", "namespace.renamed").unwrap_err();
/// assert!(unknown.contains("namespace.created, namespace.deleted"));
/// ```
///
/// # Errors
///
/// A sentence for a person: the event is not one of the source's, the
/// source has no documented events (`images`, `workers.script`), or it is
/// no source at all.
pub fn find(source: &str, event: &str) -> Result<&'static DocumentedEvent, String> {
    let of_source: Vec<&DocumentedEvent> = events().iter().filter(|d| d.source == source).collect();
    if let Some(found) = of_source.iter().copied().find(|d| d.event == event) {
        return Ok(found);
    }
    if !of_source.is_empty() {
        let known: Vec<&str> = of_source.iter().map(|d| d.event.as_str()).collect();
        return Err(format!(
            "{:?} is not an event of {source}; its events are {}",
            shown(event),
            known.join(", ")
        ));
    }
    if cf_queues::event_subscriptions::SOURCE_TYPES.contains(&source) {
        return Err(format!(
            "no Cloudflare page documents the events of {source}: subscriptions to it are \
             accepted, and no event can be emitted"
        ));
    }
    Err(format!(
        "{:?} is not a source with documented events; they are {}",
        shown(source),
        sources().join(", ")
    ))
}

/// Input as an error shows it: at most 80 characters.
fn shown(text: &str) -> String {
    text.chars().take(80).collect()
}

/// The events of the page: a `##` heading names a source by its `type` in
/// backticks, a `###` heading an event by its name, the text up to a
/// ```` ```json ```` block describes it, and the block is its example.
fn parse(page: &str) -> Vec<DocumentedEvent> {
    let mut events = Vec::new();
    let mut source: Option<&str> = None;
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(heading) = line.strip_prefix("## ") {
            source = quoted(heading);
            continue;
        }
        let (Some(heading), Some(source)) = (line.strip_prefix("### "), source) else {
            continue;
        };
        let Some(event) = quoted(heading) else {
            continue;
        };
        let mut description = Vec::new();
        let mut example = String::new();
        for line in lines.by_ref() {
            if line == "```json" {
                for line in lines.by_ref() {
                    if line == "```" {
                        break;
                    }
                    example.push_str(line);
                    example.push('\n');
                }
                break;
            }
            if !line.trim().is_empty() {
                description.push(line.trim());
            }
        }
        if let Ok(example) = serde_json::from_str(&example) {
            events.push(DocumentedEvent {
                source: source.to_owned(),
                event: event.to_owned(),
                description: description.join(" "),
                example,
            });
        }
    }
    events
}

/// The first text in backticks of a heading.
fn quoted(heading: &str) -> Option<&str> {
    let start = heading.find('`')? + 1;
    let len = heading[start..].find('`')?;
    Some(&heading[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;
    use cf_queues::event_subscriptions::events as names;

    #[test]
    fn the_page_holds_every_event_the_client_names_and_no_other() {
        let documented: Vec<(&str, &str)> = events()
            .iter()
            .map(|d| (d.source.as_str(), d.event.as_str()))
            .collect();
        let mut named: Vec<(&str, &str)> = Vec::new();
        let lists: [(&str, &[&str]); 7] = [
            ("r2", &names::r2::ALL),
            ("superSlurper", &names::super_slurper::ALL),
            ("vectorize", &names::vectorize::ALL),
            ("workersAi.model", &names::workers_ai::ALL),
            ("workersBuilds.worker", &names::workers_builds::ALL),
            ("kv", &names::kv::ALL),
            ("workflows.workflow", &names::workflows::ALL),
        ];
        for (source, list) in lists {
            named.extend(list.iter().map(|event| (source, *event)));
        }
        assert_eq!(documented, named);
        for documented in events() {
            assert_eq!(
                documented.example["type"],
                Value::from(documented.message_type()),
                "{documented:?}"
            );
            assert!(documented.example["payload"].is_object(), "{documented:?}");
            assert!(!documented.description.is_empty(), "{documented:?}");
        }
    }

    #[test]
    fn a_miss_names_what_there_is() {
        assert_eq!(
            find("workflows.workflow", "instance.errored").map(|d| d.message_type()),
            Ok("cf.workflows.workflow.instance.errored".to_owned())
        );
        let wrong = find("r2", "object.created").expect_err("not an R2 event");
        assert!(wrong.contains("bucket.created, bucket.deleted"), "{wrong}");
        let undocumented = find("images", "image.uploaded").expect_err("undocumented");
        assert!(
            undocumented.contains("no Cloudflare page documents"),
            "{undocumented}"
        );
        let unknown = find("s3", "x").expect_err("no source");
        assert!(unknown.contains("r2, superSlurper"), "{unknown}");
    }
}
