//! The comparison of the fragment with Cloudflare's published description.
//!
//! Every difference is one line, `<METHOD> <path> <where>: <what> <published>
//! vs <fragment>`, so that a line is its own stable key: the exceptions file
//! names lines (or globs over them), and a CI log can be diffed run to run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::spec::{Resolver, Shape};

/// The queue's own path. Paths below it are shown without it (`POST
/// /messages/pull`, `GET /consumers`), so that the lines the exceptions
/// file names for the messages operations stay as they were; any other
/// path, this one included, is shown in full.
pub const PREFIX: &str = "/accounts/{account_id}/queues/{queue_id}";
/// The parts of Cloudflare's API below [`PREFIX`] the fragment describes,
/// each with everything below it.
const SCOPE: [&str; 4] = ["/messages", "/metrics", "/purge", "/consumers"];
/// The paths in scope by themselves, not for what is below them: the
/// account's queues, the queue itself, and the account's event
/// subscriptions and each one. Published operations outside these and
/// [`SCOPE`] are ignored, so the check also works on Cloudflare's whole
/// description.
const WHOLE: [&str; 4] = [
    "/accounts/{account_id}/queues",
    PREFIX,
    "/accounts/{account_id}/event_subscriptions/subscriptions",
    "/accounts/{account_id}/event_subscriptions/subscriptions/{subscription_id}",
];

/// The scope in words, for the report's header.
pub fn scope_label() -> String {
    format!(
        "on {}, and under {PREFIX} (shown without it) on {}",
        WHOLE.join(" and "),
        SCOPE.join(", ")
    )
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diff {
    /// `POST /messages/pull`.
    pub operation: String,
    /// `request.visibility_timeout_ms`; empty for the operation itself.
    pub location: String,
    /// `type number vs integer`.
    pub what: String,
}

impl fmt::Display for Diff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.location.is_empty() {
            write!(f, "{}: {}", self.operation, self.what)
        } else {
            write!(f, "{} {}: {}", self.operation, self.location, self.what)
        }
    }
}

pub struct Report {
    pub diffs: Vec<Diff>,
    pub compared: usize,
    /// Published operations outside [`SCOPE`] and [`WHOLE`].
    pub ignored: usize,
}

struct SpecOperation<'a> {
    display: String,
    path_item: &'a Value,
    node: &'a Value,
}

/// Operations by method and path, with path parameter names blanked
/// (`/queues/{}`) so that a renamed parameter does not hide an operation.
fn operations<'a>(
    doc: &'a Value,
    scoped: bool,
) -> Result<(BTreeMap<String, SpecOperation<'a>>, usize), String> {
    let mut found = BTreeMap::new();
    let mut ignored = 0;
    let Some(paths) = doc.get("paths") else {
        return Ok((found, 0));
    };
    let paths = paths.as_object().ok_or("`paths` must be an object")?;
    for (path, item) in paths {
        let blanked = blank_parameters(path);
        let below = strip_prefix(path).filter(|short| !short.is_empty());
        let in_scope = WHOLE.iter().any(|w| blank_parameters(w) == blanked)
            || below.is_some_and(|short| {
                SCOPE
                    .iter()
                    .any(|s| short == *s || short.starts_with(&format!("{s}/")))
            });
        let shown = below.unwrap_or(path);
        for method in METHODS {
            let Some(node) = item.get(method) else {
                continue;
            };
            if scoped && !in_scope {
                ignored += 1;
                continue;
            }
            let upper = method.to_ascii_uppercase();
            found.insert(
                format!("{upper} {blanked}"),
                SpecOperation {
                    display: format!("{upper} {shown}"),
                    path_item: item,
                    node,
                },
            );
        }
    }
    Ok((found, ignored))
}

/// The path below [`PREFIX`], whatever its parameters are called.
fn strip_prefix(path: &str) -> Option<&str> {
    let prefix = blank_parameters(PREFIX);
    let mut consumed = 0;
    for _ in 0..prefix.matches('/').count() {
        let rest = &path[consumed..];
        let rest = rest.strip_prefix('/')?;
        let end = rest.find('/').unwrap_or(rest.len());
        consumed += 1 + end;
    }
    (blank_parameters(&path[..consumed]) == prefix).then(|| &path[consumed..])
}

fn blank_parameters(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_braces = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_braces = true;
                out.push_str("{}");
            }
            '}' => in_braces = false,
            _ if in_braces => {}
            _ => out.push(c),
        }
    }
    out
}

/// Compares every operation of the fragment with the published one of the
/// same method and path.
pub fn compare(published: &Value, fragment: &Value) -> Result<Report, String> {
    let published_resolver = Resolver::new(published);
    let fragment_resolver = Resolver::new(fragment);
    let (published_ops, ignored) = operations(published, true)?;
    let (fragment_ops, _) = operations(fragment, false)?;
    let mut out = Out::default();
    let mut compared = 0;
    let keys: BTreeSet<&String> = published_ops.keys().chain(fragment_ops.keys()).collect();
    for key in keys {
        match (published_ops.get(key), fragment_ops.get(key)) {
            (Some(p), None) => out.push(&p.display, "", "operation only in published".into()),
            (None, Some(f)) => out.push(&f.display, "", "operation only in fragment".into()),
            (Some(p), Some(f)) => {
                compared += 1;
                let sides = Sides {
                    published: &published_resolver,
                    fragment: &fragment_resolver,
                };
                sides
                    .operation(&f.display, (p, f), &mut out)
                    .map_err(|e| format!("{}: {e}", f.display))?;
            }
            (None, None) => {}
        }
    }
    let mut diffs = out.diffs;
    diffs.sort();
    diffs.dedup();
    Ok(Report {
        diffs,
        compared,
        ignored,
    })
}

#[derive(Default)]
struct Out {
    diffs: Vec<Diff>,
}

impl Out {
    fn push(&mut self, operation: &str, location: &str, what: String) {
        self.diffs.push(Diff {
            operation: operation.to_owned(),
            location: location.to_owned(),
            what,
        });
    }

    /// The pair when both sides have a thing; when one side alone has it,
    /// one line says which (`<what> only in published`).
    fn both<T>(
        &mut self,
        operation: &str,
        location: &str,
        what: &str,
        sides: (Option<T>, Option<T>),
    ) -> Option<(T, T)> {
        let only = |side: &str| match what {
            "" => format!("only in {side}"),
            what => format!("{what} only in {side}"),
        };
        match sides {
            (Some(p), Some(f)) => return Some((p, f)),
            (Some(_), None) => self.push(operation, location, only("published")),
            (None, Some(_)) => self.push(operation, location, only("fragment")),
            (None, None) => {}
        }
        None
    }
}

/// The members of `key` in each side (none where it is absent).
fn members<'v>(
    p: &'v Value,
    f: &'v Value,
    key: &str,
    empty: &'v serde_json::Map<String, Value>,
) -> (
    &'v serde_json::Map<String, Value>,
    &'v serde_json::Map<String, Value>,
) {
    let of = |v: &'v Value| v.get(key).and_then(Value::as_object).unwrap_or(empty);
    (of(p), of(f))
}

fn required(v: &Value) -> bool {
    v.get("required") == Some(&Value::Bool(true))
}

struct Sides<'p, 'f> {
    published: &'p Resolver<'p>,
    fragment: &'f Resolver<'f>,
}

fn none_or<T: fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

/// An operation as the published description and the fragment have it.
type Both<'a, 'b> = (&'a SpecOperation<'b>, &'a SpecOperation<'b>);

impl Sides<'_, '_> {
    fn operation(&self, op: &str, (p, f): Both<'_, '_>, out: &mut Out) -> Result<(), String> {
        self.parameters(op, (p, f), out)?;
        self.request(op, p.node, f.node, out)?;
        self.responses(op, p.node, f.node, out)?;
        let (ps, fs) = (
            security(self.published.doc(), p.node),
            security(self.fragment.doc(), f.node),
        );
        if ps != fs {
            out.push(op, "", format!("security {ps} vs {fs}"));
        }
        Ok(())
    }

    fn parameters(&self, op: &str, (p, f): Both<'_, '_>, out: &mut Out) -> Result<(), String> {
        let ps = parameters(self.published, p)?;
        let fs = parameters(self.fragment, f)?;
        let names: BTreeSet<&String> = ps.keys().chain(fs.keys()).collect();
        for name in names {
            if let Some((pp, fp)) = out.both(op, name, "", (ps.get(name), fs.get(name))) {
                if required(pp) != required(fp) {
                    out.push(
                        op,
                        name,
                        format!("required {} vs {}", required(pp), required(fp)),
                    );
                }
                let pshape = schema_shape(self.published, pp.get("schema"))?;
                let fshape = schema_shape(self.fragment, fp.get("schema"))?;
                shapes(op, name, &pshape, &fshape, out);
            }
        }
        Ok(())
    }

    fn request(&self, op: &str, p: &Value, f: &Value, out: &mut Out) -> Result<(), String> {
        let pb = p
            .get("requestBody")
            .map(|b| self.published.deref(b))
            .transpose()?;
        let fb = f
            .get("requestBody")
            .map(|b| self.fragment.deref(b))
            .transpose()?;
        let Some((pb, fb)) = out.both(op, "request", "body", (pb, fb)) else {
            return Ok(());
        };
        if required(pb) != required(fb) {
            out.push(
                op,
                "request",
                format!("body required {} vs {}", required(pb), required(fb)),
            );
        }
        self.content(op, "request", pb, fb, out)
    }

    /// Compares the media types of a request body or response, and the schema
    /// of each media type both have. JSON is the plain label (`request`), any
    /// other media type is named (`request[text/plain]`).
    fn content(
        &self,
        op: &str,
        label: &str,
        p: &Value,
        f: &Value,
        out: &mut Out,
    ) -> Result<(), String> {
        let empty = serde_json::Map::new();
        let (pc, fc) = members(p, f, "content", &empty);
        let media: BTreeSet<&String> = pc.keys().chain(fc.keys()).collect();
        for m in media {
            let location = if m == "application/json" {
                label.to_owned()
            } else {
                format!("{label}[{m}]")
            };
            let what = format!("media type {m}");
            if let Some((pm, fm)) = out.both(op, label, &what, (pc.get(m), fc.get(m))) {
                let pshape = schema_shape(self.published, pm.get("schema"))?;
                let fshape = schema_shape(self.fragment, fm.get("schema"))?;
                shapes(op, &location, &pshape, &fshape, out);
            }
        }
        Ok(())
    }

    /// The success response (the first 2xx status) is `response`; any other
    /// status both sides describe is `response[<status>]`.
    fn responses(&self, op: &str, p: &Value, f: &Value, out: &mut Out) -> Result<(), String> {
        let empty = serde_json::Map::new();
        let (pr, fr) = members(p, f, "responses", &empty);
        let success = |r: &serde_json::Map<String, Value>| -> Option<String> {
            r.keys().filter(|k| k.starts_with('2')).min().cloned()
        };
        let (ps, fs) = (success(pr), success(fr));
        if ps != fs {
            out.push(
                op,
                "responses",
                format!(
                    "success status {} vs {}",
                    none_or(ps.as_ref()),
                    none_or(fs.as_ref())
                ),
            );
        }
        if let (Some(pv), Some(fv)) = (
            ps.as_ref().and_then(|s| pr.get(s)),
            fs.as_ref().and_then(|s| fr.get(s)),
        ) {
            let pv = self.published.deref(pv)?;
            let fv = self.fragment.deref(fv)?;
            self.content(op, "response", pv, fv, out)?;
        }
        let others: BTreeSet<&String> = pr
            .keys()
            .chain(fr.keys())
            .filter(|k| Some(*k) != ps.as_ref() && Some(*k) != fs.as_ref())
            .collect();
        for status in others {
            let sides = (pr.get(status), fr.get(status));
            if let Some((pv, fv)) = out.both(op, "responses", status, sides) {
                let pv = self.published.deref(pv)?;
                let fv = self.fragment.deref(fv)?;
                self.content(op, &format!("response[{status}]"), pv, fv, out)?;
            }
        }
        Ok(())
    }
}

/// Path-level parameters overridden by operation-level ones, by
/// `<in>.<name>` (`path.account_id`).
fn parameters<'a>(
    resolver: &Resolver<'a>,
    op: &SpecOperation<'a>,
) -> Result<BTreeMap<String, &'a Value>, String> {
    let mut found = BTreeMap::new();
    for level in [op.path_item, op.node] {
        let Some(list) = level.get("parameters") else {
            continue;
        };
        let list = list.as_array().ok_or("`parameters` must be an array")?;
        for parameter in list {
            let parameter = resolver.deref(parameter)?;
            let name = parameter
                .get("name")
                .and_then(Value::as_str)
                .ok_or("a parameter without a name")?;
            let place = parameter
                .get("in")
                .and_then(Value::as_str)
                .ok_or("a parameter without `in`")?;
            found.insert(format!("{place}.{name}"), parameter);
        }
    }
    Ok(found)
}

fn schema_shape<'a>(resolver: &Resolver<'a>, schema: Option<&'a Value>) -> Result<Shape, String> {
    schema.map_or_else(|| Ok(Shape::default()), |s| resolver.shape(s))
}

/// The operation's security requirements (or the document's), as
/// `a+b | c`: alternatives separated by `|`, schemes needed together by `+`.
fn security(doc: &Value, op: &Value) -> String {
    let requirements = op
        .get("security")
        .or_else(|| doc.get("security"))
        .and_then(Value::as_array);
    let Some(requirements) = requirements else {
        return "none".to_owned();
    };
    let alternatives: BTreeSet<String> = requirements
        .iter()
        .map(|r| {
            let schemes: BTreeSet<&str> = r
                .as_object()
                .map(|o| o.keys().map(String::as_str).collect())
                .unwrap_or_default();
            if schemes.is_empty() {
                "anonymous".to_owned()
            } else {
                schemes.into_iter().collect::<Vec<_>>().join("+")
            }
        })
        .collect();
    alternatives.into_iter().collect::<Vec<_>>().join(" | ")
}

fn enum_label(values: Option<&BTreeSet<String>>) -> String {
    values.map_or_else(
        || "none".to_owned(),
        |v| format!("[{}]", v.iter().cloned().collect::<Vec<_>>().join(", ")),
    )
}

/// Compares two schemas at `location`, then their properties, items and map
/// values. A property on one side only is one line; its insides are not
/// listed.
fn shapes(op: &str, location: &str, p: &Shape, f: &Shape, out: &mut Out) {
    let (pt, ft) = (p.type_label(), f.type_label());
    if pt != ft {
        out.push(op, location, format!("type {pt} vs {ft}"));
    }
    if p.nullable != f.nullable {
        out.push(
            op,
            location,
            format!("nullable {} vs {}", p.nullable, f.nullable),
        );
    }
    if p.format != f.format {
        out.push(
            op,
            location,
            format!(
                "format {} vs {}",
                none_or(p.format.as_ref()),
                none_or(f.format.as_ref())
            ),
        );
    }
    if p.enumeration != f.enumeration {
        out.push(
            op,
            location,
            format!(
                "enum {} vs {}",
                enum_label(p.enumeration.as_ref()),
                enum_label(f.enumeration.as_ref())
            ),
        );
    }
    let limits: BTreeSet<&String> = p.limits.keys().chain(f.limits.keys()).collect();
    for key in limits {
        let (pl, fl) = (p.limits.get(key), f.limits.get(key));
        if pl != fl {
            out.push(
                op,
                location,
                format!("{key} {} vs {}", none_or(pl), none_or(fl)),
            );
        }
    }
    let names: BTreeSet<&String> = p.properties.keys().chain(f.properties.keys()).collect();
    for name in names {
        let child = format!("{location}.{name}");
        let sides = (p.properties.get(name), f.properties.get(name));
        if let Some((pp, fp)) = out.both(op, &child, "", sides) {
            let (pr, fr) = (p.required.contains(name), f.required.contains(name));
            if pr != fr {
                out.push(op, &child, format!("required {pr} vs {fr}"));
            }
            shapes(op, &child, pp, fp, out);
        }
    }
    // Items or map values on one side only come with a type difference,
    // which is already reported.
    if let (Some(pi), Some(fi)) = (&p.items, &f.items) {
        shapes(op, &format!("{location}[]"), pi, fi, out);
    }
    if let (Some(pa), Some(fa)) = (&p.additional, &f.additional) {
        shapes(op, &format!("{location}{{}}"), pa, fa, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;

    fn report(published: &str, fragment: &str) -> Report {
        let p = parse(published, false).unwrap();
        let f = parse(fragment, false).unwrap();
        compare(&p, &f).unwrap()
    }

    fn lines(published: &str, fragment: &str) -> Vec<String> {
        diff_lines(&report(published, fragment))
    }

    fn diff_lines(report: &Report) -> Vec<String> {
        report.diffs.iter().map(ToString::to_string).collect()
    }

    fn doc(body: &str) -> String {
        format!(
            r#"
openapi: 3.0.3
paths:
  /accounts/{{account_id}}/queues/{{queue_id}}/messages/pull:
    post:
      requestBody:
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/Pull'
      responses:
        '200':
          content:
            application/json:
              schema:
                type: object
                properties:
                  result:
                    type: object
                    properties:
                      count: {{type: number}}
components:
  schemas:
    Pull:
{body}
"#
        )
    }

    #[test]
    fn identical_descriptions_have_no_differences() {
        let d = doc("      type: object\n      properties:\n        size: {type: number}\n");
        assert!(lines(&d, &d).is_empty());
    }

    /// Each difference in a request body is one line, published side first:
    /// types and formats, required-ness, limits, fields on one side only,
    /// and the same inside array items and map values.
    #[test]
    fn request_body_differences_are_one_line_each_published_first() {
        let cases: [(&str, &str, &[&str]); 3] = [
            (
                "      type: object\n      properties:\n        size: {type: number}\n",
                "      type: object\n      properties:\n        size: {type: integer, format: uint32}\n",
                &[
                    "POST /messages/pull request.size: format none vs uint32",
                    "POST /messages/pull request.size: type number vs integer",
                ],
            ),
            (
                "      type: object\n      properties:\n        size: {type: number, maximum: 100}\n        gone: {type: string}\n",
                "      type: object\n      required: [size]\n      properties:\n        size: {type: number}\n        new: {type: string}\n",
                &[
                    "POST /messages/pull request.gone: only in published",
                    "POST /messages/pull request.new: only in fragment",
                    "POST /messages/pull request.size: maximum 100 vs none",
                    "POST /messages/pull request.size: required false vs true",
                ],
            ),
            (
                "      type: object\n      properties:\n        acks:\n          type: array\n          items: {type: object, properties: {id: {type: string}}}\n        warnings:\n          type: object\n          additionalProperties: {type: string}\n",
                "      type: object\n      properties:\n        acks:\n          type: array\n          items: {type: object, properties: {id: {type: integer}}}\n        warnings:\n          oneOf:\n            - {type: object, additionalProperties: {type: number}}\n            - {type: array, items: {type: string}}\n",
                &[
                    "POST /messages/pull request.acks[].id: type string vs integer",
                    "POST /messages/pull request.warnings: type object vs array|object",
                    "POST /messages/pull request.warnings{}: type string vs number",
                ],
            ),
        ];
        for (published, fragment, expected) in cases {
            assert_eq!(lines(&doc(published), &doc(fragment)), expected);
        }
    }

    #[test]
    fn the_same_shape_through_all_of_or_one_of_compares_equal() {
        let p = doc(
            "      allOf:\n        - type: object\n          properties:\n            size: {type: number}\n        - type: object\n          properties:\n            wait: {type: number}\n",
        );
        let f = doc(
            "      oneOf:\n        - type: object\n          properties:\n            size: {type: number}\n            wait: {type: number}\n",
        );
        assert!(lines(&p, &f).is_empty());
    }

    #[test]
    fn operations_on_one_side_and_outside_the_scope() {
        let p = r#"
paths:
  /accounts/{account_id}/queues/{queue_id}/metrics:
    get: {responses: {}}
  /accounts/{account_id}/queues/{queue_id}/events:
    get: {responses: {}}
  /accounts/{account_id}/workers/scripts:
    get: {responses: {}}
"#;
        let f = r#"
paths:
  /accounts/{account}/queues/{queue}/messages/extend:
    post: {responses: {}}
"#;
        let report = report(p, f);
        assert_eq!(report.ignored, 2);
        assert_eq!(
            diff_lines(&report),
            vec![
                "GET /metrics: operation only in published",
                "POST /messages/extend: operation only in fragment",
            ]
        );
    }

    #[test]
    fn the_management_paths_are_in_scope_and_shown_below_the_queue_or_in_full() {
        let p = r#"
paths:
  /accounts/{account_id}/queues:
    get: {responses: {}}
    post: {responses: {}}
  /accounts/{account_id}/queues/{queue_id}:
    patch: {responses: {}}
  /accounts/{account_id}/queues/{queue_id}/consumers:
    get: {responses: {}}
  /accounts/{account_id}/queues/{queue_id}/consumers/{consumer_id}:
    delete: {responses: {}}
  /accounts/{account_id}/queues/{queue_id}/consumersx:
    get: {responses: {}}
  /accounts/{account_id}/queues/{queue_id}/messages:
    post: {responses: {}}
"#;
        let f = r#"
paths:
  /accounts/{account}/queues:
    get: {responses: {}}
"#;
        let report = report(p, f);
        assert_eq!((report.compared, report.ignored), (1, 1));
        assert_eq!(
            diff_lines(&report),
            vec![
                "DELETE /consumers/{consumer_id}: operation only in published",
                "GET /consumers: operation only in published",
                "PATCH /accounts/{account_id}/queues/{queue_id}: operation only in published",
                "POST /accounts/{account_id}/queues: operation only in published",
                "POST /messages: operation only in published",
            ]
        );
    }

    #[test]
    fn a_management_operation_is_compared_like_a_messages_one() {
        let p = r#"
paths:
  /accounts/{account_id}/queues/{queue_id}:
    put:
      parameters:
        - {name: queue_id, in: path, required: true, schema: {type: string, maxLength: 32}}
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                queue_name: {type: string}
                queue_id: {type: string, readOnly: true}
      responses: {}
"#;
        let f = r#"
paths:
  /accounts/{account_id}/queues/{queue_id}:
    parameters:
      - {name: queue_id, in: path, required: true, schema: {type: string}}
    put:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties:
                queue_name: {type: string}
      responses: {}
"#;
        assert_eq!(
            lines(p, f),
            vec![
                "PUT /accounts/{account_id}/queues/{queue_id} path.queue_id: maxLength 32 vs none",
                "PUT /accounts/{account_id}/queues/{queue_id} request: body required false vs true",
                "PUT /accounts/{account_id}/queues/{queue_id} request.queue_id: only in published",
            ]
        );
    }

    #[test]
    fn parameters_statuses_media_types_and_security() {
        let p = r#"
security: [{api_token: []}]
components:
  schemas:
    Id: {type: string, maxLength: 32}
paths:
  /accounts/{account_id}/queues/{queue_id}/metrics:
    get:
      parameters:
        - {name: queue_id, in: path, required: true, schema: {$ref: '#/components/schemas/Id'}}
      responses:
        '200':
          content:
            application/json: {schema: {type: object}}
            text/event-stream: {schema: {type: object}}
        4XX:
          content:
            application/json:
              schema: {type: object, properties: {code: {type: integer}}}
"#;
        let f = r#"
security: [{api_token: []}, {api_email: [], api_key: []}]
components:
  parameters:
    queue_id: {name: queue_id, in: path, required: true, schema: {type: string}}
paths:
  /accounts/{account_id}/queues/{queue_id}/metrics:
    parameters:
      - $ref: '#/components/parameters/queue_id'
    get:
      responses:
        2XX:
          content:
            application/json: {schema: {type: object}}
        4XX:
          content:
            application/json:
              schema: {type: object, properties: {code: {type: number}}}
        5XX: {description: failure}
"#;
        assert_eq!(
            lines(p, f),
            vec![
                "GET /metrics: security api_token vs api_email+api_key | api_token",
                "GET /metrics path.queue_id: maxLength 32 vs none",
                "GET /metrics response: media type text/event-stream only in published",
                "GET /metrics response[4XX].code: type integer vs number",
                "GET /metrics responses: 5XX only in fragment",
                "GET /metrics responses: success status 200 vs 2XX",
            ]
        );
    }

    #[test]
    fn a_one_of_and_an_any_of_of_the_same_alternatives_compare_equal() {
        let alternatives = r#"
    HttpPull:
      type: object
      required: [type]
      properties:
        type: {type: string, enum: [http_pull]}
        settings: {type: object, properties: {visibility_timeout_ms: {type: number}}}
    Worker:
      type: object
      required: [type, script_name]
      properties:
        type: {type: string, enum: [worker]}
        script_name: {type: string}
"#;
        let with = |keyword: &str| {
            doc(&format!(
                "      {keyword}:\n        - $ref: '#/components/schemas/HttpPull'\n        - $ref: '#/components/schemas/Worker'\n      discriminator: {{propertyName: type}}\n{alternatives}"
            ))
        };
        assert!(lines(&with("anyOf"), &with("oneOf")).is_empty());
        // The union is compared, not nothing: one alternative less is seen.
        let pull_only = doc(&format!(
            "      oneOf:\n        - $ref: '#/components/schemas/HttpPull'\n{alternatives}"
        ));
        assert_eq!(
            lines(&with("anyOf"), &pull_only),
            vec![
                "POST /messages/pull request.script_name: only in published",
                "POST /messages/pull request.type: enum [\"http_pull\", \"worker\"] vs [\"http_pull\"]",
            ]
        );
    }
}
