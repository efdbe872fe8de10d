//! One description from several files, so that the drift check compares
//! what build.rs generates from (the fragment is three files) with what
//! Cloudflare publishes (kept as three files as well).
//!
//! The first file is the base: its `openapi`, `info`, `servers` and
//! `security` stay; the others add their `paths` and `components`, as
//! build.rs merges them. A name defined by two files is an error, except
//! that [`Overlap::IfIdentical`] accepts a second definition equal to the
//! first: the published files each carry every schema they reference, so
//! they repeat the shared ones.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// One name means one thing across the files (the fragment, as build.rs).
    Forbidden,
    /// A name may be defined again with the same value (the published files).
    IfIdentical,
}

/// Merges `(file name, document)` pairs, in order.
pub fn merge(docs: Vec<(String, Value)>, overlap: Overlap) -> Result<Value, String> {
    let mut docs = docs.into_iter();
    let (first_name, mut merged) = docs.next().ok_or("no description files")?;
    if !merged.is_object() {
        return Err(format!("{first_name}: not a mapping"));
    }
    // Which file defined each path and component, to name both in an error.
    let mut origin: BTreeMap<String, String> = BTreeMap::new();
    record(&merged, &first_name, &mut origin);
    for (name, doc) in docs {
        let Value::Object(mut doc) = doc else {
            return Err(format!("{name}: not a mapping"));
        };
        // The merged document keeps the first file's `security`, which every
        // operation without its own inherits: a file that says otherwise
        // would be compared (and generated) with requirements it does not
        // state.
        if let Some(security) = doc.get("security")
            && merged.get("security") != Some(security)
        {
            return Err(format!(
                "{name}: its top-level `security` differs from {first_name}'s, which the merged \
                 description keeps"
            ));
        }
        let into = merged
            .as_object_mut()
            .ok_or_else(|| format!("{first_name}: not a mapping"))?;
        if let Some(paths) = doc.remove("paths") {
            let target = section(into, "paths").map_err(|e| format!("{first_name}: {e}"))?;
            extend(target, None, paths, &name, overlap, &mut origin)?;
        }
        if let Some(components) = doc.remove("components") {
            let Value::Object(components) = components else {
                return Err(format!("{name}: `components` is not a mapping"));
            };
            let target = section(into, "components").map_err(|e| format!("{first_name}: {e}"))?;
            for (kind, entries) in components {
                let into = section(target, &kind).map_err(|e| format!("{first_name}: {e}"))?;
                extend(into, Some(&kind), entries, &name, overlap, &mut origin)?;
            }
        }
    }
    Ok(merged)
}

/// How an error names a path (`kind` none) or a component.
fn label(kind: Option<&str>, name: &str) -> String {
    match kind {
        None => format!("path {name:?}"),
        Some(kind) => format!("#/components/{kind}/{name}"),
    }
}

fn record(doc: &Value, file: &str, origin: &mut BTreeMap<String, String>) {
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for path in paths.keys() {
            origin.insert(label(None, path), file.to_owned());
        }
    }
    if let Some(components) = doc.get("components").and_then(Value::as_object) {
        for (kind, entries) in components {
            for name in entries.as_object().into_iter().flat_map(Map::keys) {
                origin.insert(label(Some(kind), name), file.to_owned());
            }
        }
    }
}

/// Adds a file's paths (`kind` none) or components of one kind.
fn extend(
    into: &mut Map<String, Value>,
    kind: Option<&str>,
    entries: Value,
    file: &str,
    overlap: Overlap,
    origin: &mut BTreeMap<String, String>,
) -> Result<(), String> {
    let Value::Object(entries) = entries else {
        let section = kind.map_or_else(|| "paths".to_owned(), |k| format!("components.{k}"));
        return Err(format!("{file}: `{section}` is not a mapping"));
    };
    for (name, value) in entries {
        let key = label(kind, &name);
        match into.get(&name) {
            Some(existing) if overlap == Overlap::IfIdentical && *existing == value => {}
            Some(_) => {
                let first = origin.get(&key).map_or("an earlier file", String::as_str);
                let how = match overlap {
                    Overlap::Forbidden => "is defined in both",
                    Overlap::IfIdentical => "is defined differently in",
                };
                return Err(format!("{key} {how} {first} and {file}"));
            }
            None => {
                origin.insert(key, file.to_owned());
                into.insert(name, value);
            }
        }
    }
    Ok(())
}

fn section<'a>(
    into: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, String> {
    into.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("`{key}` is not a mapping"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Resolver, parse};

    fn docs(files: &[(&str, &str)]) -> Vec<(String, Value)> {
        files
            .iter()
            .map(|(name, text)| ((*name).to_owned(), parse(text, false).unwrap()))
            .collect()
    }

    /// [`MESSAGES`] as the file `first`, then `second` as the file `name`.
    fn after_messages(
        first: &str,
        (name, second): (&str, &str),
        overlap: Overlap,
    ) -> Result<Value, String> {
        merge(docs(&[(first, MESSAGES), (name, second)]), overlap)
    }

    const MESSAGES: &str = r#"
openapi: 3.0.3
info: {title: messages}
security: [{api_token: []}]
paths:
  /q/{id}/messages:
    post: {responses: {}}
components:
  parameters:
    id: {name: id, in: path, required: true, schema: {type: string}}
  schemas:
    Shared: {type: object, properties: {n: {type: number}}}
"#;

    const MANAGEMENT: &str = r#"
openapi: 3.0.3
info: {title: management}
security: [{api_token: []}]
paths:
  /q/{id}:
    get: {responses: {}}
components:
  schemas:
    Envelope:
      type: object
      properties:
        result: {$ref: '#/components/schemas/Shared'}
"#;

    #[test]
    fn the_second_file_adds_paths_and_components_and_refers_to_the_first() {
        let merged =
            after_messages("messages", ("management", MANAGEMENT), Overlap::Forbidden).unwrap();
        assert_eq!(merged["info"]["title"], "messages");
        let paths = merged["paths"].as_object().unwrap();
        assert_eq!(
            paths.keys().collect::<Vec<_>>(),
            vec!["/q/{id}", "/q/{id}/messages"]
        );
        assert!(merged["components"]["parameters"].get("id").is_some());
        let resolver = Resolver::new(&merged);
        let shape = resolver
            .shape(&merged["components"]["schemas"]["Envelope"])
            .unwrap();
        assert_eq!(
            shape.properties["result"].properties["n"].type_label(),
            "number"
        );
    }

    #[test]
    fn a_path_or_component_in_both_fragment_files_is_an_error() {
        let again_path = "paths:\n  /q/{id}/messages:\n    get: {responses: {}}\n";
        let error =
            after_messages("messages", ("management", again_path), Overlap::Forbidden).unwrap_err();
        assert!(error.contains("\"/q/{id}/messages\""), "{error}");
        assert!(error.contains("messages and management"), "{error}");

        // Even when identical: one name means one thing, defined once.
        let again_schema = "components:\n  schemas:\n    Shared: {type: object, properties: {n: {type: number}}}\n";
        let error = after_messages("messages", ("management", again_schema), Overlap::Forbidden)
            .unwrap_err();
        assert!(error.contains("#/components/schemas/Shared"), "{error}");
    }

    #[test]
    fn published_files_may_repeat_a_component_only_identically() {
        let same = "components:\n  schemas:\n    Shared: {type: object, properties: {n: {type: number}}}\n";
        let merged = after_messages("queues", ("management", same), Overlap::IfIdentical).unwrap();
        assert_eq!(
            merged["components"]["schemas"].as_object().unwrap().len(),
            1
        );

        let different = "components:\n  schemas:\n    Shared: {type: object, properties: {n: {type: integer}}}\n";
        let error =
            after_messages("queues", ("management", different), Overlap::IfIdentical).unwrap_err();
        assert!(
            error.contains("defined differently in queues and management"),
            "{error}"
        );
    }

    #[test]
    fn a_second_file_with_other_security_is_an_error() {
        let other = "security: [{api_key: []}]\npaths: {}\n";
        for overlap in [Overlap::Forbidden, Overlap::IfIdentical] {
            let error = merge(docs(&[("a", MESSAGES), ("b", other)]), overlap).unwrap_err();
            assert!(error.contains("security"), "{error}");
        }
        // Saying nothing inherits the first file's.
        let silent = "paths: {}\n";
        assert!(merge(docs(&[("a", MESSAGES), ("b", silent)]), Overlap::Forbidden).is_ok());
    }

    #[test]
    fn one_file_is_itself_and_none_is_an_error() {
        let merged = merge(docs(&[("a", MESSAGES)]), Overlap::Forbidden).unwrap();
        assert_eq!(merged, parse(MESSAGES, false).unwrap());
        assert!(merge(Vec::new(), Overlap::Forbidden).is_err());
    }
}
