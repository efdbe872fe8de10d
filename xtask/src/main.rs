//! Maintenance tasks for cf-queues, run from the repository root:
//!
//! ```text
//! cargo xtask drift <published.json|yaml>... [--fragment <yaml>]...
//!     [--exceptions openapi/drift-exceptions.yaml] [--strict] [--verbose]
//! cargo xtask additive <fragment-in> <fragment-out> [--properties-only]
//! cargo xtask docs
//! cargo xtask <task> [args]   # a task of xtask/tasks/, listed by `cargo xtask help`
//! ```
//!
//! `drift` exits 0 when every difference is explained by an exception, 1
//! when one is not (or, with `--strict`, when an exception matches
//! nothing), 2 on a usage, reading, parsing or merging error.

mod additive;
mod docs;
mod drift;
mod exceptions;
mod graph;
mod merge;
mod spec;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  xtask drift <published.json|yaml>... [--fragment <yaml>]... [--exceptions <yaml>] [--strict] [--verbose]
      Compares the fragment with a copy of Cloudflare's published description.
      Each side may be several files, merged into one description: the published
      files may repeat a component only identically; the fragment's files (default:
      openapi/queues-messages.yaml, openapi/queues-management.yaml and
      openapi/queues-event-subscriptions.yaml, merged as
      build.rs merges them) may define a path or component only once. Every
      difference not explained by the exceptions file (default:
      openapi/drift-exceptions.yaml) fails the check.
      --fragment  a fragment file; given once or more, replaces the default files
      --strict    an exception that matches no difference fails the check too
      --verbose   also list the explained differences and their exceptions
  xtask additive <fragment-in> <fragment-out> [--properties-only]
      Writes a copy of a fragment file with an optional property `x_additive_probe`
      in every object schema and a new operation POST .../messages/xtask-probe.
      --properties-only  only the properties, for the fragment's other files
  xtask graph [CRATE_DIR]...
      Checks that no file of a crate imports a file that imports it back (default:
      every crate of the workspace: the root, emulator, cfq, testkit, xtask), and
      prints each circle with the names that tie its files.
  xtask docs
      Checks that the docs stay true: every repository path and every `cargo run
      --example`, `cargo bench --bench`, `cargo test --test`, `cargo xtask` and `cfq`
      command that README.md, ARCHITECTURE.md, cfq/README.md and the crates' root
      docs name exists, and README.md (450) and ARCHITECTURE.md (300) keep to their
      lengths.

The other tasks are scripts in xtask/tasks/, run from the repository root, each
with its arguments passed on (.ci/run calls them in order). Each builds in
CARGO_TARGET_DIR when it is set (a relative one from where xtask was run), else
in target/, and keeps its outputs, caches and tools there:
  xtask drift-check                        the drift check against Cloudflare's published
                                           description (skipped outside CI when it is missing)
  xtask each-feature                       each feature of each crate compiles on its own
  xtask tls-choices                        no TLS refuses https; rustls without a provider
  xtask additive-check                     additive changes to the fragment still compile
  xtask package                            every crate packs and its package builds
  xtask test-tools [axe|wrangler|typescript-sdk|python|maturin]
                                           the tests' tools from xtask/locks/ into target/test-tools
  xtask refresh-locks [axe|wrangler|typescript-sdk|python|maturin]
                                           the tools' lock files in xtask/locks/, from the registries
  xtask sdk-conformance                    Cloudflare's Python SDK against cfq emulator
  xtask wrangler-conformance               wrangler against cfq emulator
  xtask dist                               one release build of cfq, its wheel and npm packages, in target/dist
  xtask npm-conformance                    the npm packages with Cloudflare's TypeScript SDK and vitest
  xtask python-conformance                 the wheel's pytest plugin with Cloudflare's Python SDK
  xtask callgrind-consumer [N | REV]       the consumer's instructions per message
  xtask callgrind-metrics                  what the metrics feature costs the consumer
  xtask abuse [CFQ]                        the emulator under abuse, at full scale";

/// The tasks written in Rust here; every other task is a script of
/// `xtask/tasks/`, named after its file.
pub const BUILTIN_TASKS: [&str; 5] = ["drift", "additive", "docs", "graph", "help"];

/// The script of `xtask/tasks/` that is `task`, if there is one.
fn script(task: &str) -> Option<PathBuf> {
    let path = repo_root().join("xtask/tasks").join(task);
    let plain = !task.is_empty() && task.chars().all(|c| c.is_ascii_lowercase() || c == '-');
    (plain && path.is_file()).then_some(path)
}

#[derive(Debug)]
enum TaskError {
    Usage(String),
    Io(String),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("drift") => run_drift(&args[1..]),
        Some("additive") => run_additive(&args[1..]),
        Some("docs") => run_docs(),
        Some("graph") => run_graph(&args[1..]),
        Some("help" | "-h" | "--help") => {
            // A closed stdout (`| head`) is not an error of the task's.
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(task) => match script(task) {
            Some(path) => run_script(&path, &args[1..]),
            None => Err(TaskError::Usage(format!("unknown task {task:?}"))),
        },
        None => Err(TaskError::Usage("no task given".to_owned())),
    };
    match result {
        Ok(code) => code,
        Err(TaskError::Usage(message)) => {
            eprintln!("xtask: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(TaskError::Io(message)) => {
            eprintln!("xtask: {message}");
            ExitCode::from(2)
        }
    }
}

fn run_graph(args: &[String]) -> Result<ExitCode, TaskError> {
    let root = repo_root();
    let dirs: Vec<PathBuf> = if args.is_empty() {
        [".", "emulator", "cfq", "testkit", "xtask"]
            .iter()
            .map(|d| root.join(d))
            .collect()
    } else {
        args.iter().map(PathBuf::from).collect()
    };
    let circles = graph::check(&dirs).map_err(TaskError::Io)?;
    Ok(if circles == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The repository root, so that the default paths work from any directory.
fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The fragment's files, in the order build.rs merges them.
const FRAGMENT_FILES: [&str; 3] = [
    "openapi/queues-messages.yaml",
    "openapi/queues-management.yaml",
    "openapi/queues-event-subscriptions.yaml",
];

struct DriftArgs {
    published: Vec<PathBuf>,
    fragments: Vec<PathBuf>,
    exceptions: PathBuf,
    strict: bool,
    verbose: bool,
}

fn parse_drift_args(args: &[String]) -> Result<DriftArgs, TaskError> {
    let root = repo_root();
    let mut published = Vec::new();
    let mut fragments = Vec::new();
    let mut exceptions = root.join("openapi/drift-exceptions.yaml");
    let (mut strict, mut verbose) = (false, false);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |flag: &str| {
            rest.next()
                .map(PathBuf::from)
                .ok_or_else(|| TaskError::Usage(format!("{flag} needs a path")))
        };
        match arg.as_str() {
            "--fragment" => fragments.push(value("--fragment")?),
            "--exceptions" => exceptions = value("--exceptions")?,
            "--strict" => strict = true,
            "--verbose" => verbose = true,
            flag if flag.starts_with("--") => {
                return Err(TaskError::Usage(format!("unknown option {flag}")));
            }
            path => published.push(PathBuf::from(path)),
        }
    }
    if published.is_empty() {
        return Err(TaskError::Usage(
            "drift needs the path of Cloudflare's published description".to_owned(),
        ));
    }
    if fragments.is_empty() {
        fragments = FRAGMENT_FILES.iter().map(|f| root.join(f)).collect();
    }
    Ok(DriftArgs {
        published,
        fragments,
        exceptions,
        strict,
        verbose,
    })
}

/// Reads and merges one side's files.
fn load_merged(paths: &[PathBuf], overlap: merge::Overlap) -> Result<serde_json::Value, TaskError> {
    let mut docs = Vec::with_capacity(paths.len());
    for path in paths {
        docs.push((
            path.display().to_string(),
            spec::load(path).map_err(TaskError::Io)?,
        ));
    }
    merge::merge(docs, overlap).map_err(|e| TaskError::Io(format!("merging: {e}")))
}

fn joined(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ")
}

fn run_drift(args: &[String]) -> Result<ExitCode, TaskError> {
    let args = parse_drift_args(args)?;
    let published = load_merged(&args.published, merge::Overlap::IfIdentical)?;
    let fragment = load_merged(&args.fragments, merge::Overlap::Forbidden)?;
    let exceptions = exceptions::load(&args.exceptions).map_err(TaskError::Io)?;
    let report = drift::compare(&published, &fragment).map_err(TaskError::Io)?;

    // Written at once at the end: a closed pipe (`| head`) is then one
    // error to handle instead of a panic in `println!`. Writing to a String
    // cannot fail, hence the ignored results.
    let mut out = String::new();
    let _ = writeln!(
        out,
        "drift: {} (published) vs {} (fragment), operations {}",
        joined(&args.published),
        joined(&args.fragments),
        drift::scope_label()
    );
    let _ = writeln!(
        out,
        "{} operations in both, {} published operations outside the fragment's scope ignored",
        report.compared, report.ignored
    );
    let mut used = vec![false; exceptions.len()];
    let mut unexplained = 0;
    for diff in &report.diffs {
        let line = diff.to_string();
        let mut explained_by = None;
        for (index, exception) in exceptions.iter().enumerate() {
            if exception.matches(&line) {
                used[index] = true;
                explained_by.get_or_insert(index);
            }
        }
        match explained_by {
            Some(index) if args.verbose => {
                let _ = writeln!(
                    out,
                    "explained    {line}    [{}]",
                    exceptions[index].label()
                );
            }
            Some(_) => {}
            None => {
                unexplained += 1;
                let _ = writeln!(out, "UNEXPLAINED  {line}");
            }
        }
    }
    let stale: Vec<&exceptions::Exception> = exceptions
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(exception, _)| exception)
        .collect();
    for exception in &stale {
        let severity = if args.strict { "error" } else { "warning" };
        let _ = writeln!(
            out,
            "{severity}: stale exception, matches no difference: {} (reason given: {})",
            exception.label(),
            exception
                .reason
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let _ = writeln!(
        out,
        "{} differences: {} explained by {} exceptions, {} unexplained; {} stale exceptions",
        report.diffs.len(),
        report.diffs.len() - unexplained,
        exceptions.len() - stale.len(),
        unexplained,
        stale.len()
    );
    if unexplained > 0 {
        let _ = writeln!(
            out,
            "Fix the fragment where it is wrong; where it differs on purpose, add an exception \
             with its reason to {}. Values read \"published vs fragment\".",
            args.exceptions.display()
        );
    }
    emit(&out)?;
    let failed = unexplained > 0 || (args.strict && !stale.is_empty());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn emit(text: &str) -> Result<(), TaskError> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(TaskError::Io(format!("writing the report: {e}")))
        }
        _ => Ok(()),
    }
}

fn run_additive(args: &[String]) -> Result<ExitCode, TaskError> {
    let mut probe = additive::Probe::Operation;
    let mut files = Vec::new();
    for arg in args {
        match arg.as_str() {
            "--properties-only" => probe = additive::Probe::PropertiesOnly,
            flag if flag.starts_with("--") => {
                return Err(TaskError::Usage(format!("unknown option {flag}")));
            }
            file => files.push(file),
        }
    }
    let [input, output] = files[..] else {
        return Err(TaskError::Usage(
            "additive needs <fragment-in> <fragment-out>".to_owned(),
        ));
    };
    let text = std::fs::read_to_string(input)
        .map_err(|e| TaskError::Io(format!("reading {input}: {e}")))?;
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| TaskError::Io(format!("parsing {input}: {e}")))?;
    let summary =
        additive::mutate(&mut doc, probe).map_err(|e| TaskError::Io(format!("{input}: {e}")))?;
    let text = serde_yaml::to_string(&doc).map_err(|e| TaskError::Io(e.to_string()))?;
    std::fs::write(output, text).map_err(|e| TaskError::Io(format!("writing {output}: {e}")))?;
    let added = match probe {
        additive::Probe::Operation => format!("; added POST {}", additive::PROBE_PATH),
        additive::Probe::PropertiesOnly => String::new(),
    };
    eprintln!(
        "xtask additive: {input}: {} object schemas gained an optional `{}`{added}",
        summary.schemas,
        additive::PROBE_PROPERTY,
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs a script of `xtask/tasks/` (its first line names its interpreter)
/// from the repository root.
fn run_script(path: &Path, args: &[String]) -> Result<ExitCode, TaskError> {
    let cwd = std::env::current_dir()
        .map_err(|e| TaskError::Io(format!("cannot read the current directory: {e}")))?;
    let status = std::process::Command::new(path)
        .args(args)
        .env(
            "CARGO_TARGET_DIR",
            target_dir(std::env::var_os("CARGO_TARGET_DIR"), &cwd, &repo_root()),
        )
        .current_dir(repo_root())
        .status()
        .map_err(|e| TaskError::Io(format!("cannot run {}: {e}", path.display())))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}

/// The target directory a task builds in, absolute: `CARGO_TARGET_DIR` as
/// cargo reads it (relative to the directory the task was run from), else
/// the repository's `target/`. The scripts run from the root, where a
/// relative path would mean another directory.
fn target_dir(given: Option<std::ffi::OsString>, cwd: &Path, root: &Path) -> PathBuf {
    match given.filter(|given| !given.is_empty()) {
        Some(given) => cwd.join(given),
        None => root.join("target"),
    }
}

fn run_docs() -> Result<ExitCode, TaskError> {
    let problems = docs::check(&repo_root()).map_err(TaskError::Io)?;
    if problems.is_empty() {
        println!("xtask docs: every path and command the docs name exists; the lengths hold");
        return Ok(ExitCode::SUCCESS);
    }
    for problem in &problems {
        eprintln!("xtask docs: {problem}");
    }
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_directory_is_the_one_cargo_would_use() {
        let (cwd, root) = (
            Path::new("/home/me/cf-queues/cfq"),
            Path::new("/home/me/cf-queues"),
        );
        assert_eq!(target_dir(None, cwd, root), root.join("target"));
        assert_eq!(target_dir(Some("".into()), cwd, root), root.join("target"));
        assert_eq!(
            target_dir(Some("elsewhere".into()), cwd, root),
            cwd.join("elsewhere"),
            "relative to where it was run, as cargo reads it"
        );
        assert_eq!(
            target_dir(Some("/tmp/t".into()), cwd, root),
            PathBuf::from("/tmp/t")
        );
    }

    /// Every task reaches a build's outputs, caches and tools through
    /// `$target_dir` (`xtask/shell/target-dir.sh`, from CARGO_TARGET_DIR,
    /// which its cargo builds read too), never through a `target/` of its
    /// own.
    #[test]
    fn every_task_honours_cargo_target_dir() {
        for dir in ["xtask/tasks", "xtask/shell"] {
            for entry in std::fs::read_dir(repo_root().join(dir)).expect(dir) {
                let path = entry.expect("an entry").path();
                let text = std::fs::read_to_string(&path).expect("a script");
                for (n, line) in text.lines().enumerate() {
                    let code = line.trim_start();
                    assert!(
                        code.starts_with('#') || !code.contains("target/"),
                        "{}:{}: a target/ of its own: {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
        }
    }

    #[test]
    fn the_help_names_every_task_and_each_script_is_a_task() {
        let dir = repo_root().join("xtask/tasks");
        let entries = std::fs::read_dir(&dir).expect("xtask/tasks");
        let scripts: Vec<String> = entries
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert!(!scripts.is_empty());
        let builtin = BUILTIN_TASKS.into_iter().filter(|t| *t != "help");
        for task in scripts.iter().map(String::as_str).chain(builtin) {
            assert!(
                USAGE.contains(&format!("xtask {task}")),
                "{task} not in the help"
            );
        }
        for task in &scripts {
            assert!(script(task).is_some(), "{task}");
        }
        assert_eq!(script("../Cargo.toml"), None);
        assert_eq!(script("nothing-here"), None);
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn drift_takes_several_published_files_and_defaults_to_every_fragment_file() {
        let parsed = parse_drift_args(&args(&["q.json", "m.json", "--strict"])).unwrap();
        assert_eq!(
            parsed.published,
            vec![PathBuf::from("q.json"), PathBuf::from("m.json")]
        );
        assert!(parsed.strict && !parsed.verbose);
        let root = repo_root();
        assert_eq!(
            parsed.fragments,
            vec![
                root.join("openapi/queues-messages.yaml"),
                root.join("openapi/queues-management.yaml"),
                root.join("openapi/queues-event-subscriptions.yaml"),
            ]
        );
    }

    #[test]
    fn a_fragment_given_replaces_the_defaults_and_may_be_repeated() {
        let parsed = parse_drift_args(&args(&[
            "q.json",
            "--fragment",
            "a.yaml",
            "--verbose",
            "--fragment",
            "b.yaml",
        ]))
        .unwrap();
        assert_eq!(
            parsed.fragments,
            vec![PathBuf::from("a.yaml"), PathBuf::from("b.yaml")]
        );
        assert!(parsed.verbose);
    }

    #[test]
    fn drift_usage_errors() {
        for bad in [
            &[][..],
            &["--strict"],
            &["q.json", "--fragment"],
            &["q.json", "--bogus"],
        ] {
            assert!(
                matches!(parse_drift_args(&args(bad)), Err(TaskError::Usage(_))),
                "{bad:?}"
            );
        }
    }
}
