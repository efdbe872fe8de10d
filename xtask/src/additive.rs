//! The additive-change mutation: what Cloudflare does to its description
//! all the time (a new optional field somewhere, a new operation), applied
//! to the fragment at once, so that CI can check the crate still compiles.
//!
//! The fragment is several files merged by build.rs: each gets the probe
//! property, and one of them the probe operation ([`Probe::Operation`]),
//! since a second copy of it would be a path defined twice.

use serde_yaml::{Mapping, Value};

pub const PROBE_PROPERTY: &str = "x_additive_probe";
pub const PROBE_PATH: &str = "/accounts/{account_id}/queues/{queue_id}/messages/xtask-probe";

/// A new operation with schemas of its own. Self-contained (inline
/// parameters and failure schema) so that it does not depend on how the
/// fragment names its components.
const PROBE_OPERATION: &str = r#"
parameters:
  - name: account_id
    in: path
    required: true
    schema: {type: string}
  - name: queue_id
    in: path
    required: true
    schema: {type: string}
post:
  operationId: xtask_probe
  summary: Additive-change probe
  description: An operation that does not exist, added by `xtask additive`.
  requestBody:
    required: true
    content:
      application/json:
        schema:
          $ref: '#/components/schemas/XtaskProbeRequest'
  responses:
    2XX:
      description: The probe's answer.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/XtaskProbeEnvelope'
    4XX:
      description: The probe failed.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/XtaskProbeFailure'
"#;

const PROBE_SCHEMAS: &str = r#"
XtaskProbeRequest:
  description: The probe's request.
  type: object
  required: [probe]
  properties:
    probe: {type: string, description: A required field.}
    count: {type: integer, format: uint32, description: An optional field.}
XtaskProbeEnvelope:
  description: The probe's success envelope.
  type: object
  properties:
    success: {type: boolean}
    result:
      $ref: '#/components/schemas/XtaskProbeResult'
XtaskProbeResult:
  description: The probe's result.
  type: object
  properties:
    probed: {type: number}
XtaskProbeFailure:
  description: The probe's failure envelope.
  type: object
  properties:
    success: {type: boolean}
"#;

/// What [`mutate`] adds besides the probe property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The probe operation and its schemas too.
    Operation,
    /// Only the property (the fragment's other files).
    PropertiesOnly,
}

#[derive(Debug, Default, PartialEq)]
pub struct ProbeSummary {
    /// Object schemas that gained the probe property.
    pub schemas: usize,
}

/// Adds the probe operation and its schemas (with [`Probe::Operation`]),
/// then an optional string property [`PROBE_PROPERTY`] to every object
/// schema with `properties`.
pub fn mutate(doc: &mut Value, probe: Probe) -> Result<ProbeSummary, String> {
    let root = doc
        .as_mapping_mut()
        .ok_or("the fragment is not a YAML mapping")?;
    if probe == Probe::Operation {
        add_operation(root)?;
    }
    let mut summary = ProbeSummary::default();
    walk_document(doc, &mut summary);
    Ok(summary)
}

fn add_operation(root: &mut Mapping) -> Result<(), String> {
    let operation: Value = serde_yaml::from_str(PROBE_OPERATION).map_err(|e| e.to_string())?;
    let paths = child_mapping(root, "paths")?;
    if paths.contains_key(PROBE_PATH) {
        return Err(format!("the fragment already has {PROBE_PATH}"));
    }
    paths.insert(PROBE_PATH.into(), operation);

    let schemas: Mapping = serde_yaml::from_str(PROBE_SCHEMAS).map_err(|e| e.to_string())?;
    let components = child_mapping(root, "components")?;
    let existing = child_mapping(components, "schemas")?;
    for (name, schema) in schemas {
        if existing.contains_key(&name) {
            return Err(format!("the fragment already has a schema {name:?}"));
        }
        existing.insert(name, schema);
    }
    Ok(())
}

fn child_mapping<'a>(parent: &'a mut Mapping, key: &str) -> Result<&'a mut Mapping, String> {
    parent
        .entry(key.into())
        .or_insert_with(|| Value::Mapping(Mapping::new()))
        .as_mapping_mut()
        .ok_or_else(|| format!("`{key}` is not a mapping"))
}

/// Visits every place of the document that holds a schema, by structure,
/// so that a property that happens to be called `properties` or `items` is
/// not mistaken for the keyword.
fn walk_document(doc: &mut Value, summary: &mut ProbeSummary) {
    type Walk = fn(&mut Value, &mut ProbeSummary);
    let sections: [(&str, Walk); 5] = [
        ("schemas", walk_schema),
        ("parameters", walk_holder),
        ("headers", walk_holder),
        ("responses", walk_content),
        ("requestBodies", walk_content),
    ];
    for (section, walk) in sections {
        if let Some(items) = doc
            .get_mut("components")
            .and_then(|c| c.get_mut(section))
            .and_then(Value::as_mapping_mut)
        {
            for (_, item) in items.iter_mut() {
                walk(item, summary);
            }
        }
    }
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_mapping_mut) else {
        return;
    };
    for (_, item) in paths.iter_mut() {
        walk_parameters(item, summary);
        let Some(item) = item.as_mapping_mut() else {
            continue;
        };
        for (_, operation) in item.iter_mut() {
            if !operation.is_mapping() {
                continue;
            }
            walk_parameters(operation, summary);
            if let Some(body) = operation.get_mut("requestBody") {
                walk_content(body, summary);
            }
            if let Some(responses) = operation
                .get_mut("responses")
                .and_then(Value::as_mapping_mut)
            {
                for (_, response) in responses.iter_mut() {
                    walk_content(response, summary);
                }
            }
        }
    }
}

fn walk_parameters(node: &mut Value, summary: &mut ProbeSummary) {
    if let Some(list) = node.get_mut("parameters").and_then(Value::as_sequence_mut) {
        for parameter in list {
            walk_holder(parameter, summary);
        }
    }
}

/// A parameter or header: its schema is under `schema`.
fn walk_holder(node: &mut Value, summary: &mut ProbeSummary) {
    if let Some(schema) = node.get_mut("schema") {
        walk_schema(schema, summary);
    }
}

/// A request body or response: schemas under `content.<media>.schema`.
fn walk_content(node: &mut Value, summary: &mut ProbeSummary) {
    if let Some(content) = node.get_mut("content").and_then(Value::as_mapping_mut) {
        for (_, media) in content.iter_mut() {
            walk_holder(media, summary);
        }
    }
}

fn walk_schema(schema: &mut Value, summary: &mut ProbeSummary) {
    let Some(object) = schema.as_mapping_mut() else {
        return;
    };
    if let Some(properties) = object.get_mut("properties").and_then(Value::as_mapping_mut) {
        for (_, property) in properties.iter_mut() {
            walk_schema(property, summary);
        }
        if !properties.contains_key(PROBE_PROPERTY) {
            let mut probe = Mapping::new();
            probe.insert("type".into(), "string".into());
            probe.insert(
                "description".into(),
                "An optional field that does not exist, added by `xtask additive`.".into(),
            );
            properties.insert(PROBE_PROPERTY.into(), Value::Mapping(probe));
            summary.schemas += 1;
        }
    }
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(inner) = object.get_mut(keyword) {
            walk_schema(inner, summary);
        }
    }
    for keyword in ["allOf", "oneOf", "anyOf"] {
        if let Some(list) = object.get_mut(keyword).and_then(Value::as_sequence_mut) {
            for inner in list {
                walk_schema(inner, summary);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAGMENT: &str = r#"
openapi: 3.0.3
paths:
  /accounts/{account_id}/queues/{queue_id}/messages/pull:
    post:
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {batch_size: {type: integer}}}
      responses:
        2XX:
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Envelope'
components:
  schemas:
    Envelope:
      type: object
      properties:
        result:
          type: object
          properties:
            messages:
              type: array
              items:
                type: object
                properties:
                  properties: {type: string}
        warnings:
          oneOf:
            - type: object
              additionalProperties: {type: string}
            - type: array
              items: {type: string}
    Untyped:
      description: no properties, left alone
"#;

    fn has_probe(schema: &Value) -> bool {
        schema
            .get("properties")
            .and_then(|p| p.get(PROBE_PROPERTY))
            .is_some()
    }

    #[test]
    fn every_object_schema_with_properties_gets_the_probe() {
        let mut doc: Value = serde_yaml::from_str(FRAGMENT).unwrap();
        let summary = mutate(&mut doc, Probe::Operation).unwrap();
        let envelope = &doc["components"]["schemas"]["Envelope"];
        let result = &envelope["properties"]["result"];
        let message = &result["properties"]["messages"]["items"];
        let inline = &doc["paths"]["/accounts/{account_id}/queues/{queue_id}/messages/pull"]["post"]
            ["requestBody"]["content"]["application/json"]["schema"];
        for schema in [envelope, result, message, inline] {
            assert!(has_probe(schema), "{schema:?}");
        }
        // A property named `properties` is a property, not the keyword.
        assert!(!has_probe(&message["properties"]["properties"]));
        assert!(!has_probe(&doc["components"]["schemas"]["Untyped"]));
        // Envelope, result, message, inline request, and the probe's three
        // object schemas with properties plus its failure envelope.
        assert_eq!(summary.schemas, 8);
    }

    #[test]
    fn the_probe_operation_and_its_schemas_are_added_once() {
        let mut doc: Value = serde_yaml::from_str(FRAGMENT).unwrap();
        mutate(&mut doc, Probe::Operation).unwrap();
        let operation = &doc["paths"][PROBE_PATH]["post"];
        assert_eq!(operation["operationId"].as_str(), Some("xtask_probe"));
        assert!(has_probe(
            &doc["components"]["schemas"]["XtaskProbeRequest"]
        ));
        assert!(mutate(&mut doc, Probe::Operation).is_err());
    }

    #[test]
    fn properties_only_leaves_paths_and_schemas_as_they_were() {
        let mut doc: Value = serde_yaml::from_str(FRAGMENT).unwrap();
        let summary = mutate(&mut doc, Probe::PropertiesOnly).unwrap();
        assert!(doc["paths"].get(PROBE_PATH).is_none());
        assert!(
            doc["components"]["schemas"]
                .get("XtaskProbeRequest")
                .is_none()
        );
        assert!(has_probe(&doc["components"]["schemas"]["Envelope"]));
        // Envelope, result, message and the inline request only.
        assert_eq!(summary.schemas, 4);
        // Once is enough: a second pass finds every property in place.
        let again = mutate(&mut doc, Probe::PropertiesOnly).unwrap();
        assert_eq!(again.schemas, 0);
    }
}
