//! Events emitted into the subscribed queues: which subscriptions an
//! event of a source reaches, and the message each delivers, in the shape
//! Cloudflare documents (see the [catalogue](crate::catalogue)). Pure:
//! the messages are pushed by the caller, through the same path as a push.

use serde_json::{Map, Value, json};

use super::records::SubscriptionRecord;
use crate::catalogue::DocumentedEvent;
use crate::clock::rfc3339_ms;
use crate::state::Broker;

/// The subscriptions an event reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Targets {
    /// The enabled subscriptions of the source (and resource, if one was
    /// named) whose events list the event.
    pub enabled: Vec<SubscriptionRecord>,
    /// How many would have matched but are disabled: they deliver nothing.
    pub disabled: usize,
}

impl Broker {
    /// The subscriptions of `account` that an event `event` of the source
    /// of type `source` reaches: those of that type (and, when `resource`
    /// is given, of that resource: a model, Worker, script or Workflow)
    /// whose `events` list it.
    pub(crate) fn event_targets(
        &self,
        account: &str,
        source: &str,
        resource: Option<&str>,
        event: &str,
    ) -> Targets {
        let mut targets = Targets {
            enabled: Vec::new(),
            disabled: 0,
        };
        let matching = self.subscriptions.of_account(account).filter(|s| {
            s.source_type() == source
                && resource.is_none_or(|r| s.resource() == Some(r))
                && s.events.iter().any(|e| e == event)
        });
        for subscription in matching {
            if subscription.enabled {
                targets.enabled.push(subscription.clone());
            } else {
                targets.disabled += 1;
            }
        }
        targets
    }
}

/// The message `subscription` delivers for `documented`: its `type`; its
/// `source` as the example has it, with the subscription's resource under
/// its camelCase name (`workflowName`, ...; `id` for a script); `payload`;
/// and `metadata` naming the account, the subscription and the time.
pub(crate) fn event_message(
    documented: &DocumentedEvent,
    subscription: &SubscriptionRecord,
    account: &str,
    payload: Value,
    now_ms: u64,
) -> Value {
    let mut source = match documented.example.get("source") {
        Some(Value::Object(fields)) => fields.clone(),
        _ => Map::new(),
    };
    if !source.contains_key("type") {
        source.insert("type".to_owned(), Value::from(documented.source.as_str()));
    }
    for (field, value) in &subscription.source {
        if field != "type" {
            source.insert(camel_case(field), Value::from(value.as_str()));
        }
    }
    json!({
        "type": documented.message_type(),
        "source": source,
        "payload": payload,
        "metadata": {
            "accountId": account,
            "eventSubscriptionId": subscription.id,
            "eventSchemaVersion": 1,
            "eventTimestamp": rfc3339_ms(now_ms),
        }
    })
}

/// A subscription's resource field as a message names it: `model_name`
/// is `modelName`; a script's tag is its `id`, as Cloudflare's Workers
/// events show it.
fn camel_case(field: &str) -> String {
    if field == "script_tag" {
        return "id".to_owned();
    }
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::catalogue;

    fn subscription(source: &[(&str, &str)]) -> SubscriptionRecord {
        SubscriptionRecord {
            id: "0e3c9a1b2d4f56789abcdef012345678".into(),
            name: "n".into(),
            enabled: true,
            source: source
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            queue_id: "q".into(),
            events: vec!["instance.errored".into()],
            created_ms: 0,
            modified_ms: 0,
            order: 0,
        }
    }

    #[test]
    fn a_message_has_cloudflares_shape_with_the_subscriptions_resource() {
        let documented =
            catalogue::find("workflows.workflow", "instance.errored").expect("documented");
        let s = subscription(&[
            ("type", "workflows.workflow"),
            ("workflow_name", "checkout"),
        ]);
        let message = event_message(
            documented,
            &s,
            "acc",
            json!({"instanceId": "i-1"}),
            1_710_950_954_154,
        );
        assert_eq!(
            message,
            json!({
                "type": "cf.workflows.workflow.instance.errored",
                "source": {"type": "workflows.workflow", "workflowName": "checkout"},
                "payload": {"instanceId": "i-1"},
                "metadata": {"accountId": "acc", "eventSubscriptionId": s.id,
                             "eventSchemaVersion": 1, "eventTimestamp": "2024-03-20T16:09:14.154Z"}
            })
        );
        // Super Slurper's migrated object keeps the example's own source.
        let migrated = catalogue::find("superSlurper", "job.object.migrated").expect("documented");
        let s = subscription(&[("type", "superSlurper")]);
        let message = event_message(migrated, &s, "acc", migrated.example_payload(), 0);
        assert_eq!(message["source"]["type"], "superSlurper.job");
        assert!(message["source"]["jobId"].is_string());
    }

    #[test]
    fn resource_fields_are_named_as_messages_name_them() {
        assert_eq!(camel_case("model_name"), "modelName");
        assert_eq!(camel_case("worker_name"), "workerName");
        assert_eq!(camel_case("workflow_name"), "workflowName");
        assert_eq!(camel_case("script_tag"), "id");
    }
}
