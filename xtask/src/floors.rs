//! `cargo xtask floors` (and the first step of `cargo xtask test`): every workspace crate's
//! dependencies on other workspace crates point down the floors that `docs/ARCHITECTURE.md`'s
//! table sets (apps → services → libraries → contracts); inside the relayer and the indexer,
//! every file imports only files of its own floor or of those its service's table lets it use,
//! and only the `api` floor names the HTTP framework; and no source files of any crate import
//! each other around a circle ([`crate::cycles`]). The tables are read from the document, so
//! the rule and its check cannot drift apart. `[dev-dependencies]` and a file's tests are
//! exempt: tests may run the real thing end to end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The document holding the table.
pub(crate) const DOCUMENT: &str = "docs/ARCHITECTURE.md";

/// A floor of the table: its name, the path prefixes that are on it, and the floors it may
/// use (`everything`: any).
#[derive(Debug, PartialEq)]
pub(crate) struct Floor {
    name: String,
    paths: Vec<String>,
    may_use: Vec<String>,
}

/// The services whose modules have a table, each with its section of the document.
const SERVICES: [(&str, &str); 2] = [
    ("relayer", "Floors of the relayer"),
    ("indexer", "Floors of the indexer"),
];

/// The rows of the table under `## {heading}`: `| floor | paths | may use |`, paths and
/// floors in backticks and commas respectively.
pub(crate) fn parse_table(doc: &str, heading: &str) -> Result<Vec<Floor>> {
    let section = doc
        .split("\n## ")
        .find(|s| s.lines().next() == Some(heading))
        .with_context(|| format!("no `## {heading}` section"))?;
    let mut floors = Vec::new();
    for line in section.lines().filter(|l| l.starts_with('|')).skip(2) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [name, paths, may_use] = cells[..] else {
            bail!("a row of the floors table has not three cells: {line}");
        };
        let paths = paths
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|p| p.trim_end_matches("/*").trim_end_matches('/').to_owned())
            .collect();
        // "libraries below them, contracts" → libraries, contracts.
        let may_use = may_use
            .split(',')
            .filter_map(|f| f.split_whitespace().next())
            .map(str::to_owned)
            .collect();
        floors.push(Floor {
            name: name.to_owned(),
            paths,
            may_use,
        });
    }
    if floors.is_empty() {
        bail!("the table under `## {heading}` has no rows");
    }
    Ok(floors)
}

/// The floor of the crate at `dir` (relative to the workspace root): the longest path prefix.
fn floor_of<'a>(floors: &'a [Floor], dir: &str) -> Option<&'a Floor> {
    floors
        .iter()
        .flat_map(|f| f.paths.iter().map(move |p| (f, p)))
        .filter(|(_, p)| dir == p.as_str() || dir.starts_with(&format!("{p}/")))
        .max_by_key(|(_, p)| p.len())
        .map(|(f, _)| f)
}

/// The uses against the table among `crates` (name → directory, relative to the root) and
/// `uses` (crate → the workspace crates it depends on, dev-dependencies left out).
pub(crate) fn violations(
    floors: &[Floor],
    crates: &BTreeMap<String, String>,
    uses: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, dir) in crates {
        let Some(floor) = floor_of(floors, dir) else {
            out.push(format!("{name} ({dir}) is on no floor of {DOCUMENT}"));
            continue;
        };
        for used in uses.get(name).into_iter().flatten() {
            let Some(other) = crates.get(used).and_then(|d| floor_of(floors, d)) else {
                continue;
            };
            let allowed = floor
                .may_use
                .iter()
                .any(|f| f == "everything" || *f == other.name);
            if !allowed {
                out.push(format!(
                    "{name} ({}) uses {used} ({}): {} may use {}",
                    floor.name,
                    other.name,
                    floor.name,
                    floor.may_use.join(", ")
                ));
            }
        }
    }
    out
}

/// The imports of a service's files against its table (`graph`'s paths relative to the
/// service's `src/`), and the files off the `api` floor that name the HTTP framework (`code`:
/// each file's code without comments).
pub(crate) fn module_violations(
    floors: &[Floor],
    graph: &crate::cycles::Graph,
    code: &BTreeMap<PathBuf, String>,
) -> Vec<String> {
    let floor = |path: &Path| floor_of(floors, &path.to_string_lossy());
    let mut out = Vec::new();
    for (file, imports) in graph {
        let Some(from) = floor(file) else {
            out.push(format!("{} is on no floor", file.display()));
            continue;
        };
        for to in imports {
            let Some(other) = floor(to) else { continue };
            if other.name != from.name && !from.may_use.contains(&other.name) {
                out.push(format!(
                    "{} ({}) imports {} ({}): {} may use {}",
                    file.display(),
                    from.name,
                    to.display(),
                    other.name,
                    from.name,
                    from.may_use.join(", ")
                ));
            }
        }
        let names_axum = code.get(file).is_some_and(|c| c.contains("axum"));
        if names_axum && from.name != "api" {
            out.push(format!(
                "{} ({}) names axum: only the api floor does",
                file.display(),
                from.name
            ));
        }
    }
    out
}

/// `graph` and `code` with their paths relative to `src` (`relayer/src/api/mod.rs` →
/// `api/mod.rs`).
fn relative_to(
    src: &Path,
    (graph, code): (crate::cycles::Graph, BTreeMap<PathBuf, String>),
) -> (crate::cycles::Graph, BTreeMap<PathBuf, String>) {
    let rel = |p: &PathBuf| p.strip_prefix(src).unwrap_or(p).to_path_buf();
    let graph = graph
        .iter()
        .map(|(f, to)| (rel(f), to.iter().map(rel).collect()))
        .collect();
    let code = code.iter().map(|(f, c)| (rel(f), c.clone())).collect();
    (graph, code)
}

/// Checks the workspace at `root` against its document's tables.
pub(crate) fn check(root: &Path) -> Result<()> {
    let doc = std::fs::read_to_string(root.join(DOCUMENT))
        .with_context(|| format!("reading {DOCUMENT}"))?;
    let floors =
        parse_table(&doc, "Floors").with_context(|| format!("the floors table of {DOCUMENT}"))?;
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let metadata: Value = serde_json::from_slice(&out.stdout).context("cargo metadata's JSON")?;
    let root_text = root.canonicalize()?.to_string_lossy().into_owned();
    let mut crates = BTreeMap::new();
    let mut uses = BTreeMap::new();
    for p in metadata["packages"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or_default().to_owned();
        let manifest = p["manifest_path"].as_str().unwrap_or_default();
        let dir = Path::new(manifest)
            .parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = dir
            .strip_prefix(&root_text)
            .unwrap_or(&dir)
            .trim_start_matches('/')
            .to_owned();
        let normal: Vec<String> = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null() && d["path"].is_string())
            .filter_map(|d| d["name"].as_str().map(str::to_owned))
            .collect();
        uses.insert(name.clone(), normal);
        crates.insert(name, dir);
    }
    let mut found = violations(&floors, &crates, &uses);
    for (service, heading) in SERVICES {
        let table = parse_table(&doc, heading).with_context(|| format!("reading {DOCUMENT}"))?;
        let src = Path::new(service).join("src");
        let (graph, code) = relative_to(&src, crate::cycles::graph(root, Path::new(service))?);
        found.extend(
            module_violations(&table, &graph, &code)
                .into_iter()
                .map(|v| format!("{service}: {v}")),
        );
    }
    let with_sources: Vec<PathBuf> = crates
        .values()
        .filter(|dir| root.join(dir).join("src").is_dir())
        .map(PathBuf::from)
        .collect();
    found.extend(crate::cycles::find(root, &with_sources)?);
    if !found.is_empty() {
        bail!(
            "against the floors of {DOCUMENT}:\n  {}",
            found.join("\n  ")
        );
    }
    eprintln!(
        "==> floors: {} crates, every dependency and every import of the relayer and the \
         indexer points down, no import circle ({DOCUMENT})",
        crates.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# X\n\n## Floors\n\nText.\n\n| floor | paths | may use |\n|---|---|---|\n\
        | apps | `apps/bursar`, `apps/demo` | apps, services, libraries, contracts |\n\
        | services | `relayer/`, `indexer/` | libraries, contracts |\n\
        | libraries | `crates/client` | libraries below them, contracts |\n\
        | contracts | `contracts/*` | contracts only |\n\
        | tests and tools | `e2e/`, `xtask/` | everything |\n\n## Next\n";

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn the_table_is_read_from_the_document() {
        let floors = parse_table(DOC, "Floors").unwrap();
        assert_eq!(floors.len(), 5);
        assert_eq!(floors[1].paths, ["relayer", "indexer"]);
        assert_eq!(floors[2].may_use, ["libraries", "contracts"]);
        assert_eq!(floors[3].paths, ["contracts"]);
        assert_eq!(floors[4].may_use, ["everything"]);
        assert!(parse_table("# nothing here", "Floors").is_err());
        assert!(parse_table(DOC, "Floors of the relayer").is_err());
    }

    #[test]
    fn uses_against_the_floors_are_named() {
        let floors = parse_table(DOC, "Floors").unwrap();
        let crates = map(&[
            ("bursar", "apps/bursar"),
            ("relayer", "relayer"),
            ("indexer", "indexer"),
            ("client", "crates/client"),
            ("wallet", "contracts/session-wallet"),
            ("e2e", "e2e"),
            ("stray", "somewhere/else"),
        ]);
        let uses: BTreeMap<String, Vec<String>> = [
            ("bursar", vec!["relayer", "client"]),
            ("relayer", vec!["client", "indexer"]),
            ("client", vec!["wallet", "bursar"]),
            ("wallet", vec![]),
            ("e2e", vec!["bursar", "relayer"]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
        .collect();
        let found = violations(&floors, &crates, &uses);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].starts_with("client (libraries) uses bursar (apps)"));
        assert!(found[1].starts_with("relayer (services) uses indexer (services)"));
        assert!(found[2].starts_with("stray (somewhere/else) is on no floor"));
    }

    const SERVICE: &str =
        "# X\n\n## Floors of the relayer\n\n| floor | modules | may use |\n|---|---|---|\n\
        | start | `lib.rs` | api, jobs, features, kernel, store |\n\
        | api | `api/` | features, kernel, store |\n\
        | jobs | `jobs/` | features, kernel, store |\n\
        | features | `payments/`, `hosts.rs` | kernel, store |\n\
        | kernel | `kernel/` | store |\n\
        | store | `store/` | nothing |\n";

    #[test]
    fn imports_against_a_services_floors_are_named() {
        let floors = parse_table(SERVICE, "Floors of the relayer").unwrap();
        let edge = |from: &str, to: &[&str]| {
            (
                PathBuf::from(from),
                to.iter()
                    .map(PathBuf::from)
                    .collect::<std::collections::BTreeSet<_>>(),
            )
        };
        let graph: crate::cycles::Graph = [
            edge("lib.rs", &["api/mod.rs", "jobs/settle.rs"]),
            edge(
                "api/mod.rs",
                &["api/auth.rs", "payments/mod.rs", "jobs/settle.rs"],
            ),
            edge("jobs/settle.rs", &["payments/mod.rs"]),
            edge("payments/mod.rs", &["hosts.rs", "kernel/app.rs"]),
            edge("kernel/app.rs", &["payments/queue.rs", "store/mod.rs"]),
            edge("store/mod.rs", &[]),
            edge("stray.rs", &[]),
        ]
        .into_iter()
        .collect();
        let code: BTreeMap<PathBuf, String> = [
            ("api/mod.rs", "use axum::Router;"),
            ("jobs/settle.rs", "fn f(r: axum::Router) {}"),
        ]
        .into_iter()
        .map(|(f, c)| (PathBuf::from(f), c.to_owned()))
        .collect();
        let found = module_violations(&floors, &graph, &code);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(found[0].starts_with("api/mod.rs (api) imports jobs/settle.rs (jobs)"));
        assert!(found[1].starts_with("jobs/settle.rs (jobs) names axum"));
        assert!(found[2].starts_with("kernel/app.rs (kernel) imports payments/queue.rs (features)"));
        assert_eq!(found[3], "stray.rs is on no floor");
    }
}
