//! `cargo xtask docs`: the docs stay true. Every repository path and every
//! `cargo run --example`, `cargo bench --bench`, `cargo test --test`,
//! `cargo xtask` and `cfq` command that the README, ARCHITECTURE.md, cfq's
//! README and the crates' root docs name must exist, and the README and
//! ARCHITECTURE.md keep to their lengths.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The documents read, and the most lines each may have (`None`: any).
const DOCUMENTS: [(&str, Option<usize>); 7] = [
    ("README.md", Some(450)),
    ("ARCHITECTURE.md", Some(300)),
    ("cfq/README.md", None),
    ("src/lib.rs", None),
    ("emulator/src/lib.rs", None),
    ("emulator/src/semantics.md", None),
    ("cfq/src/main.rs", None),
];

/// File endings that make a backticked word a path of the repository.
const PATH_ENDINGS: [&str; 9] = [
    ".rs", ".md", ".toml", ".yaml", ".yml", ".py", ".sh", ".json", ".png",
];

/// Files the docs name that are not the repository's: Cloudflare's published
/// description, which the drift check reads from outside it.
const ELSEWHERE: [&str; 3] = [
    "queues.json",
    "queues-management.json",
    "queues-event-subscriptions.json",
];

/// Everything `cargo xtask docs` found wrong, one line each.
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let files = tracked(root)?;
    let known = Known::read(root, &files)?;
    let mut problems = Vec::new();
    for (document, limit) in DOCUMENTS {
        let text = std::fs::read_to_string(root.join(document))
            .map_err(|e| format!("cannot read {document}: {e}"))?;
        let text = if document.ends_with(".rs") {
            doc_comments(&text)
        } else {
            text
        };
        if let Some(limit) = limit {
            let lines = text.lines().count();
            if lines > limit {
                problems.push(format!("{document}: {lines} lines, at most {limit}"));
            }
        }
        for word in code_spans(&text).into_iter().chain(link_targets(&text)) {
            if let Some(problem) = known.judge(&word, &files) {
                problems.push(format!("{document}: {problem}"));
            }
        }
    }
    problems.sort();
    problems.dedup();
    Ok(problems)
}

/// The repository's files, as git tracks them.
fn tracked(root: &Path) -> Result<BTreeSet<String>, String> {
    let out = Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run git ls-files: {e}"))?;
    if !out.status.success() {
        return Err("git ls-files failed".to_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// The `//!` lines of a source file, without their markers.
fn doc_comments(source: &str) -> String {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The contents of inline code spans and of the lines of code blocks.
fn code_spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            out.push(line.trim().to_owned());
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let Some(span) = parts.next() {
            out.push(span.to_owned());
            parts.next();
        }
    }
    out
}

/// The targets of Markdown links, `[text](target)`, that are not URLs or anchors.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in text.split("](").skip(1) {
        let Some(end) = piece.find(')') else {
            continue;
        };
        let target = piece[..end].split('#').next().unwrap_or_default();
        if !target.is_empty() && !target.contains("://") && !target.contains(' ') {
            out.push(target.to_owned());
        }
    }
    out
}

/// What the commands may name.
struct Known {
    examples: BTreeSet<String>,
    benches: BTreeSet<String>,
    tests: BTreeSet<String>,
    xtasks: BTreeSet<String>,
    cfq: BTreeSet<String>,
}

impl Known {
    fn read(root: &Path, files: &BTreeSet<String>) -> Result<Known, String> {
        let mut known = Known {
            examples: BTreeSet::new(),
            benches: BTreeSet::new(),
            tests: BTreeSet::new(),
            xtasks: crate::BUILTIN_TASKS
                .into_iter()
                .map(str::to_owned)
                .collect(),
            cfq: BTreeSet::new(),
        };
        for manifest in files.iter().filter(|f| f.ends_with("Cargo.toml")) {
            let text = std::fs::read_to_string(root.join(manifest))
                .map_err(|e| format!("cannot read {manifest}: {e}"))?;
            let mut section = "";
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with("[[") {
                    section = line;
                } else if let Some(name) = line
                    .strip_prefix("name = \"")
                    .and_then(|n| n.strip_suffix('"'))
                {
                    let set = match section {
                        "[[example]]" => &mut known.examples,
                        "[[bench]]" => &mut known.benches,
                        "[[test]]" => &mut known.tests,
                        _ => continue,
                    };
                    set.insert(name.to_owned());
                }
            }
        }
        for file in files {
            if let Some(task) = file.strip_prefix("xtask/tasks/") {
                known.xtasks.insert(task.to_owned());
            }
            if let Some(name) = file
                .rsplit_once("examples/")
                .and_then(|(_, n)| n.strip_suffix(".rs"))
                .filter(|n| !n.contains('/'))
            {
                known.examples.insert(name.to_owned());
            }
        }
        let args = std::fs::read_to_string(root.join("cfq/src/args.rs"))
            .map_err(|e| format!("cannot read cfq/src/args.rs: {e}"))?;
        let commands = args
            .split("pub enum Command {")
            .nth(1)
            .and_then(|rest| rest.split("\n}").next())
            .unwrap_or_default();
        for line in commands.lines() {
            let line = line.trim();
            if let Some(name) = line
                .split("name = \"")
                .nth(1)
                .and_then(|n| n.split('"').next())
            {
                known.cfq.insert(name.to_owned());
            } else if let Some((variant, _)) = line.split_once('(')
                && variant.chars().all(|c| c.is_ascii_alphanumeric())
                && variant.starts_with(|c: char| c.is_ascii_uppercase())
            {
                known.cfq.insert(variant.to_ascii_lowercase());
            }
        }
        Ok(known)
    }

    /// What is wrong with a code span or a link target, if anything.
    fn judge(&self, word: &str, files: &BTreeSet<String>) -> Option<String> {
        let words: Vec<&str> = word.split_whitespace().collect();
        let named = |flag: &str| {
            words
                .iter()
                .position(|w| *w == flag)
                .and_then(|i| words.get(i + 1))
                .copied()
        };
        if let Some(i) = words.iter().position(|w| *w == "cargo") {
            let rest = &words[i + 1..];
            if rest.first() == Some(&"xtask") {
                let task = rest.get(1).copied().unwrap_or("help");
                if !task.starts_with('-') && !self.xtasks.contains(task) {
                    return Some(format!("`cargo xtask {task}`: no such task"));
                }
            }
            for (flag, set, what) in [
                ("--example", &self.examples, "example"),
                ("--bench", &self.benches, "bench"),
                ("--test", &self.tests, "test"),
            ] {
                if let Some(name) = named(flag)
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !set.contains(name)
                {
                    return Some(format!("`{word}`: no {what} named {name}"));
                }
            }
            return None;
        }
        if words.first() == Some(&"cfq")
            && let Some(command) = words.get(1)
            && command.chars().all(|c| c.is_ascii_lowercase())
            && !self.cfq.contains(*command)
        {
            return Some(format!("`{word}`: cfq has no command {command}"));
        }
        // A lone word that looks like a path of the repository.
        if words.len() != 1 {
            return None;
        }
        let path = words[0].trim_end_matches([',', '.', ':', ';']);
        // Outside the repository, generated, or a placeholder (`tests/NAME/main.rs`).
        let elsewhere = path.starts_with("../")
            || path.starts_with("OUT_DIR")
            || path.starts_with("target/")
            || ELSEWHERE.contains(&path)
            || path
                .split('/')
                .any(|part| part.len() > 1 && part.chars().all(|c| c.is_ascii_uppercase()));
        let looks_like_path = !elsewhere
            && !path.starts_with('/')
            && !path.contains("://")
            && !path.contains(['{', '*', '<', '=', '$', '(', '"', '\''])
            && !path.contains("::")
            && (PATH_ENDINGS.iter().any(|e| path.ends_with(e))
                || (path.ends_with('/') && path.len() > 1));
        if !looks_like_path {
            return None;
        }
        let path = path.trim_start_matches("./");
        let folder = path.trim_end_matches('/');
        let exists = files.iter().any(|f| {
            f == path
                || f.ends_with(&format!("/{path}"))
                || (path.ends_with('/')
                    && (f.starts_with(&format!("{folder}/")) || f.contains(&format!("/{folder}/"))))
        });
        (!exists).then(|| format!("`{path}`: no such file or folder in the repository"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known {
        Known {
            examples: ["quickstart".to_owned()].into(),
            benches: ["dashboard".to_owned()].into(),
            tests: BTreeSet::new(),
            xtasks: ["docs".to_owned()].into(),
            cfq: ["push".to_owned(), "metrics".to_owned()].into(),
        }
    }

    #[test]
    fn paths_and_commands_are_checked_against_the_repository() {
        let files: BTreeSet<String> = ["src/lib.rs".to_owned(), "docs/a.png".to_owned()].into();
        let k = known();
        assert_eq!(k.judge("src/lib.rs", &files), None);
        assert_eq!(
            k.judge("lib.rs", &files),
            None,
            "a suffix of a tracked path"
        );
        assert!(k.judge("tests/logging.rs", &files).is_some());
        assert_eq!(k.judge("docs/", &files), None);
        assert!(
            k.judge("doc/", &files).is_some(),
            "a folder is whole, not a prefix"
        );
        assert_eq!(k.judge("tests/NAME/main.rs", &files), None, "a placeholder");
        assert_eq!(k.judge("../shared/x.json", &files), None, "outside");
        assert_eq!(
            k.judge("/accounts/{id}/queues", &files),
            None,
            "an API path"
        );
        assert_eq!(k.judge("cargo run --example quickstart", &files), None);
        assert!(k.judge("cargo run --example nowhere", &files).is_some());
        assert!(k.judge("cargo bench -p x --bench gone", &files).is_some());
        assert!(k.judge("cargo xtask lint", &files).is_some());
        assert_eq!(k.judge("cfq metrics -q orders --watch", &files), None);
        assert!(k.judge("cfq frobnicate", &files).is_some());
    }

    #[test]
    fn code_spans_and_links_are_found() {
        let text = "a `x.rs` b `y`\n```sh\ncfq push\n```\n[t](docs/a.png#top) [u](https://x)";
        assert_eq!(code_spans(text), ["x.rs", "y", "cfq push"]);
        assert_eq!(link_targets(text), ["docs/a.png"]);
    }
}
