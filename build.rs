//! Generates the raw client (`cf_queues::raw`) from the OpenAPI fragment.
//!
//! The fragment is three files, one per part of Cloudflare's API (as its
//! published description is kept in `../shared/cloudflare-openapi/`): the
//! messages operations, the management of queues and consumers, and event
//! subscriptions. They are merged here into one description, so that the
//! raw client is one client and the later files can use the first's shared
//! schemas. Editing any file and running `cargo build` is the whole regeneration workflow: the
//! output goes to `OUT_DIR` and is never committed.

use std::{env, fs, path::PathBuf, process::ExitCode};

use serde_yaml::{Mapping, Value};

/// The fragment's files; the first gives the merged description its `info`.
const SPECS: [&str; 3] = [
    "openapi/queues-messages.yaml",
    "openapi/queues-management.yaml",
    "openapi/queues-event-subscriptions.yaml",
];

fn main() -> ExitCode {
    for spec in SPECS {
        println!("cargo:rerun-if-changed={spec}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    match generate() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error generating the raw client from {SPECS:?}: {message}");
            ExitCode::FAILURE
        }
    }
}

fn generate() -> Result<(), String> {
    let mut merged: Option<Value> = None;
    for spec in SPECS {
        let text = fs::read_to_string(spec).map_err(|e| format!("reading {spec}: {e}"))?;
        let doc: Value = serde_yaml::from_str(&text).map_err(|e| format!("parsing {spec}: {e}"))?;
        match merged.as_mut() {
            None => merged = Some(doc),
            Some(into) => merge(into, doc).map_err(|e| format!("merging {spec}: {e}"))?,
        }
    }
    let merged = merged.ok_or("no fragment files")?;
    let spec: openapiv3::OpenAPI =
        serde_yaml::from_value(merged).map_err(|e| format!("reading the merged fragment: {e}"))?;

    let mut settings = progenitor::GenerationSettings::new();
    settings
        .with_interface(progenitor::InterfaceStyle::Builder)
        // The hand-written layer implements `ClientHooks` (auth, response
        // capture); a missing implementation must fail the build, not silently
        // send unauthenticated requests.
        .with_hooks(progenitor::HooksMode::Expected)
        .with_inner_type(
            "crate::hook_state::HookState"
                .parse::<proc_macro2::TokenStream>()
                .map_err(|e| format!("{e:?}"))?,
        )
        .with_derive("PartialEq");
    if env::var_os("CARGO_FEATURE_SCHEMA").is_some() {
        settings.with_derive("schemars::JsonSchema");
    }

    let tokens = progenitor::Generator::new(&settings)
        .generate_tokens(&spec)
        .map_err(|e| format!("generating: {e}"))?;
    let file = syn::parse2(tokens).map_err(|e| format!("parsing generated code: {e}"))?;
    let code = prettyplease::unparse(&file);

    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?).join("raw.rs");
    fs::write(&out, code).map_err(|e| format!("writing {}: {e}", out.display()))
}

/// Adds `doc`'s paths and components to `into`. A path or component defined
/// in both is an error: one name means one thing across the files.
fn merge(into: &mut Value, doc: Value) -> Result<(), String> {
    let Value::Mapping(mut doc) = doc else {
        return Err("not a mapping".into());
    };
    let into = into
        .as_mapping_mut()
        .ok_or("the first file is not a mapping")?;
    if let Some(paths) = doc.remove("paths") {
        extend(into, "paths", paths, "path")?;
    }
    if let Some(Value::Mapping(components)) = doc.remove("components") {
        let target = section(into, "components")?;
        for (kind, entries) in components {
            let kind = kind
                .as_str()
                .ok_or("a components key is not a string")?
                .to_owned();
            extend(target, &kind, entries, &kind)?;
        }
    }
    Ok(())
}

fn extend(into: &mut Mapping, key: &str, entries: Value, what: &str) -> Result<(), String> {
    let Value::Mapping(entries) = entries else {
        return Err(format!("`{key}` is not a mapping"));
    };
    let target = section(into, key)?;
    for (name, value) in entries {
        if target.contains_key(&name) {
            return Err(format!("{what} {name:?} is defined in both files"));
        }
        target.insert(name, value);
    }
    Ok(())
}

fn section<'a>(into: &'a mut Mapping, key: &str) -> Result<&'a mut Mapping, String> {
    into.entry(Value::from(key))
        .or_insert_with(|| Value::Mapping(Mapping::new()))
        .as_mapping_mut()
        .ok_or_else(|| format!("`{key}` is not a mapping"))
}
