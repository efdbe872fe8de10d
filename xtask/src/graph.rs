//! `cargo xtask graph [CRATE_DIR]...`: no file of a crate imports a file
//! that imports it back, directly or around a longer circle.
//!
//! The files are the crate's modules as its root (`src/lib.rs`, else
//! `src/main.rs`) declares them (`mod name;` finds `name.rs` or
//! `name/mod.rs` beside the declaring file, or in the folder named after
//! it). A file imports another when its code names a path into it: in a
//! `use` (grouped, renamed, globbed) or inline (`crate::a::b::Name`,
//! `super::Name`, `self::a::Name`), with comments and string literals
//! skipped, so an intra-doc link is no import. A name a module re-exports
//! (`pub use`) leads to the file that defines it, and a `#[macro_export]`
//! macro (`crate::__setters!`) to the file that defines it; test modules
//! count like the rest.
//!
//! The generated client (`include!` of a file of `OUT_DIR`) cannot be
//! read here: its file imports what `build.rs` tells progenitor to name in
//! it, read as the `crate::...` paths of `build.rs`'s string literals
//! (`crate::hooks::HookState`).
//!
//! Every circle is reported as the files in it and, for each import between
//! them, the names that tie them, so that a developer sees what to move.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One file of the crate: its module path and its code, comments and
/// strings blanked.
#[derive(Debug)]
struct File {
    /// `["consumer", "shared"]`; empty for the root.
    module: Vec<String>,
    /// Relative to the crate's folder.
    path: String,
    code: String,
    /// The crate paths the generated code in this file names.
    generated: Vec<String>,
}

/// The crate read: its files, by module path.
#[derive(Debug)]
pub struct Crate {
    files: Vec<File>,
    by_module: BTreeMap<Vec<String>, usize>,
    /// `#[macro_export]` macros, by name: the file that defines each.
    macros: BTreeMap<String, usize>,
}

/// An import of one file by another: the names it takes.
pub type Edges = BTreeMap<(usize, usize), BTreeSet<String>>;

impl Crate {
    /// Reads the crate in `dir` (with `src/lib.rs` or `src/main.rs`).
    pub fn read(dir: &Path) -> Result<Crate, String> {
        let root = ["src/lib.rs", "src/main.rs"]
            .iter()
            .map(|r| dir.join(r))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("{}: no src/lib.rs or src/main.rs", dir.display()))?;
        let build_rs = std::fs::read_to_string(dir.join("build.rs")).unwrap_or_default();
        let generated = crate_paths_in_strings(&build_rs);
        let mut krate = Crate {
            files: Vec::new(),
            by_module: BTreeMap::new(),
            macros: BTreeMap::new(),
        };
        krate.add(dir, &root, Vec::new(), &generated)?;
        Ok(krate)
    }

    fn add(
        &mut self,
        dir: &Path,
        path: &Path,
        module: Vec<String>,
        generated: &[String],
    ) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let code = blank_comments_and_strings(&text);
        let index = self.files.len();
        let relative = path
            .strip_prefix(dir)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned();
        let includes_generated = text.contains("include!(concat!(env!(\"OUT_DIR\")");
        for name in exported_macros(&code) {
            self.macros.insert(name, index);
        }
        self.by_module.insert(module.clone(), index);
        self.files.push(File {
            module: module.clone(),
            path: relative,
            code: code.clone(),
            generated: if includes_generated {
                generated.to_vec()
            } else {
                Vec::new()
            },
        });
        // Children live beside a root or `mod.rs`, else in the folder named
        // after the file.
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parent = path.parent().unwrap_or(dir);
        let folder: PathBuf = if matches!(file_name, "lib.rs" | "main.rs" | "mod.rs") {
            parent.to_path_buf()
        } else {
            parent.join(file_name.trim_end_matches(".rs"))
        };
        for child in declared_modules(&code) {
            let candidates = [
                folder.join(format!("{child}.rs")),
                folder.join(&child).join("mod.rs"),
            ];
            let Some(found) = candidates.iter().find(|p| p.is_file()) else {
                continue; // an inline module: its code is this file's
            };
            let mut sub = module.clone();
            sub.push(child);
            self.add(dir, found, sub, generated)?;
        }
        Ok(())
    }

    /// Every import between two files of the crate, with the names taken.
    pub fn edges(&self) -> Edges {
        let mut edges = Edges::new();
        for (from, file) in self.files.iter().enumerate() {
            let mut paths = paths_in(&file.code);
            paths.extend(file.generated.iter().map(|p| split_path(p)));
            for path in paths {
                if let Some((to, name)) = self.resolve(&file.module, &path, 0)
                    && to != from
                {
                    edges.entry((from, to)).or_default().insert(name);
                }
            }
        }
        edges
    }

    /// The file `path` (as written in module `at`) leads to, and the name
    /// it takes there.
    fn resolve(&self, at: &[String], path: &[String], depth: usize) -> Option<(usize, String)> {
        if depth > 8 || path.is_empty() {
            return None;
        }
        let (mut module, rest): (Vec<String>, &[String]) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (at.to_vec(), &path[1..]),
            "super" => {
                let mut module = at.to_vec();
                let mut rest = path;
                while rest.first().map(String::as_str) == Some("super") {
                    module.pop();
                    rest = &rest[1..];
                }
                (module, rest)
            }
            _ => return None,
        };
        let mut i = 0;
        while i < rest.len() {
            let mut deeper = module.clone();
            deeper.push(rest[i].clone());
            if self.by_module.contains_key(&deeper) {
                module = deeper;
                i += 1;
            } else {
                break;
            }
        }
        let file = *self.by_module.get(&module)?;
        // A path to a module itself (`use super::flush;`) is tied by its name.
        let name = rest
            .get(i)
            .or_else(|| rest.last())
            .cloned()
            .unwrap_or_else(|| "(the module)".to_owned());
        if name.ends_with('!') {
            let macro_name = name.trim_end_matches('!');
            if let Some(&defined) = self.macros.get(macro_name) {
                return Some((defined, name));
            }
        }
        // A name this module re-exports leads to where it comes from.
        if let Some(source) = reexport(&self.files[file].code, &name) {
            let mut source = split_path(&source);
            // `pub use a::Name` names `a` from here.
            if !matches!(
                source.first().map(String::as_str),
                Some("crate" | "self" | "super")
            ) {
                source.insert(0, "self".to_owned());
            }
            if let Some(found) = self.resolve(&module, &source, depth + 1) {
                return Some(found);
            }
        }
        Some((file, name))
    }

    /// The file at `index`, relative to the crate's folder.
    pub fn path(&self, index: usize) -> &str {
        &self.files[index].path
    }
}

/// The circles of `edges`: each strongly connected set of two files or
/// more, its files sorted.
pub fn circles(edges: &Edges) -> Vec<Vec<usize>> {
    let nodes: BTreeSet<usize> = edges.keys().flat_map(|&(a, b)| [a, b]).collect();
    let out = |n: usize| edges.keys().filter(move |(a, _)| *a == n).map(|(_, b)| *b);
    // Tarjan's algorithm, iterative over a small graph: recursion is fine
    // at a crate's few hundred files.
    struct State {
        index: usize,
        indices: BTreeMap<usize, usize>,
        low: BTreeMap<usize, usize>,
        stack: Vec<usize>,
        on_stack: BTreeSet<usize>,
        found: Vec<Vec<usize>>,
    }
    fn visit(n: usize, s: &mut State, out: &dyn Fn(usize) -> Vec<usize>) {
        s.indices.insert(n, s.index);
        s.low.insert(n, s.index);
        s.index += 1;
        s.stack.push(n);
        s.on_stack.insert(n);
        for m in out(n) {
            if !s.indices.contains_key(&m) {
                visit(m, s, out);
                let low = s.low[&n].min(s.low[&m]);
                s.low.insert(n, low);
            } else if s.on_stack.contains(&m) {
                let low = s.low[&n].min(s.indices[&m]);
                s.low.insert(n, low);
            }
        }
        if s.low[&n] == s.indices[&n] {
            let mut set = Vec::new();
            while let Some(m) = s.stack.pop() {
                s.on_stack.remove(&m);
                set.push(m);
                if m == n {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort_unstable();
                s.found.push(set);
            }
        }
    }
    let mut state = State {
        index: 0,
        indices: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let out = |n: usize| out(n).collect::<Vec<_>>();
    for &n in &nodes {
        if !state.indices.contains_key(&n) {
            visit(n, &mut state, &out);
        }
    }
    state.found.sort();
    state.found
}

/// The report of a crate: every circle with the imports that make it.
pub fn report(krate: &Crate, edges: &Edges, circles: &[Vec<usize>]) -> String {
    let mut text = String::new();
    for (i, circle) in circles.iter().enumerate() {
        let files: Vec<&str> = circle.iter().map(|&f| krate.path(f)).collect();
        text.push_str(&format!(
            "circle {}: {} files: {}\n",
            i + 1,
            circle.len(),
            files.join(", ")
        ));
        for ((from, to), names) in edges {
            if circle.contains(from) && circle.contains(to) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                text.push_str(&format!(
                    "  {} -> {}: {}\n",
                    krate.path(*from),
                    krate.path(*to),
                    names.join(", ")
                ));
            }
        }
    }
    text
}

/// `text` with comments removed and string and char literals emptied,
/// lines kept.
fn blank_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut level = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    level += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    level -= 1;
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match chars.get(j) {
                    None => break,
                    Some('"') if (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some('\n') => out.push('\n'),
                    _ => {}
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1b}'), not a lifetime ('a).
            let end = if next == Some('\\') {
                chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|p| i + 1 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The modules `code` declares from files: `mod name;`, with any
/// visibility and attributes.
fn declared_modules(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for statement in code.split(';') {
        let words: Vec<&str> = statement.split_whitespace().collect();
        if let Some(at) = words.iter().rposition(|w| *w == "mod")
            && at + 2 == words.len()
            && !words[at + 1].contains('{')
        {
            let name = words[at + 1];
            if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                found.push(name.to_owned());
            }
        }
    }
    found
}

/// The `#[macro_export]` macros `code` defines.
fn exported_macros(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[macro_export]") {
        rest = &rest[at..];
        if let Some(def) = rest.find("macro_rules!") {
            let after = rest[def + "macro_rules!".len()..].trim_start();
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push(name);
        }
        rest = &rest["#[macro_export]".len()..];
    }
    found
}

fn split_path(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The `crate::...` paths in the string literals of `build_rs`: what the
/// generated code is told to name.
fn crate_paths_in_strings(build_rs: &str) -> Vec<String> {
    build_rs
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("crate::"))
        .map(str::to_owned)
        .collect()
}

/// Every path `code` names that starts with `crate`, `self` or `super`:
/// inline ones, and each leaf of a `use` tree.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    // `use` trees first: they may group.
    for statement in code.split(';') {
        let trimmed = statement.trim_start();
        let Some(at) = find_use(trimmed) else {
            continue;
        };
        let mut leaves = Vec::new();
        expand_use(&tidy(&trimmed[at..]), &mut Vec::new(), &mut leaves);
        paths.extend(leaves.into_iter().filter(|p| {
            matches!(
                p.first().map(String::as_str),
                Some("crate" | "self" | "super")
            )
        }));
    }
    // Inline paths.
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| code_at(&chars, i, p) && !ident_before(&chars, i));
        if let Some(start) = starts {
            let mut j = i + start.len();
            let mut path = vec![start.trim_end_matches("::").to_owned()];
            // A path that ends in `::{` or `::*` is a `use` tree's, read above.
            let mut whole = true;
            loop {
                let segment: String = chars[j..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .collect();
                if segment.is_empty() {
                    whole = false;
                    break;
                }
                j += segment.chars().count();
                let is_macro = chars.get(j) == Some(&'!');
                path.push(if is_macro {
                    format!("{segment}!")
                } else {
                    segment
                });
                if code_at(&chars, j, "::") {
                    j += 2;
                } else {
                    break;
                }
            }
            if whole {
                paths.push(path);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    paths
}

fn code_at(chars: &[char], i: usize, text: &str) -> bool {
    text.chars()
        .enumerate()
        .all(|(k, c)| chars.get(i + k) == Some(&c))
}

/// Where a `use` tree starts in a statement: after `use`, with any
/// visibility and attributes before it.
fn find_use(statement: &str) -> Option<usize> {
    let mut offset = 0;
    for word in statement.split_inclusive(char::is_whitespace) {
        if word.trim() == "use" {
            return Some(offset + word.len());
        }
        let w = word.trim();
        let attribute_or_visibility = w.starts_with("#[")
            || w.starts_with("pub")
            || w.ends_with(']')
            || w.ends_with(')')
            || w.is_empty();
        if !attribute_or_visibility {
            return None;
        }
        offset += word.len();
    }
    None
}

/// A `use` tree with one space where words need one (`e as f`), none
/// elsewhere: `crate::a::{b,c::{d,e as f}}`.
fn tidy(tree: &str) -> String {
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut out = words.join(" ");
    for token in ["::", "{", "}", ","] {
        out = out
            .replace(&format!(" {token}"), token)
            .replace(&format!("{token} "), token);
    }
    out
}

/// The leaves of a tidy `use` tree (`crate::a::{b,c::{d,e as f}}`).
fn expand_use(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Some(brace) = tree.find('{') else {
        let mut path = prefix.clone();
        let leaf = tree.split(" as ").next().unwrap_or(tree).trim();
        path.extend(split_path(leaf.trim_end_matches("::*")));
        if tree.ends_with("::*") {
            path.push("*".to_owned());
        }
        out.push(path);
        return;
    };
    let head = &tree[..brace];
    let inner = tree[brace + 1..]
        .strip_suffix('}')
        .unwrap_or(&tree[brace + 1..]);
    let before = prefix.len();
    prefix.extend(split_path(head));
    let mut level = 0;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => level += 1,
            '}' => level -= 1,
            ',' if level == 0 => {
                expand_use(&inner[start..i], prefix, out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        expand_use(&inner[start..], prefix, out);
    }
    prefix.truncate(before);
}

/// What `name` is re-exported from in `code` (`pub use a::b::Name;`,
/// `pub(crate) use a::{Name, ...}`, `pub use x as Name`), as a path.
fn reexport(code: &str, name: &str) -> Option<String> {
    for statement in code.split(';') {
        let trimmed = statement.trim_start();
        let Some(at) = find_use(trimmed) else {
            continue;
        };
        if !trimmed[..at].contains("pub") {
            continue;
        }
        let mut leaves = Vec::new();
        expand_use(&tidy(&trimmed[at..]), &mut Vec::new(), &mut leaves);
        if let Some(path) = leaves
            .iter()
            .find(|p| p.last().map(String::as_str) == Some(name))
        {
            return Some(path.join("::"));
        }
    }
    None
}

/// Checks each crate folder of `dirs`; prints every circle; the number of
/// circles found.
pub fn check(dirs: &[PathBuf]) -> Result<usize, String> {
    let mut found = 0;
    for dir in dirs {
        let krate = Crate::read(dir)?;
        let edges = krate.edges();
        let circles = circles(&edges);
        let name = dir.display();
        if circles.is_empty() {
            println!(
                "xtask graph: {name}: {} files, {} imports between them, no circle",
                krate.files.len(),
                edges.len()
            );
        } else {
            print!(
                "xtask graph: {name}: {} circles\n{}",
                circles.len(),
                report(&krate, &edges, &circles)
            );
        }
        found += circles.len();
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_of(files: &[(&str, &str)]) -> (tempfile_dir::Dir, Crate) {
        let dir = tempfile_dir::Dir::new();
        for (path, text) in files {
            let full = dir.0.join(path);
            std::fs::create_dir_all(full.parent().expect("a folder")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
        let krate = Crate::read(&dir.0).expect("read");
        (dir, krate)
    }

    /// A folder removed on drop (no dev-dependency for it).
    mod tempfile_dir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static N: AtomicUsize = AtomicUsize::new(0);
                let path = std::env::temp_dir().join(format!(
                    "xtask-graph-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::SeqCst)
                ));
                std::fs::create_dir_all(&path).expect("mkdir");
                Dir(path)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_circle_is_found_with_the_names_that_tie_it() {
        let (_dir, krate) = crate_of(&[
            (
                "src/lib.rs",
                "mod a;\nmod b;\npub mod c;\npub use a::Alpha;\n",
            ),
            (
                "src/a.rs",
                "use crate::b::{Beta, other::Deep};\npub struct Alpha;\n",
            ),
            (
                "src/b.rs",
                "mod other;\n// crate::a::Commented\nfn f() { let _ = crate::Alpha; }\npub struct Beta;\n",
            ),
            (
                "src/b/other.rs",
                "pub struct Deep; const S: &str = \"crate::c::InAString\";\n",
            ),
            ("src/c.rs", "use super::b::Beta as B;\n"),
        ]);
        let edges = krate.edges();
        let circles = circles(&edges);
        let text = report(&krate, &edges, &circles);
        assert_eq!(circles.len(), 1, "{text}");
        assert!(
            text.contains("circle 1: 2 files: src/a.rs, src/b.rs"),
            "{text}"
        );
        assert!(text.contains("src/a.rs -> src/b.rs: Beta"), "{text}");
        // Through the root's re-export, to the file that defines it.
        assert!(text.contains("src/b.rs -> src/a.rs: Alpha"), "{text}");
        let deep = edges
            .keys()
            .any(|&(f, t)| krate.path(f) == "src/a.rs" && krate.path(t) == "src/b/other.rs");
        assert!(deep, "{edges:?}");
        // Comments and strings import nothing.
        assert!(
            !text.contains("Commented") && !edges.keys().any(|&(_, t)| krate.path(t) == "src/c.rs")
        );
    }

    #[test]
    fn generated_code_imports_what_build_rs_names_and_macros_lead_to_their_file() {
        let (_dir, krate) = crate_of(&[
            (
                "build.rs",
                "fn main() { x.with_inner_type(\"crate::hooks::HookState\".parse().unwrap()); }",
            ),
            (
                "src/lib.rs",
                "mod hooks;\nmod raw;\nmod setters;\nmod user;\n",
            ),
            (
                "src/raw.rs",
                "include!(concat!(env!(\"OUT_DIR\"), \"/raw.rs\"));\n",
            ),
            ("src/hooks.rs", "pub struct HookState;\n"),
            (
                "src/setters.rs",
                "#[macro_export]\nmacro_rules! __setters { () => {} }\n",
            ),
            (
                "src/user.rs",
                "crate::__setters! {}\nuse crate::raw::Client;\n",
            ),
        ]);
        let edges = krate.edges();
        let named = |from: &str, to: &str| {
            edges.iter().find_map(|(&(f, t), names)| {
                (krate.path(f) == from && krate.path(t) == to).then(|| names.clone())
            })
        };
        assert_eq!(
            named("src/raw.rs", "src/hooks.rs"),
            Some(["HookState".to_owned()].into())
        );
        assert_eq!(
            named("src/user.rs", "src/setters.rs"),
            Some(["__setters!".to_owned()].into())
        );
        assert!(circles(&edges).is_empty());
    }

    #[test]
    fn use_trees_expand_to_their_leaves() {
        let mut out = Vec::new();
        expand_use(
            &tidy("crate::a::{ b,\n c::{d, e as f}, g::* }"),
            &mut Vec::new(),
            &mut out,
        );
        let out: Vec<String> = out.iter().map(|p| p.join("::")).collect();
        assert_eq!(
            out,
            [
                "crate::a::b",
                "crate::a::c::d",
                "crate::a::c::e",
                "crate::a::g::*"
            ]
        );
    }
}
