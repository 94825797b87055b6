//! `cargo xtask cycles [DIR…]`: import circles between the source files of a crate. A file
//! imports another when it names an item of that file's module (`use crate::a::b`,
//! `crate::a::b::f()`, `super::x`, a child's `child::x`); `mod` declarations and re-exports
//! (`pub use`: a module's public face, not what its code depends on) are not imports, nor is
//! anything in a file's `#[cfg(test)]` module. A path through a re-export is followed to the
//! file that defines the item (`crate::kernel::App`, re-exported by `kernel/mod.rs` from
//! `kernel/app.rs`, imports `kernel/app.rs`), so a façade cannot hide a circle. Files that reach each
//! other through such imports, directly or around a circle, are reported together (Tarjan's
//! strongly connected components). `cargo xtask floors` (the first step of `cargo xtask test`)
//! fails on any.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A crate's files by module path (`["api", "extract"]` for `src/api/extract.rs`).
type Modules = BTreeMap<Vec<String>, PathBuf>;

/// The module path of `file` under `src`: `lib.rs`/`main.rs` the root, `a/mod.rs` and `a.rs`
/// the module `a`.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if !(matches!(stem, "lib" | "main" | "mod") && (stem == "mod" || parts.is_empty())) {
        parts.push(stem.to_owned());
    }
    Some(parts)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The text of `source` without comments and string literals (whose words are not imports).
fn code_only(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
                out.push_str("\"\"");
            }
            c => out.push(c),
        }
    }
    out
}

/// `code` without its `pub use …;` and `pub(…) use …;` statements.
fn without_reexports(code: &str) -> String {
    split_reexports(code).0
}

/// `code` without its re-exports, and the re-exports' statements (the text after `use`).
fn split_reexports(code: &str) -> (String, Vec<&str>) {
    let mut out = String::with_capacity(code.len());
    let mut statements = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("pub") {
        let (before, after) = rest.split_at(i);
        out.push_str(before);
        let tail = after[3..].trim_start();
        let tail = match tail.strip_prefix('(') {
            Some(t) => t.split_once(')').map_or(t, |(_, t)| t).trim_start(),
            None => tail,
        };
        let boundary = i == 0 || !before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
        match tail.strip_prefix("use ").filter(|_| boundary) {
            Some(statement) => {
                let (used, r) = statement.split_once(';').unwrap_or((statement, ""));
                statements.push(used);
                rest = r;
            }
            None => {
                out.push_str("pub");
                rest = &after[3..];
            }
        }
    }
    out.push_str(rest);
    (out, statements)
}

/// What each module re-exports: the names it gives (`"*"` for a glob) and the absolute paths
/// they stand for.
type Reexports = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

fn reexports(modules: &Modules, sources: &BTreeMap<PathBuf, String>) -> Reexports {
    let mut out = Reexports::new();
    for (module, file) in modules {
        let code = code_only(&sources[file]);
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        let names = out.entry(module.clone()).or_default();
        for statement in split_reexports(code).1 {
            // `a::{b as c}`: the name given is `c`; `a::*`: every name of `a`.
            let glob = statement.trim_end().ends_with('*');
            for segments in raw_paths(statement) {
                let mut child = module.clone();
                child.extend(segments.iter().cloned());
                // `pub use child::*` names the child module itself.
                let path = match start(&segments, module, modules) {
                    Some((mut base, rest)) => {
                        base.extend(rest.iter().filter(|s| *s != "self").cloned());
                        base
                    }
                    None if segments.len() == 1 && modules.contains_key(&child) => child,
                    None => continue,
                };
                let name = match glob {
                    true => "*".to_owned(),
                    false => match statement.split_once(" as ") {
                        Some((_, alias)) if !statement.contains('{') => alias.trim().to_owned(),
                        _ => path.last().cloned().unwrap_or_default(),
                    },
                };
                names.insert(name, path);
            }
        }
    }
    out
}

/// Whether `code` defines an item called `name` itself.
fn defines(code: &str, name: &str) -> bool {
    [
        "struct",
        "enum",
        "fn",
        "type",
        "trait",
        "const",
        "static",
        "mod",
        "union",
        "macro_rules!",
    ]
    .iter()
    .any(|kind| {
        code.match_indices(&format!("{kind} {name}")).any(|(i, m)| {
            let after = code[i + m.len()..].chars().next();
            !after.is_some_and(is_ident)
        })
    })
}

/// `path` with every re-export on its way replaced by what it stands for, so that it names
/// the file defining its item.
fn through_reexports(
    modules: &Modules,
    sources: &BTreeMap<PathBuf, String>,
    reexports: &Reexports,
    mut path: Vec<String>,
) -> Vec<String> {
    // A bound, for re-exports that name each other.
    for _ in 0..16 {
        let Some(n) = (0..=path.len())
            .rev()
            .find(|n| modules.contains_key(&path[..*n]))
        else {
            break;
        };
        let (module, rest) = path.split_at(n);
        let Some(name) = rest.first() else { break };
        let names = &reexports[module];
        let target = match names.get(name) {
            Some(target) => target.clone(),
            None => match names.get("*") {
                Some(glob) if !defines(&code_only(&sources[&modules[module]]), name) => {
                    let mut target = glob.clone();
                    target.push(name.clone());
                    target
                }
                _ => break,
            },
        };
        let mut next = target;
        next.extend(rest[1..].iter().cloned());
        if next == path {
            break;
        }
        path = next;
    }
    path
}

/// The module paths `code` (of module `at`, in a crate of `modules`) names: each path that
/// starts with `crate`, `self`, a run of `super` or the name of one of `at`'s child modules,
/// with every item of its `{…}` groups (nested, over several lines) its own path.
fn named_paths(code: &str, at: &[String], modules: &Modules) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for segments in raw_paths(code) {
        let Some((base, rest)) = start(&segments, at, modules) else {
            continue;
        };
        let mut path = base;
        path.extend(rest.iter().filter(|s| *s != "self").cloned());
        out.push(path);
    }
    out
}

/// Every path in `code` (`a::b::{c, d::e}` is `a::b::c` and `a::b::d::e`), as segments.
fn raw_paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let boundary = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
        if boundary && (chars[i].is_alphabetic() || chars[i] == '_') {
            path_at(&chars, &mut i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_space(chars: &[char], i: &mut usize) {
    while *i < chars.len() && chars[*i].is_whitespace() {
        *i += 1;
    }
}

/// Reads the path at `i` (after `prefix`) into `out`, a group's items each as its own path.
fn path_at(chars: &[char], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    // A lone word (`self`, `pub(crate)`) is no path; `super::*` is.
    let mut joined = !prefix.is_empty();
    loop {
        let from = *i;
        while *i < chars.len() && is_ident(chars[*i]) {
            *i += 1;
        }
        if *i == from {
            break;
        }
        prefix.push(chars[from..*i].iter().collect());
        let mut j = *i;
        skip_space(chars, &mut j);
        if !(chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':')) {
            break;
        }
        j += 2;
        joined = true;
        skip_space(chars, &mut j);
        *i = j;
        if chars.get(j) == Some(&'{') {
            *i += 1;
            group_at(chars, i, &prefix, out);
            return;
        }
    }
    if joined {
        out.push(prefix);
    }
}

/// Reads the items of the group whose `{` is just before `i`, up to its `}`.
fn group_at(chars: &[char], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    while *i < chars.len() {
        skip_space(chars, i);
        match chars.get(*i) {
            Some('}') => {
                *i += 1;
                return;
            }
            Some(c) if is_ident(*c) => path_at(chars, i, prefix.to_vec(), out),
            // `,`, a glob's `*`, the `as` of a rename and its name are skipped.
            _ => *i += 1,
        }
    }
}

/// Where a path starts: `crate` (the root), `self` or a child module's name (`at`), or
/// `super` repeated (the ancestors of `at`), and the segments after that; `None` for any
/// other path.
fn start<'a>(
    segments: &'a [String],
    at: &[String],
    modules: &Modules,
) -> Option<(Vec<String>, &'a [String])> {
    let (first, rest) = segments.split_first()?;
    match first.as_str() {
        "crate" => return Some((Vec::new(), rest)),
        "self" => return Some((at.to_vec(), rest)),
        "super" => {}
        _ => {
            let mut child = at.to_vec();
            child.push(first.clone());
            return (!rest.is_empty() && modules.contains_key(&child))
                .then(|| (at.to_vec(), segments));
        }
    }
    let depth = segments.iter().take_while(|s| *s == "super").count();
    (depth <= at.len()).then(|| (at[..at.len() - depth].to_vec(), &segments[depth..]))
}

/// The file a path points into: the longest module prefix of it that is a file.
fn file_of<'a>(modules: &'a Modules, path: &[String]) -> Option<&'a PathBuf> {
    (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]))
}

/// Files with the files they import.
pub(crate) type Graph = BTreeMap<PathBuf, BTreeSet<PathBuf>>;

/// The import edges between the files of `modules` (file → files it imports).
pub(crate) fn edges(modules: &Modules, sources: &BTreeMap<PathBuf, String>) -> Graph {
    let reexports = reexports(modules, sources);
    let mut out: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (module, file) in modules {
        let code = without_reexports(&code_only(&sources[file]));
        // A file's tests (its `#[cfg(test)]` module, at its end) may use anything, as a
        // crate's dev-dependencies may.
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        let targets = out.entry(file.clone()).or_default();
        for path in named_paths(code, module, modules) {
            let path = through_reexports(modules, sources, &reexports, path);
            if let Some(to) = file_of(modules, &path).filter(|to| *to != file) {
                targets.insert(to.clone());
            }
        }
    }
    out
}

/// The circles of `graph`: its strongly connected components of more than one file.
pub(crate) fn circles(graph: &Graph) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).expect("visited").1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).expect("visited").1 = low;
                }
            }
            let (i, low) = self.index[v];
            if i == low {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

/// The import graph of the crate at `dir` (relative to `root`): each file of its `src/`
/// (relative to `root`) with the files it imports, and each file's code without comments and
/// strings.
pub(crate) fn graph(root: &Path, dir: &Path) -> Result<(Graph, BTreeMap<PathBuf, String>)> {
    let src = root.join(dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files)?;
    let mut modules = Modules::new();
    let mut sources = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(&f).to_path_buf();
        if let Some(m) = module_of(&src, &f) {
            sources.insert(rel.clone(), std::fs::read_to_string(&f)?);
            modules.insert(m, rel);
        }
    }
    let graph = edges(&modules, &sources);
    let code = sources
        .into_iter()
        .map(|(path, text)| (path, code_only(&text)))
        .collect();
    Ok((graph, code))
}

/// The circles among the files of each crate in `dirs`, each as `dir: N files: a, b, …`
/// (`CYCLES_EDGES` set: every file's imports are printed too).
pub(crate) fn find(root: &Path, dirs: &[PathBuf]) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for dir in dirs {
        let (graph, _) = graph(root, dir)?;
        if std::env::var_os("CYCLES_EDGES").is_some() {
            for (from, to) in &graph {
                println!("{} -> {:?}", from.display(), to);
            }
        }
        for circle in circles(&graph) {
            let names: Vec<String> = circle.iter().map(|p| p.display().to_string()).collect();
            found.push(format!(
                "{}: {} files: {}",
                dir.display(),
                names.len(),
                names.join(", ")
            ));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_of(files: &[(&str, &str)]) -> (Modules, BTreeMap<PathBuf, String>) {
        let src = Path::new("src");
        let mut modules = Modules::new();
        let mut sources = BTreeMap::new();
        for (name, text) in files {
            let path = src.join(name);
            modules.insert(module_of(src, &path).unwrap(), path.clone());
            sources.insert(path, text.to_string());
        }
        (modules, sources)
    }

    #[test]
    fn module_paths_of_files() {
        let src = Path::new("src");
        assert!(module_of(src, &src.join("lib.rs")).unwrap().is_empty());
        assert_eq!(module_of(src, &src.join("api/mod.rs")).unwrap(), ["api"]);
        assert_eq!(
            module_of(src, &src.join("api/extract.rs")).unwrap(),
            ["api", "extract"]
        );
        assert_eq!(module_of(src, &src.join("store.rs")).unwrap(), ["store"]);
    }

    #[test]
    fn a_circle_through_three_files_is_found_and_comments_are_not_imports() {
        let (modules, sources) = crate_of(&[
            ("lib.rs", "mod a; mod b; mod c; mod d;"),
            ("a.rs", "use crate::b::{f, g};\nfn x() { f() }"),
            ("b.rs", "use crate::c::Thing; // crate::d::nothing"),
            (
                "c.rs",
                "fn y() { crate::a::x() } const S: &str = \"crate::d\";",
            ),
            (
                "d.rs",
                "/* use crate::a; */ use super::c::Thing; pub(crate) fn f(&self) {}",
            ),
        ]);
        let graph = edges(&modules, &sources);
        assert_eq!(graph[Path::new("src/d.rs")].len(), 1, "{graph:?}");
        let found = circles(&graph);
        assert_eq!(found.len(), 1, "{found:?}");
        let names: Vec<_> = found[0].iter().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["src/a.rs", "src/b.rs", "src/c.rs"]);
    }

    #[test]
    fn a_parent_and_its_child_importing_each_other_are_a_circle() {
        let (modules, sources) = crate_of(&[
            ("lib.rs", "mod spend; mod store;"),
            ("spend.rs", "use crate::store::Store;"),
            (
                "store/mod.rs",
                "mod spend; use spend::HourlySums; pub struct Store;",
            ),
            (
                "store/spend.rs",
                "use crate::spend::Group; pub struct HourlySums;",
            ),
        ]);
        let found = circles(&edges(&modules, &sources));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].len(), 3, "{found:?}");
    }

    #[test]
    fn re_exports_are_not_imports() {
        let (modules, sources) = crate_of(&[
            (
                "lib.rs",
                "pub mod rpc;\npub use rpc::Client;\npub(crate) use rpc::{a, b};\npub struct Key;",
            ),
            ("rpc.rs", "use crate::Key; pub struct Client;"),
        ]);
        assert!(circles(&edges(&modules, &sources)).is_empty());
        let (modules, sources) = crate_of(&[
            ("lib.rs", "pub mod rpc;\nuse rpc::Client;\npub struct Key;"),
            ("rpc.rs", "use crate::Key; pub struct Client;"),
        ]);
        assert_eq!(circles(&edges(&modules, &sources)).len(), 1);
    }

    #[test]
    fn a_path_through_a_re_export_imports_the_defining_file() {
        // a → kernel (façade) → kernel/app.rs, which imports a: a circle the façade hid.
        let (modules, sources) = crate_of(&[
            ("lib.rs", "pub mod a; pub mod kernel;"),
            ("a.rs", "use crate::kernel::App; pub fn f() {}"),
            ("kernel/mod.rs", "pub mod app;\npub use app::App;"),
            ("kernel/app.rs", "pub struct App; fn g() { crate::a::f() }"),
        ]);
        let graph = edges(&modules, &sources);
        assert!(graph[Path::new("src/a.rs")].contains(Path::new("src/kernel/app.rs")));
        assert_eq!(circles(&graph).len(), 1, "{graph:?}");
        // Through a group with a rename, a glob, and a chain of two façades.
        let (modules, sources) = crate_of(&[
            (
                "lib.rs",
                "pub mod x; pub mod y; pub use y::Thing;\nuse crate::x::Renamed;",
            ),
            (
                "x/mod.rs",
                "pub mod deep;\npub use deep::{Inner as Renamed, Other};",
            ),
            ("x/deep.rs", "pub struct Inner; pub struct Other;"),
            ("y/mod.rs", "pub mod t;\npub use t::*;\npub struct Own;"),
            ("y/t.rs", "pub struct Thing;"),
            ("z.rs", "use crate::Thing; use crate::y::Own;"),
        ]);
        let graph = edges(&modules, &sources);
        assert!(graph[Path::new("src/lib.rs")].contains(Path::new("src/x/deep.rs")));
        let z: Vec<_> = graph[Path::new("src/z.rs")].iter().collect();
        assert_eq!(z, [Path::new("src/y/mod.rs"), Path::new("src/y/t.rs")]);
    }

    #[test]
    fn a_group_from_the_root_names_its_items_not_the_root() {
        let (modules, sources) = crate_of(&[
            ("lib.rs", "mod a; mod b; mod c; fn start() { a::run() }"),
            (
                "a.rs",
                "use crate::{\n    b,\n    c::{self, Thing as T},\n};\npub fn run() {}",
            ),
            ("b.rs", "pub fn f() {}"),
            ("c.rs", "pub struct Thing;"),
        ]);
        let graph = edges(&modules, &sources);
        assert_eq!(graph[Path::new("src/a.rs")].len(), 2, "{graph:?}");
        assert!(circles(&graph).is_empty());
    }

    #[test]
    fn a_files_tests_are_not_its_imports() {
        let (modules, sources) = crate_of(&[
            ("main.rs", "mod relayer; fn main() { relayer::run() }"),
            (
                "relayer.rs",
                "pub fn run() {}\n#[cfg(test)]\nmod tests { use super::*; }",
            ),
        ]);
        assert!(circles(&edges(&modules, &sources)).is_empty());
    }

    #[test]
    fn imports_pointing_down_make_no_circle() {
        let (modules, sources) = crate_of(&[
            ("lib.rs", "pub mod api; pub mod store;"),
            ("api/mod.rs", "mod extract; use crate::store::Store;"),
            ("api/extract.rs", "use crate::store::Row;"),
            ("store.rs", "pub struct Store; pub struct Row;"),
        ]);
        assert!(circles(&edges(&modules, &sources)).is_empty());
    }
}
