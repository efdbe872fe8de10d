//! Reading OpenAPI documents and reducing schemas to [`Shape`]s: what the
//! drift comparison looks at, with `$ref`, `allOf`, `oneOf` and `anyOf`
//! resolved so that two descriptions that spell the same thing differently
//! compare equal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// Reads a description as JSON (`.json`) or YAML (anything else).
pub fn load(path: &Path) -> Result<Value, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let json = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    parse(&text, json).map_err(|e| format!("parsing {}: {e}", path.display()))
}

pub fn parse(text: &str, json: bool) -> Result<Value, String> {
    if json {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        let yaml: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        yaml_to_json(yaml)
    }
}

/// YAML allows mapping keys that JSON does not (`200:` is an integer), so the
/// conversion is done by hand instead of deserializing into `serde_json::Value`.
fn yaml_to_json(value: serde_yaml::Value) -> Result<Value, String> {
    use serde_yaml::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("the number {n} has no JSON form"))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(yaml_to_json)
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(map) => {
            let mut object = serde_json::Map::new();
            for (key, value) in map {
                let key = match key {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => return Err(format!("unsupported mapping key {other:?}")),
                };
                object.insert(key, yaml_to_json(value)?);
            }
            Value::Object(object)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value)?,
    })
}

/// Schema keywords compared as plain values. `default` is no limit, but a
/// changed server default changes what an omitted request field means.
const LIMITS: [&str; 13] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];

/// What a schema accepts, as far as the drift check compares it. An empty
/// `types` means any JSON value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    pub types: BTreeSet<String>,
    pub nullable: bool,
    pub format: Option<String>,
    /// The allowed values as JSON text.
    pub enumeration: Option<BTreeSet<String>>,
    /// [`LIMITS`], `default` and `additionalProperties: false`, as JSON text.
    pub limits: BTreeMap<String, String>,
    pub properties: BTreeMap<String, Shape>,
    pub required: BTreeSet<String>,
    pub items: Option<Box<Shape>>,
    /// The schema of the values of a map (`additionalProperties`).
    pub additional: Option<Box<Shape>>,
}

impl Shape {
    pub fn type_label(&self) -> String {
        if self.types.is_empty() {
            "any".to_owned()
        } else {
            self.types.iter().cloned().collect::<Vec<_>>().join("|")
        }
    }

    /// Both at once (`allOf`, or a schema's own keywords next to a `$ref` or
    /// a `oneOf`).
    fn conjoin(mut self, other: Shape) -> Shape {
        self.types = match (self.types.is_empty(), other.types.is_empty()) {
            (true, _) => other.types,
            (_, true) => self.types,
            _ => {
                let mut both: BTreeSet<String> =
                    self.types.intersection(&other.types).cloned().collect();
                // `integer` is a `number`: their conjunction is an integer.
                for (a, b) in [(&self.types, &other.types), (&other.types, &self.types)] {
                    if a.contains("integer") && b.contains("number") {
                        both.insert("integer".to_owned());
                    }
                }
                if both.is_empty() {
                    // Contradictory; report what was written rather than nothing.
                    self.types.union(&other.types).cloned().collect()
                } else {
                    both
                }
            }
        };
        // OpenAPI 3.0 tools read `allOf: [{$ref}, {nullable: true}]` as nullable.
        self.nullable |= other.nullable;
        self.format = self.format.or(other.format);
        self.enumeration = match (self.enumeration, other.enumeration) {
            (Some(a), Some(b)) => Some(a.intersection(&b).cloned().collect()),
            (a, b) => a.or(b),
        };
        for (key, value) in other.limits {
            self.limits.entry(key).or_insert(value);
        }
        for (name, shape) in other.properties {
            let merged = match self.properties.remove(&name) {
                Some(mine) => mine.conjoin(shape),
                None => shape,
            };
            self.properties.insert(name, merged);
        }
        self.required.extend(other.required);
        self.items = merge_boxes(self.items, other.items, Shape::conjoin);
        self.additional = merge_boxes(self.additional, other.additional, Shape::conjoin);
        self
    }

    /// Either one (`oneOf`, `anyOf`): a property is required only if every
    /// alternative requires it, and a limit holds only if all agree.
    fn union(mut self, other: Shape) -> Shape {
        self.types = if self.types.is_empty() || other.types.is_empty() {
            BTreeSet::new()
        } else {
            self.types.union(&other.types).cloned().collect()
        };
        self.nullable |= other.nullable;
        if self.format != other.format {
            self.format = None;
        }
        self.enumeration = match (self.enumeration, other.enumeration) {
            (Some(a), Some(b)) => Some(a.union(&b).cloned().collect()),
            _ => None,
        };
        self.limits
            .retain(|key, value| other.limits.get(key) == Some(value));
        for (name, shape) in other.properties {
            let merged = match self.properties.remove(&name) {
                Some(mine) => mine.union(shape),
                None => shape,
            };
            self.properties.insert(name, merged);
        }
        self.required = self
            .required
            .intersection(&other.required)
            .cloned()
            .collect();
        self.items = merge_boxes(self.items, other.items, Shape::union);
        self.additional = merge_boxes(self.additional, other.additional, Shape::union);
        self
    }
}

fn merge_boxes(
    a: Option<Box<Shape>>,
    b: Option<Box<Shape>>,
    merge: fn(Shape, Shape) -> Shape,
) -> Option<Box<Shape>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Box::new(merge(*a, *b))),
        (a, b) => a.or(b),
    }
}

/// Follows local `$ref`s (`#/components/...`) in one document.
pub struct Resolver<'a> {
    doc: &'a Value,
}

impl<'a> Resolver<'a> {
    pub fn new(doc: &'a Value) -> Self {
        Resolver { doc }
    }

    pub fn doc(&self) -> &'a Value {
        self.doc
    }

    fn target(&self, reference: &str) -> Result<&'a Value, String> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| format!("only local references are supported, not {reference:?}"))?;
        self.doc
            .pointer(pointer)
            .ok_or_else(|| format!("{reference:?} points at nothing"))
    }

    /// A parameter, request body or response, with its `$ref` chain followed.
    pub fn deref(&self, mut value: &'a Value) -> Result<&'a Value, String> {
        for _ in 0..32 {
            match value.get("$ref").and_then(Value::as_str) {
                Some(reference) => value = self.target(reference)?,
                None => return Ok(value),
            }
        }
        Err("a $ref chain longer than 32 links (a cycle?)".to_owned())
    }

    pub fn shape(&self, schema: &'a Value) -> Result<Shape, String> {
        self.build(schema, &mut Vec::new())
    }

    fn build(&self, schema: &'a Value, open: &mut Vec<&'a str>) -> Result<Shape, String> {
        let object = match schema {
            Value::Object(object) => object,
            // `true`, and `false` which no message could match anyway.
            Value::Bool(_) => return Ok(Shape::default()),
            other => return Err(format!("a schema must be an object, found {other}")),
        };
        let mut parts = Vec::new();
        if let Some(reference) = object.get("$ref") {
            let reference = reference
                .as_str()
                .ok_or_else(|| format!("$ref must be a string, found {reference}"))?;
            // A schema that contains itself is compared down to the point
            // where it recurses; below that it is any value.
            if !open.contains(&reference) {
                let target = self.target(reference)?;
                open.push(reference);
                let shape = self.build(target, open);
                open.pop();
                parts.push(shape.map_err(|e| format!("in {reference}: {e}"))?);
            }
        }
        parts.push(self.own(object, open)?);
        if let Some(all) = object.get("allOf") {
            for part in as_array(all, "allOf")? {
                parts.push(self.build(part, open)?);
            }
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(alternatives) = object.get(keyword) {
                let mut union: Option<Shape> = None;
                for alternative in as_array(alternatives, keyword)? {
                    let shape = self.build(alternative, open)?;
                    union = Some(match union {
                        Some(so_far) => so_far.union(shape),
                        None => shape,
                    });
                }
                parts.extend(union);
            }
        }
        Ok(parts.into_iter().reduce(Shape::conjoin).unwrap_or_default())
    }

    /// The keywords of the schema itself, without its `$ref` and compositions.
    fn own(
        &self,
        object: &'a serde_json::Map<String, Value>,
        open: &mut Vec<&'a str>,
    ) -> Result<Shape, String> {
        let mut shape = Shape::default();
        match object.get("type") {
            Some(Value::String(t)) if t == "null" => shape.nullable = true,
            Some(Value::String(t)) => {
                shape.types.insert(t.clone());
            }
            // OpenAPI 3.1: `type: [string, "null"]`.
            Some(Value::Array(types)) => {
                for t in types {
                    match t.as_str() {
                        Some("null") => shape.nullable = true,
                        Some(t) => {
                            shape.types.insert(t.to_owned());
                        }
                        None => return Err(format!("a type must be a string, found {t}")),
                    }
                }
            }
            Some(other) => return Err(format!("a type must be a string, found {other}")),
            None => {}
        }
        shape.nullable |= object.get("nullable") == Some(&Value::Bool(true));
        shape.format = object
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(values) = object.get("enum") {
            let values = as_array(values, "enum")?;
            let mut set = BTreeSet::new();
            for value in values {
                if value.is_null() {
                    shape.nullable = true;
                } else {
                    set.insert(value.to_string());
                }
            }
            shape.enumeration = Some(set);
        }
        for key in LIMITS.iter().chain(&["default"]) {
            if let Some(value) = object.get(*key) {
                shape.limits.insert((*key).to_owned(), value.to_string());
            }
        }
        if let Some(properties) = object.get("properties") {
            let properties = properties
                .as_object()
                .ok_or_else(|| format!("properties must be an object, found {properties}"))?;
            for (name, schema) in properties {
                let property = self
                    .build(schema, open)
                    .map_err(|e| format!("in property {name}: {e}"))?;
                shape.properties.insert(name.clone(), property);
            }
        }
        if let Some(required) = object.get("required") {
            for name in as_array(required, "required")? {
                let name = name
                    .as_str()
                    .ok_or_else(|| format!("required lists names, found {name}"))?;
                shape.required.insert(name.to_owned());
            }
        }
        if let Some(items) = object.get("items") {
            shape.items = Some(Box::new(self.build(items, open)?));
        }
        match object.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                shape
                    .limits
                    .insert("additionalProperties".to_owned(), "false".to_owned());
            }
            Some(Value::Bool(true)) => shape.additional = Some(Box::default()),
            Some(schema) => shape.additional = Some(Box::new(self.build(schema, open)?)),
            None => {}
        }
        // Descriptions often leave `type` out where the structure says it.
        if shape.types.is_empty() {
            if !shape.properties.is_empty() || shape.additional.is_some() {
                shape.types.insert("object".to_owned());
            } else if shape.items.is_some() {
                shape.types.insert("array".to_owned());
            }
        }
        Ok(shape)
    }
}

fn as_array<'a>(value: &'a Value, keyword: &str) -> Result<&'a Vec<Value>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("{keyword} must be an array, found {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(doc: &str, schema: &str) -> Shape {
        let doc = parse(doc, false).unwrap();
        let schema = parse(schema, false).unwrap();
        // The schema is looked up inside the document so that the lifetimes
        // match; tests put it under `x-test`.
        let mut doc = doc;
        doc["x-test"] = schema;
        let resolver = Resolver::new(&doc);
        resolver.shape(&doc["x-test"]).unwrap()
    }

    const COMPONENTS: &str = r#"
components:
  schemas:
    Id:
      type: string
      maxLength: 32
    Alias:
      $ref: '#/components/schemas/Id'
    Base:
      type: object
      required: [id]
      properties:
        id:
          $ref: '#/components/schemas/Alias'
    Text:
      type: object
      required: [body, kind]
      properties:
        body: {type: string}
        kind: {type: string, enum: [text]}
    Json:
      type: object
      required: [kind]
      properties:
        body: {type: object}
        kind: {type: string, enum: [json]}
    Node:
      type: object
      properties:
        next:
          $ref: '#/components/schemas/Node'
"#;

    #[test]
    fn a_ref_chain_resolves_to_the_target() {
        let shape = shape_of(COMPONENTS, "$ref: '#/components/schemas/Alias'");
        assert_eq!(shape.type_label(), "string");
        assert_eq!(
            shape.limits.get("maxLength").map(String::as_str),
            Some("32")
        );
    }

    #[test]
    fn all_of_merges_properties_and_required() {
        let shape = shape_of(
            COMPONENTS,
            r#"
allOf:
  - $ref: '#/components/schemas/Base'
  - type: object
    required: [name]
    properties:
      name: {type: string}
"#,
        );
        assert_eq!(shape.type_label(), "object");
        assert_eq!(
            shape.properties.keys().collect::<Vec<_>>(),
            vec!["id", "name"]
        );
        assert_eq!(
            shape.required.iter().collect::<Vec<_>>(),
            vec!["id", "name"]
        );
        assert_eq!(
            shape.properties["id"]
                .limits
                .get("maxLength")
                .map(String::as_str),
            Some("32")
        );
    }

    #[test]
    fn one_of_is_a_union_where_only_common_requirements_hold() {
        let shape = shape_of(
            COMPONENTS,
            r#"
oneOf:
  - $ref: '#/components/schemas/Text'
  - $ref: '#/components/schemas/Json'
"#,
        );
        assert_eq!(shape.type_label(), "object");
        assert_eq!(shape.properties["body"].type_label(), "object|string");
        assert_eq!(
            shape.properties["kind"].enumeration,
            Some(BTreeSet::from([
                "\"json\"".to_owned(),
                "\"text\"".to_owned()
            ]))
        );
        assert_eq!(shape.required.iter().collect::<Vec<_>>(), vec!["kind"]);
    }

    #[test]
    fn any_of_next_to_own_properties_keeps_both() {
        let shape = shape_of(
            COMPONENTS,
            r#"
type: object
properties:
  delay: {type: number}
anyOf:
  - $ref: '#/components/schemas/Text'
  - $ref: '#/components/schemas/Json'
"#,
        );
        assert_eq!(
            shape.properties.keys().collect::<Vec<_>>(),
            vec!["body", "delay", "kind"]
        );
    }

    #[test]
    fn a_ref_with_siblings_keeps_the_siblings() {
        let shape = shape_of(
            COMPONENTS,
            "{type: object, nullable: true, $ref: '#/components/schemas/Base'}",
        );
        assert!(shape.nullable);
        assert!(shape.properties.contains_key("id"));
    }

    #[test]
    fn a_recursive_schema_stops_where_it_recurses() {
        let shape = shape_of(COMPONENTS, "$ref: '#/components/schemas/Node'");
        assert_eq!(shape.type_label(), "object");
        assert_eq!(shape.properties["next"], Shape::default());
    }

    #[test]
    fn a_missing_target_is_an_error() {
        let doc = parse(COMPONENTS, false).unwrap();
        let schema = parse("$ref: '#/components/schemas/Nope'", false).unwrap();
        let mut doc = doc;
        doc["x-test"] = schema;
        let resolver = Resolver::new(&doc);
        assert!(resolver.shape(&doc["x-test"]).is_err());
    }

    #[test]
    fn structure_implies_the_type_and_null_is_nullable() {
        let shape = shape_of(COMPONENTS, "{items: {type: [string, 'null']}}");
        assert_eq!(shape.type_label(), "array");
        let items = shape.items.as_deref().unwrap();
        assert_eq!(items.type_label(), "string");
        assert!(items.nullable);
    }

    #[test]
    fn yaml_integer_keys_become_strings() {
        let doc = parse("responses:\n  200: {description: ok}\n", false).unwrap();
        assert!(doc["responses"].get("200").is_some());
    }
}
