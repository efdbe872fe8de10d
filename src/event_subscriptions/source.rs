//! [`EventSource`]: where a subscription's events come from.

use serde_json::{Map, Value};

/// Where an event subscription's events come from: a Cloudflare product,
/// or one resource of it, told apart on the wire by `type`.
///
/// The nine sources of Cloudflare's published description, with the field
/// each names its resource by; [`EventSource::Other`] keeps a source this
/// crate does not know (Cloudflare adds them: newer wrangler releases offer
/// `artifacts` and `email.sending`) whole, exactly as it was answered, so
/// reading a subscription never fails on one.
///
/// ```
/// use cf_queues::event_subscriptions::EventSource;
/// let source = EventSource::WorkflowsWorkflow { workflow_name: "checkout".into() };
/// assert_eq!(source.type_name(), "workflows.workflow");
/// assert_eq!(source.resource(), Some("checkout"));
/// assert_eq!(EventSource::Kv.resource(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventSource {
    /// `images`: Cloudflare Images (no Cloudflare page documents its events).
    Images,
    /// `kv`: Workers KV, its namespaces.
    Kv,
    /// `r2`: R2, its buckets.
    R2,
    /// `superSlurper`: Super Slurper, R2's data migrations.
    SuperSlurper,
    /// `vectorize`: Vectorize, its indexes.
    Vectorize,
    /// `workersAi.model`: the batch jobs of one Workers AI model.
    WorkersAiModel {
        /// The model, such as `@cf/meta/llama-3.1-8b-instruct`.
        model_name: String,
    },
    /// `workersBuilds.worker`: the builds of one Worker.
    WorkersBuildsWorker {
        /// The Worker's name.
        worker_name: String,
    },
    /// `workers.script`: one Worker script (no Cloudflare page documents
    /// its events, and wrangler does not offer it).
    WorkersScript {
        /// The script's tag.
        script_tag: String,
    },
    /// `workflows.workflow`: the instances of one Workflow.
    WorkflowsWorkflow {
        /// The Workflow's name.
        workflow_name: String,
    },
    /// A source this crate does not know, or a known one answered without
    /// the field that names its resource: the object as it came, `type`
    /// included. It cannot be sent: creating a subscription to it is an
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    Other(Map<String, Value>),
}

/// The `type` of each known source, in the published description's order.
pub const SOURCE_TYPES: [&str; 9] = [
    "images",
    "kv",
    "r2",
    "superSlurper",
    "vectorize",
    "workersAi.model",
    "workersBuilds.worker",
    "workers.script",
    "workflows.workflow",
];

/// The field that names the resource of a source of this `type`
/// (`model_name` for `workersAi.model`, `worker_name`, `script_tag`,
/// `workflow_name`); `None` for a source of a whole product or an unknown
/// type. The one place that pairs them, for the client and the emulator.
///
/// ```
/// use cf_queues::event_subscriptions::resource_field_of;
/// assert_eq!(resource_field_of("workflows.workflow"), Some("workflow_name"));
/// assert_eq!(resource_field_of("kv"), None);
/// ```
pub fn resource_field_of(type_name: &str) -> Option<&'static str> {
    match type_name {
        "workersAi.model" => Some("model_name"),
        "workersBuilds.worker" => Some("worker_name"),
        "workers.script" => Some("script_tag"),
        "workflows.workflow" => Some("workflow_name"),
        _ => None,
    }
}

impl EventSource {
    /// The source's `type` on the wire: `kv`, `workersAi.model`, ...; for
    /// [`EventSource::Other`], its `type` if it is a string, else `""`.
    pub fn type_name(&self) -> &str {
        match self {
            EventSource::Images => "images",
            EventSource::Kv => "kv",
            EventSource::R2 => "r2",
            EventSource::SuperSlurper => "superSlurper",
            EventSource::Vectorize => "vectorize",
            EventSource::WorkersAiModel { .. } => "workersAi.model",
            EventSource::WorkersBuildsWorker { .. } => "workersBuilds.worker",
            EventSource::WorkersScript { .. } => "workers.script",
            EventSource::WorkflowsWorkflow { .. } => "workflows.workflow",
            EventSource::Other(fields) => fields.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The resource the source names (a model, a Worker, a script, a
    /// Workflow), as wrangler's `Resource` column shows it; `None` for the
    /// sources of a whole product and for [`EventSource::Other`].
    pub fn resource(&self) -> Option<&str> {
        match self {
            EventSource::WorkersAiModel { model_name: name }
            | EventSource::WorkersBuildsWorker { worker_name: name }
            | EventSource::WorkersScript { script_tag: name }
            | EventSource::WorkflowsWorkflow {
                workflow_name: name,
            } => Some(name),
            _ => None,
        }
    }

    /// The source read from the object an answer carries: a known `type`
    /// with exactly the field its resource needs (a string) is that
    /// variant; anything else (an unknown type, a missing field, a field
    /// more, which may be a new shape of a known source) is kept whole in
    /// [`EventSource::Other`].
    pub fn from_fields(fields: Map<String, Value>) -> EventSource {
        let type_name = fields.get("type").and_then(Value::as_str).unwrap_or("");
        let field = resource_field_of(type_name);
        if fields
            .keys()
            .any(|k| k != "type" && Some(k.as_str()) != field)
        {
            return EventSource::Other(fields);
        }
        let resource = field
            .and_then(|field| fields.get(field))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let known = match (type_name, resource) {
            ("images", _) => Some(EventSource::Images),
            ("kv", _) => Some(EventSource::Kv),
            ("r2", _) => Some(EventSource::R2),
            ("superSlurper", _) => Some(EventSource::SuperSlurper),
            ("vectorize", _) => Some(EventSource::Vectorize),
            ("workersAi.model", Some(model_name)) => {
                Some(EventSource::WorkersAiModel { model_name })
            }
            ("workersBuilds.worker", Some(worker_name)) => {
                Some(EventSource::WorkersBuildsWorker { worker_name })
            }
            ("workers.script", Some(script_tag)) => Some(EventSource::WorkersScript { script_tag }),
            ("workflows.workflow", Some(workflow_name)) => {
                Some(EventSource::WorkflowsWorkflow { workflow_name })
            }
            _ => None,
        };
        known.unwrap_or(EventSource::Other(fields))
    }

    /// The source as the API writes it: `type` and, for a source of one
    /// resource, the field that names it; an [`EventSource::Other`] as it
    /// came.
    ///
    /// ```
    /// use cf_queues::event_subscriptions::EventSource;
    /// let source = EventSource::WorkersBuildsWorker { worker_name: "api".into() };
    /// assert_eq!(
    ///     serde_json::Value::Object(source.fields()),
    ///     serde_json::json!({"type": "workersBuilds.worker", "worker_name": "api"})
    /// );
    /// ```
    pub fn fields(&self) -> Map<String, Value> {
        if let EventSource::Other(fields) = self {
            return fields.clone();
        }
        let mut fields = Map::new();
        fields.insert("type".to_owned(), Value::from(self.type_name()));
        if let (Some(field), Some(resource)) = (self.resource_field(), self.resource()) {
            fields.insert(field.to_owned(), Value::from(resource));
        }
        fields
    }

    /// The name of the field that names the source's resource, if it has one.
    pub(crate) fn resource_field(&self) -> Option<&'static str> {
        match self {
            EventSource::Other(_) => None,
            known => resource_field_of(known.type_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn every_known_type_reads_back_as_its_variant_with_its_field() {
        for name in SOURCE_TYPES {
            let mut given = fields(json!({"type": name}));
            if let Some(field) = resource_field_of(name) {
                given.insert(field.to_owned(), Value::from(field));
            }
            let source = EventSource::from_fields(given);
            assert_eq!(source.type_name(), name);
            assert_eq!(EventSource::from_fields(source.fields()), source, "{name}");
            assert!(!matches!(source, EventSource::Other(_)), "{name}");
            // Each resource holds its own field's name.
            assert_eq!(source.resource(), source.resource_field(), "{name}");
        }
    }

    #[test]
    fn an_unknown_type_or_a_missing_resource_is_kept_whole() {
        let email = fields(json!({"type": "email.sending", "zone_id": "z", "domain": "d.example"}));
        assert_eq!(
            EventSource::from_fields(email.clone()),
            EventSource::Other(email)
        );
        let bare = fields(json!({"type": "workersAi.model"}));
        let read = EventSource::from_fields(bare.clone());
        assert_eq!(read, EventSource::Other(bare));
        assert_eq!(read.type_name(), "workersAi.model");
        assert_eq!(read.resource(), None);
        let more = fields(json!({"type": "r2", "bucket_name": "photos"}));
        assert_eq!(
            EventSource::from_fields(more.clone()),
            EventSource::Other(more)
        );
        let numeric = fields(json!({"type": 7}));
        assert_eq!(EventSource::from_fields(numeric).type_name(), "");
        assert_eq!(EventSource::from_fields(Map::new()).type_name(), "");
    }
}
