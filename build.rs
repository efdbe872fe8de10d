//! Generates the raw client (`cf_queues::raw`) from the OpenAPI fragment.
//!
//! Editing `openapi/queues-messages.yaml` and running `cargo build` is the
//! whole regeneration workflow: the output goes to `OUT_DIR` and is never
//! committed.

use std::{env, fs, path::PathBuf, process::ExitCode};

const SPEC: &str = "openapi/queues-messages.yaml";

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed={SPEC}");
    println!("cargo:rerun-if-changed=build.rs");
    match generate() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error generating the raw client from {SPEC}: {message}");
            ExitCode::FAILURE
        }
    }
}

fn generate() -> Result<(), String> {
    let text = fs::read_to_string(SPEC).map_err(|e| format!("reading: {e}"))?;
    let spec: openapiv3::OpenAPI =
        serde_yaml::from_str(&text).map_err(|e| format!("parsing: {e}"))?;

    let mut settings = progenitor::GenerationSettings::new();
    settings
        .with_interface(progenitor::InterfaceStyle::Builder)
        // The hand-written layer implements `ClientHooks` (auth, response
        // capture); a missing implementation must fail the build, not silently
        // send unauthenticated requests.
        .with_hooks(progenitor::HooksMode::Expected)
        .with_inner_type(
            "crate::attempt::HookState"
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
