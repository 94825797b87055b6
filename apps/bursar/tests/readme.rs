//! The READMEs as a newcomer follows them, held to the code: every command in their ```sh,
//! ```bash and ```console blocks must name what exists, and every relative link and
//! repository path in their text must lead somewhere.
//!
//! * `bursar ARGS` (also `cargo run -p bursar -- ARGS`, `./target/debug/bursar ARGS`): the
//!   leading words that are not flags are a subcommand path (with its positional values);
//!   `bursar PATH --help` must succeed (clap refuses an unknown subcommand or an unexpected
//!   value before it reaches `--help`), and every flag on the line must appear in that help.
//!   Flags are not passed: clap would take a `--help` after a flag that wants a value as a
//!   missing value.
//! * `cargo xtask NAME`: NAME is a subcommand of xtask's (read from its source), and each
//!   `--flag` is in that source.
//! * `cargo … -p PKG`, `--test NAME`, `--bench NAME`, `--path P`: the package is a workspace
//!   member, the test or bench is one of its targets, the path exists.
//! * `cd P`, `npm … --prefix P`, `npm install P`, `pip install P`, `node SCRIPT`, a program
//!   named by its repository path: the path exists (`/path/to/bursar/` is the repository).
//! * `curl` to 127.0.0.1:8549 (the relayer) or :8548 (the indexer): the route is a path of
//!   the service's OpenAPI document (`bursar openapi relayer|indexer`).
//!
//! Shell words are read as a shell reads them: quotes, `\` line continuations, comments,
//! `&&`, `||`, `|`, `;`, `&`, leading `VAR=value` and `export`, `$VAR` of earlier
//! assignments in the same README, `$(…)` checked as commands of their own, a `$ ` prompt.
//! Every failure names the README, its line and the command; all are reported at once.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The repository's top folders that backticked paths in prose are checked under.
const REPO_DIRS: [&str; 11] = [
    "apps/",
    "relayer/",
    "indexer/",
    "crates/",
    "contracts/",
    "e2e/",
    "sdk/",
    "xtask/",
    "tools/",
    "docs/",
    "deployments/",
];

/// Fenced blocks read as shell commands.
const SHELLS: [&str; 5] = ["sh", "bash", "shell", "console", "zsh"];

/// Where the READMEs write the repository in an absolute path.
const CLONE: &str = "/path/to/bursar/";

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

#[test]
fn the_readmes_name_what_exists() {
    let root = repo_root();
    let mut readmes = Vec::new();
    find_readmes(&root, &mut readmes);
    readmes.sort();
    for required in ["README.md", "apps/bursar/README.md"] {
        assert!(
            readmes.contains(&root.join(required)),
            "{required} is missing (found {readmes:?})"
        );
    }
    let mut checker = Checker::new(root);
    for readme in &readmes {
        checker.readme(readme);
    }
    // The parser found what it is meant to check (a broken parser would pass silently).
    assert!(
        checker.bursar_commands > 10,
        "only {} `bursar` commands found",
        checker.bursar_commands
    );
    assert!(checker.links > 10, "only {} links found", checker.links);
    assert!(
        checker.failures.is_empty(),
        "{} stale places in the READMEs:\n{}",
        checker.failures.len(),
        checker.failures.join("\n")
    );
}

/// Every `README.md` under `dir`, leaving out build output, installed packages and hidden
/// folders.
fn find_readmes(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && name != "node_modules" && !name.starts_with('.') {
                find_readmes(&path, out);
            }
        } else if name == "README.md" {
            out.push(path);
        }
    }
}

/// What the READMEs are checked against, and what failed.
struct Checker {
    root: PathBuf,
    packages: HashMap<String, Package>,
    xtask_tasks: BTreeSet<String>,
    xtask_source: String,
    /// `bursar PATH --help`'s output, or why it failed, by PATH.
    helps: HashMap<Vec<String>, Result<String, String>>,
    /// The OpenAPI document's paths, by service.
    routes: HashMap<&'static str, Vec<String>>,
    /// `$NAME`s assigned so far in the README being read.
    vars: HashMap<String, String>,
    bursar_commands: usize,
    links: usize,
    failures: Vec<String>,
}

/// A workspace member's test and bench targets.
struct Package {
    tests: BTreeSet<String>,
    benches: BTreeSet<String>,
}

impl Checker {
    fn new(root: PathBuf) -> Self {
        let (xtask_tasks, xtask_source) = xtask(&root);
        assert!(
            xtask_tasks.contains("demo") && xtask_tasks.contains("test"),
            "xtask's subcommands were not found in xtask/src: {xtask_tasks:?}"
        );
        Checker {
            packages: packages(&root),
            root,
            xtask_tasks,
            xtask_source,
            helps: HashMap::new(),
            routes: HashMap::new(),
            vars: HashMap::new(),
            bursar_commands: 0,
            links: 0,
            failures: Vec::new(),
        }
    }

    fn fail(&mut self, failure: String) {
        self.failures.push(failure);
    }

    /// Checks one README: its shell blocks' commands, its text's links and paths.
    fn readme(&mut self, file: &Path) {
        let text = std::fs::read_to_string(file).expect("a README");
        let shown = file
            .strip_prefix(&self.root)
            .unwrap_or(file)
            .display()
            .to_string();
        self.vars.clear();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if let Some(info) = lines[i].trim_start().strip_prefix("```") {
                let lang = info
                    .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
                    .next()
                    .unwrap_or("")
                    .to_lowercase();
                let start = i + 1;
                let mut end = start;
                while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                    end += 1;
                }
                if SHELLS.contains(&lang.as_str()) {
                    let script = shell_text(&lang, &lines[start..end]);
                    for command in commands(&script, start + 1) {
                        self.command(&shown, &command);
                    }
                }
                i = end + 1;
                continue;
            }
            self.prose(file, &shown, i + 1, lines[i]);
            i += 1;
        }
    }

    /// A line of text: its relative links lead somewhere, its backticked repository paths
    /// exist.
    fn prose(&mut self, file: &Path, shown: &str, number: usize, line: &str) {
        // Between backticks (odd pieces) is code; links are in the rest.
        for (piece, text) in line.split('`').enumerate() {
            if piece % 2 == 1 {
                if let Some(path) = repo_path(text) {
                    if !self.root.join(path).exists() {
                        self.fail(format!(
                            "{shown}:{number}: `{text}`: no such path in the repository"
                        ));
                    }
                }
                continue;
            }
            let mut rest = text;
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let end = after
                    .find(|c: char| c == ')' || c.is_whitespace())
                    .unwrap_or(after.len());
                self.link(file, shown, number, &after[..end]);
                rest = &after[end..];
            }
        }
    }

    /// A Markdown link's target, relative to the README's folder; an anchor must be a heading
    /// of the Markdown file it points into.
    fn link(&mut self, file: &Path, shown: &str, number: usize, target: &str) {
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            return;
        }
        self.links += 1;
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target, None),
        };
        let linked = if path.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap_or(&self.root).join(path)
        };
        if !linked.exists() {
            self.fail(format!("{shown}:{number}: link ({target}): no such file"));
            return;
        }
        let Some(anchor) = anchor.filter(|a| !a.is_empty()) else {
            return;
        };
        if linked.extension() == Some(OsStr::new("md")) {
            let text = std::fs::read_to_string(&linked).unwrap_or_default();
            if !anchors(&text).contains(anchor) {
                self.fail(format!(
                    "{shown}:{number}: link ({target}): no heading #{anchor} in {}",
                    linked.display()
                ));
            }
        }
    }

    /// One shell command (and those of its `$(…)`s).
    fn command(&mut self, shown: &str, command: &ShellCommand) {
        for inner in &command.substitutions {
            for inner in commands(inner, command.line) {
                self.command(shown, &inner);
            }
        }
        let words: Vec<String> = command
            .words
            .iter()
            .map(|w| expand(w, &self.vars))
            .collect();
        let mut words = without_redirections(words);
        // Leading `VAR=value`s: the environment of the command, or assignments alone.
        let assigned = words.iter().take_while(|w| assignment(w).is_some()).count();
        for word in words.drain(..assigned) {
            if let Some((name, value)) = assignment(&word) {
                self.vars.insert(name, value);
            }
        }
        let Some(program) = words.first().cloned() else {
            return;
        };
        let args = &words[1..];
        let place = format!("{shown}:{} `{}`", command.line, command.words.join(" "));
        match program.as_str() {
            "export" => {
                for word in args {
                    if let Some((name, value)) = assignment(word) {
                        self.vars.insert(name, value);
                    }
                }
            }
            "cargo" => self.cargo(&place, args),
            "cd" => {
                if let Some(dir) = args.first() {
                    self.path(&place, dir);
                }
            }
            "npm" => self.npm(&place, args),
            "curl" => self.curl(&place, args),
            "node" => {
                if let Some(script) = args.first().filter(|s| in_repo(s)) {
                    self.path(&place, script);
                }
            }
            p if p == "bursar" || p.ends_with("/bursar") => self.bursar(&place, args),
            p if in_repo(p) => self.path(&place, p),
            _ => {
                // `pip install …`, also as `python3 -m pip install …`.
                if let Some(at) = words.iter().position(|w| w == "pip" || w == "pip3") {
                    if words.get(at + 1).map(String::as_str) == Some("install") {
                        let paths: Vec<String> = words[at + 2..]
                            .iter()
                            .filter(|w| looks_like_path(w))
                            .cloned()
                            .collect();
                        for path in paths {
                            self.path(&place, &path);
                        }
                    }
                }
            }
        }
    }

    /// A path the command names exists in the repository (relative to its root, or under
    /// `/path/to/bursar/`); other absolute paths, home paths and placeholders are not checked.
    fn path(&mut self, place: &str, raw: &str) {
        let path = raw.strip_prefix(CLONE).unwrap_or(raw);
        let path = if raw == CLONE.trim_end_matches('/') {
            "."
        } else {
            path
        };
        // pip's extras: `sdk/python[signing]`.
        let path = path.split('[').next().unwrap_or(path);
        if path.starts_with('/')
            || path.starts_with('~')
            || path.starts_with('-')
            || path.contains(['$', '…', '*', '<', '{'])
        {
            return;
        }
        if !self.root.join(path).exists() {
            self.fail(format!("{place}: {raw}: no such path in the repository"));
        }
    }

    /// `cargo SUBCOMMAND ARGS`.
    fn cargo(&mut self, place: &str, args: &[String]) {
        let args: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .skip_while(|a| a.starts_with('+'))
            .collect();
        let Some((&sub, rest)) = args.split_first() else {
            return;
        };
        if sub == "xtask" {
            self.xtask(place, rest);
            return;
        }
        let (own, program) = match rest.iter().position(|a| *a == "--") {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        let packages = flag_values(own, "-p", "--package");
        for package in &packages {
            if !self.packages.contains_key(*package) {
                self.fail(format!("{place}: no package {package} in the workspace"));
            }
        }
        for (flag, kind) in [("--test", "test"), ("--bench", "bench")] {
            for name in flag_values(own, flag, flag) {
                let found = self
                    .packages
                    .iter()
                    .filter(|(p, _)| packages.is_empty() || packages.contains(&p.as_str()))
                    .any(|(_, p)| match kind {
                        "test" => p.tests.contains(name),
                        _ => p.benches.contains(name),
                    });
                if !found {
                    self.fail(format!(
                        "{place}: no {kind} {name} in {}",
                        if packages.is_empty() {
                            "the workspace".to_string()
                        } else {
                            packages.join(", ")
                        }
                    ));
                }
            }
        }
        for path in flag_values(own, "--path", "--path") {
            self.path(place, path);
        }
        let runs_bursar =
            packages.contains(&"bursar") || flag_values(own, "--bin", "--bin").contains(&"bursar");
        if sub == "run" && runs_bursar {
            let program: Vec<String> = program.iter().map(|a| a.to_string()).collect();
            self.bursar(place, &program);
        }
    }

    /// `cargo xtask NAME FLAGS`.
    fn xtask(&mut self, place: &str, args: &[&str]) {
        let Some(task) = args.first().filter(|a| !a.starts_with('-')) else {
            return;
        };
        if !self.xtask_tasks.contains(*task) {
            self.fail(format!(
                "{place}: xtask has no task {task} (it has {:?})",
                self.xtask_tasks
            ));
        }
        for flag in args[1..]
            .iter()
            .filter(|a| a.starts_with("--") && a.len() > 2)
        {
            let name = flag[2..].split('=').next().unwrap_or("");
            let field = format!("{}:", name.replace('-', "_"));
            if !mentions(&self.xtask_source, &format!("--{name}"))
                && !mentions(&self.xtask_source, &field)
            {
                self.fail(format!("{place}: xtask's source has no --{name}"));
            }
        }
    }

    /// `bursar ARGS`: the subcommand path's `--help` succeeds and names every flag given.
    fn bursar(&mut self, place: &str, args: &[String]) {
        self.bursar_commands += 1;
        let path: Vec<String> = args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .cloned()
            .collect();
        let help = match self.help(&path) {
            Ok(help) => help,
            Err(why) => {
                let failure = format!("{place}: `bursar {} --help` fails: {why}", path.join(" "));
                self.fail(failure);
                return;
            }
        };
        for arg in args.iter().filter(|a| a.starts_with('-') && *a != "--") {
            let flag = arg.split('=').next().unwrap_or(arg);
            let long = flag.starts_with("--") && flag.len() > 2;
            let short = !flag.starts_with("--") && flag.chars().count() == 2;
            if (long || short) && !mentions(&help, flag) {
                self.fail(format!(
                    "{place}: {flag} is not a flag of `bursar {}`",
                    path.join(" ")
                ));
            }
        }
    }

    /// `bursar PATH --help`'s output, run once per PATH, away from any `bursar.toml`.
    fn help(&mut self, path: &[String]) -> Result<String, String> {
        if let Some(known) = self.helps.get(path) {
            return known.clone();
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bursar"))
            .args(path)
            .arg("--help")
            .current_dir(std::env::temp_dir())
            .env_remove("BURSAR_CONFIG")
            .output()
            .expect("run bursar");
        let result = if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Err(stderr.lines().next().unwrap_or("no output").to_string())
        };
        self.helps.insert(path.to_vec(), result.clone());
        result
    }

    /// `npm … --prefix DIR` and `npm install|ci PATH`.
    fn npm(&mut self, place: &str, args: &[String]) {
        let mut paths = Vec::new();
        let installs = matches!(
            args.first().map(String::as_str),
            Some("install" | "i" | "add" | "ci")
        );
        let mut after_prefix = false;
        for arg in args.iter().skip(1) {
            if after_prefix {
                paths.push(arg.clone());
                after_prefix = false;
            } else if arg == "--prefix" {
                after_prefix = true;
            } else if let Some(dir) = arg.strip_prefix("--prefix=") {
                paths.push(dir.to_string());
            } else if installs && looks_like_path(arg) {
                paths.push(arg.clone());
            }
        }
        for path in paths {
            self.path(place, &path);
        }
    }

    /// `curl` to the relayer (port 8549) or the indexer (8548): a route of its document.
    fn curl(&mut self, place: &str, args: &[String]) {
        for arg in args {
            let Some((service, path)) = service_route(arg) else {
                continue;
            };
            let routes = self.routes(service);
            if !routes.iter().any(|route| route_matches(route, &path)) {
                self.fail(format!(
                    "{place}: {path} is not a path of the {service}'s OpenAPI document"
                ));
            }
        }
    }

    /// The paths of `bursar openapi SERVICE`.
    fn routes(&mut self, service: &'static str) -> Vec<String> {
        self.routes
            .entry(service)
            .or_insert_with(|| {
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_bursar"))
                    .args(["openapi", service])
                    .current_dir(std::env::temp_dir())
                    .env_remove("BURSAR_CONFIG")
                    .output()
                    .expect("run bursar openapi");
                assert!(out.status.success(), "bursar openapi {service} failed");
                let document: serde_json::Value =
                    serde_json::from_slice(&out.stdout).expect("an OpenAPI document");
                document["paths"]
                    .as_object()
                    .expect("the document's paths")
                    .keys()
                    .cloned()
                    .collect()
            })
            .clone()
    }
}

/// One command of a shell block.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ShellCommand {
    /// The README line it starts on.
    line: usize,
    /// Its words, quotes removed; `$(…)` and backquotes kept as written.
    words: Vec<String>,
    /// The text inside its `$(…)`s.
    substitutions: Vec<String>,
}

/// A block's lines as a script: a leading `$ ` prompt dropped; in a ```console block only the
/// prompted lines (and their `\` continuations) are commands, the rest is output. Line
/// numbers are kept (dropped lines become empty).
fn shell_text(lang: &str, lines: &[&str]) -> String {
    let console = lang == "console";
    let mut script = String::new();
    let mut continued = false;
    for line in lines {
        let trimmed = line.trim_start();
        let kept = if let Some(rest) = trimmed.strip_prefix("$ ") {
            Some(rest)
        } else if console && !continued {
            None
        } else {
            Some(*line)
        };
        continued = kept.is_some_and(|text| text.trim_end().ends_with('\\'));
        script.push_str(kept.unwrap_or(""));
        script.push('\n');
    }
    script
}

/// The commands of a script, read as a shell reads its words; `first_line` is the README line
/// of the script's first line.
fn commands(script: &str, first_line: usize) -> Vec<ShellCommand> {
    let chars: Vec<char> = script.chars().collect();
    let mut lexer = Lexer {
        out: Vec::new(),
        words: Vec::new(),
        substitutions: Vec::new(),
        word: String::new(),
        in_word: false,
        line: first_line,
        word_line: first_line,
        command_line: first_line,
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            // A line continuation: both characters go.
            '\\' if next == Some('\n') => {
                lexer.line += 1;
                i += 2;
            }
            '\\' => {
                if let Some(escaped) = next {
                    lexer.push(escaped);
                }
                i += 2;
            }
            '\'' => {
                lexer.start();
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    lexer.push(chars[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                lexer.start();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    let after = chars.get(i + 1).copied();
                    if chars[i] == '\\' && matches!(after, Some('"' | '\\' | '$' | '`')) {
                        lexer.push(chars[i + 1]);
                        i += 2;
                    } else if chars[i] == '$' && after == Some('(') {
                        i = lexer.substitution(&chars, i + 1);
                    } else {
                        lexer.push(chars[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            '`' => {
                lexer.push('`');
                i += 1;
                while i < chars.len() && chars[i] != '`' {
                    lexer.push(chars[i]);
                    i += 1;
                }
                lexer.push('`');
                i += 1;
            }
            '$' if next == Some('(') => i = lexer.substitution(&chars, i + 1),
            // A comment: to the end of the line.
            '#' if !lexer.in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            ' ' | '\t' | '\r' => {
                lexer.end_word();
                i += 1;
            }
            '\n' | ';' => {
                lexer.end_command();
                if c == '\n' {
                    lexer.line += 1;
                }
                i += 1;
            }
            '|' => {
                lexer.end_command();
                i += if next == Some('|') { 2 } else { 1 };
            }
            // `2>&1` is a word; `&&` and a lone `&` end a command.
            '&' if lexer.word.ends_with('>') => {
                lexer.push('&');
                i += 1;
            }
            '&' => {
                lexer.end_command();
                i += if next == Some('&') { 2 } else { 1 };
            }
            _ => {
                lexer.push(c);
                i += 1;
            }
        }
    }
    lexer.end_command();
    lexer.out
}

/// The state of [`commands`]' reading.
struct Lexer {
    out: Vec<ShellCommand>,
    words: Vec<String>,
    substitutions: Vec<String>,
    word: String,
    /// A word has begun (it may still be empty: `''`).
    in_word: bool,
    line: usize,
    word_line: usize,
    command_line: usize,
}

impl Lexer {
    fn start(&mut self) {
        if !self.in_word {
            self.in_word = true;
            self.word_line = self.line;
        }
    }

    fn push(&mut self, c: char) {
        self.start();
        if c == '\n' {
            self.line += 1;
        }
        self.word.push(c);
    }

    /// `$(…)` whose `(` is at `open`: kept in the word as written, its text kept to be
    /// checked; the index after its `)`.
    fn substitution(&mut self, chars: &[char], open: usize) -> usize {
        let mut depth = 0;
        let mut end = chars.len();
        for (at, &c) in chars.iter().enumerate().skip(open) {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at;
                        break;
                    }
                }
                _ => {}
            }
        }
        let inner: String = chars[(open + 1).min(end)..end].iter().collect();
        self.push('$');
        self.push('(');
        for c in inner.chars() {
            self.push(c);
        }
        self.push(')');
        self.substitutions.push(inner);
        end + 1
    }

    fn end_word(&mut self) {
        if self.in_word {
            if self.words.is_empty() {
                self.command_line = self.word_line;
            }
            self.words.push(std::mem::take(&mut self.word));
            self.in_word = false;
        }
    }

    fn end_command(&mut self) {
        self.end_word();
        if self.words.is_empty() {
            self.substitutions.clear();
        } else {
            self.out.push(ShellCommand {
                line: self.command_line,
                words: std::mem::take(&mut self.words),
                substitutions: std::mem::take(&mut self.substitutions),
            });
        }
    }
}

/// `NAME=value`: the name and the value.
fn assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then(|| (name.to_string(), value.to_string()))
}

/// `$NAME` and `${NAME}` replaced by what was assigned to them; unknown ones are left.
fn expand(word: &str, vars: &HashMap<String, String>) -> String {
    let chars: Vec<char> = word.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            let braced = chars.get(i + 1) == Some(&'{');
            let start = if braced { i + 2 } else { i + 1 };
            let mut end = start;
            while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            let name: String = chars[start.min(end)..end].iter().collect();
            if let Some(value) = vars.get(&name).filter(|_| !name.is_empty()) {
                out.push_str(value);
                i = if braced && chars.get(end) == Some(&'}') {
                    end + 1
                } else {
                    end
                };
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// The words without shell redirections (`> FILE`, `< FILE`, `2>&1`).
fn without_redirections(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut target = false;
    for word in words {
        if target {
            target = false;
        } else if matches!(word.as_str(), ">" | ">>" | "<" | "<<" | "2>" | "2>>" | "&>") {
            target = true;
        } else if !["<", ">", "2>", "&>"].iter().any(|r| word.starts_with(*r)) {
            out.push(word);
        }
    }
    out
}

/// The values of a flag written `-p V`, `--package V` or `--package=V`.
fn flag_values<'a>(args: &[&'a str], short: &str, long: &str) -> Vec<&'a str> {
    let mut values = Vec::new();
    for (at, &arg) in args.iter().enumerate() {
        if arg == short || arg == long {
            if let Some(&value) = args.get(at + 1) {
                values.push(value);
            }
        } else if let Some(value) = arg.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            values.push(value);
        }
    }
    values
}

/// Whether `needle` appears in `text` as a whole name: not inside a longer flag or word.
fn mentions(text: &str, needle: &str) -> bool {
    let part_of_name = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(part_of_name)
    })
}

fn in_repo(path: &str) -> bool {
    REPO_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// An argument that names a path rather than a registry package (`viem@2`, `@types/node`).
fn looks_like_path(arg: &str) -> bool {
    !arg.starts_with('-')
        && (arg.starts_with('/') || arg.starts_with("./") || arg.starts_with("../") || in_repo(arg))
}

/// A backticked span that names a repository path: under one of [`REPO_DIRS`], without a
/// `:line` suffix, trailing punctuation or `#anchor`. Placeholders and globs (`<network>`,
/// `*`, `…`) and generated or installed files (`node_modules/`, hidden folders) are not
/// paths to check.
fn repo_path(span: &str) -> Option<&str> {
    let path = span.trim();
    if !in_repo(path) {
        return None;
    }
    let path = path.trim_end_matches(['.', ',', ';', ':', ')']);
    let path = match path.rsplit_once(':') {
        Some((file, line))
            if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
        {
            file
        }
        _ => path,
    };
    let path = path.split('#').next().unwrap_or(path);
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'));
    let generated = path.split('/').any(|part| {
        part == "node_modules" || (part.starts_with('.') && part != "." && part != "..")
    });
    (plain && !generated).then_some(path)
}

/// The service a URL reaches on this machine (`http://127.0.0.1:8549/…`, `localhost:8548/…`)
/// and its path.
fn service_route(url: &str) -> Option<(&'static str, String)> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or(url);
    let rest = ["127.0.0.1:", "localhost:", "[::1]:"]
        .iter()
        .find_map(|host| rest.strip_prefix(*host))?;
    let (port, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let service = match port {
        "8549" => "relayer",
        "8548" => "indexer",
        _ => return None,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = if path.is_empty() { "/" } else { path };
    Some((service, path.to_string()))
}

/// Whether a concrete path is an instance of an OpenAPI path (`{id}` matches any segment).
fn route_matches(template: &str, path: &str) -> bool {
    let template: Vec<&str> = template.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    template.len() == path.len()
        && template
            .iter()
            .zip(&path)
            .all(|(t, p)| t == p || (t.starts_with('{') && t.ends_with('}') && !p.is_empty()))
}

/// The anchors of a Markdown file's headings, as GitHub makes them: lower case, punctuation
/// dropped, spaces as `-`, `-1`, `-2`… after repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let level = line.chars().take_while(|c| *c == '#').count();
        if fenced || level == 0 || level > 6 {
            continue;
        }
        let Some(title) = line[level..].strip_prefix(' ') else {
            continue;
        };
        let slug = slug(title.trim().trim_end_matches('#').trim());
        let repeats = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *repeats == 0 {
            slug.clone()
        } else {
            format!("{slug}-{repeats}")
        });
        *repeats += 1;
    }
    out
}

fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The workspace's members by package name, with their test and bench targets.
fn packages(root: &Path) -> HashMap<String, Package> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace manifest");
    let manifest: toml::Table = text.parse().expect("the workspace manifest parses");
    let members = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .expect("workspace.members");
    let mut out = HashMap::new();
    for member in members.iter().filter_map(|m| m.as_str()) {
        let dir = root.join(member);
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let Ok(manifest) = text.parse::<toml::Table>() else {
            continue;
        };
        let Some(name) = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
        else {
            continue;
        };
        let package = Package {
            tests: targets(&manifest, &dir, "test", "tests"),
            benches: targets(&manifest, &dir, "bench", "benches"),
        };
        out.insert(name.to_string(), package);
    }
    out
}

/// A package's targets of a kind: its `[[test]]`/`[[bench]]` entries, and what cargo finds in
/// `tests/`/`benches/` (`NAME.rs`, `NAME/main.rs`).
fn targets(manifest: &toml::Table, dir: &Path, kind: &str, folder: &str) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = manifest
        .get(kind)
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name"))
        .filter_map(|n| n.as_str())
        .map(str::to_string)
        .collect();
    let Ok(entries) = std::fs::read_dir(dir.join(folder)) else {
        return names;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = if path.is_file() && path.extension() == Some(OsStr::new("rs")) {
            path.file_stem()
        } else if path.join("main.rs").is_file() {
            path.file_name()
        } else {
            None
        };
        if let Some(name) = name.and_then(|n| n.to_str()) {
            names.insert(name.to_string());
        }
    }
    names
}

/// xtask's subcommands (the variants of its `Subcommand` enums, as clap names them) and its
/// whole source.
fn xtask(root: &Path) -> (BTreeSet<String>, String) {
    let mut files = Vec::new();
    rust_files(&root.join("xtask/src"), &mut files);
    files.sort();
    let source: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default() + "\n")
        .collect();
    (subcommands(&source), source)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension() == Some(OsStr::new("rs")) {
            out.push(path);
        }
    }
}

/// The subcommands of every enum deriving clap's `Subcommand` in `source`: its variants in
/// kebab case, or the name a `#[command(name = "…")]` gives one.
fn subcommands(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = source;
    while let Some(at) = rest.find("#[derive(") {
        rest = &rest[at..];
        let derive_end = rest.find(")]").map_or(rest.len(), |e| e + 2);
        let derives = &rest[..derive_end];
        rest = &rest[derive_end..];
        if !derives.contains("Subcommand") {
            continue;
        }
        // The item the derive is on must be an enum.
        let Some(item) = rest.find(['{', ';']) else {
            break;
        };
        let header = &rest[..item];
        if !header.contains("enum ") || header.contains("struct ") || header.contains("fn ") {
            continue;
        }
        let body = &rest[item + 1..];
        let mut depth = 0i32;
        let mut renamed: Option<String> = None;
        for line in body.lines() {
            let trimmed = line.trim();
            if depth < 0 {
                break;
            }
            if trimmed.starts_with("//") {
                continue;
            }
            if depth == 0 {
                if trimmed.starts_with("#[command(") {
                    renamed = quoted_after(trimmed, "name = \"");
                } else if !trimmed.starts_with('#') {
                    let variant: String = trimmed
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if variant.starts_with(|c: char| c.is_ascii_uppercase()) {
                        names.insert(renamed.take().unwrap_or_else(|| kebab(&variant)));
                    }
                }
            }
            for c in trimmed.chars() {
                match c {
                    '{' | '(' | '[' => depth += 1,
                    '}' | ')' | ']' => depth -= 1,
                    _ => {}
                }
            }
        }
    }
    names
}

/// The text between `prefix` and the next `"`.
fn quoted_after(text: &str, prefix: &str) -> Option<String> {
    let start = text.find(prefix)? + prefix.len();
    let end = text[start..].find('"')?;
    Some(text[start..start + end].to_string())
}

/// `BuildContracts` → `build-contracts`.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn a_command_is_read_as_a_shell_reads_it() {
    let script = shell_text(
        "sh",
        &[
            "$ BURSAR_X=1 cargo run -p bursar -- deploy \\",
            "    --rpc http://127.0.0.1:8547 --network devnet   # a comment; not a command",
            "cd sdk/python && pip install \"/path/to/bursar/sdk/python[signing]\" | cat; echo 'a;b'",
            "bursar demo --against-running &",
        ],
    );
    let got = commands(&script, 10);
    let words = |c: &ShellCommand| c.words.join(" ");
    assert_eq!(got.len(), 6, "{got:#?}");
    assert_eq!(
        words(&got[0]),
        "BURSAR_X=1 cargo run -p bursar -- deploy --rpc http://127.0.0.1:8547 --network devnet"
    );
    assert_eq!(got[0].line, 10);
    assert_eq!(words(&got[1]), "cd sdk/python");
    assert_eq!(got[1].line, 12);
    assert_eq!(
        got[2].words,
        ["pip", "install", "/path/to/bursar/sdk/python[signing]"]
    );
    assert_eq!(words(&got[3]), "cat");
    assert_eq!(got[4].words, ["echo", "a;b"]);
    assert_eq!(words(&got[5]), "bursar demo --against-running");
    assert_eq!(got[5].line, 13);
}

#[test]
fn quotes_span_lines_and_substitutions_are_kept() {
    let script = "H=\"Authorization: Bearer bhk_…\"; R=http://127.0.0.1:8549\n\
                  curl -sH \"$H\" $R/v1/sessions -d '{\"a\":\n  1}'\n\
                  eval \"$(bursar faucet --usdc 20 --env)\"   # exports\n\
                  echo a#b 2>&1 > out.txt\n";
    let got = commands(script, 1);
    assert_eq!(got.len(), 5, "{got:#?}");
    assert_eq!(got[0].words, ["H=Authorization: Bearer bhk_…"]);
    assert_eq!(got[1].words, ["R=http://127.0.0.1:8549"]);
    assert_eq!(
        got[2].words,
        ["curl", "-sH", "$H", "$R/v1/sessions", "-d", "{\"a\":\n  1}"]
    );
    assert_eq!(got[3].line, 4);
    assert_eq!(got[3].words, ["eval", "$(bursar faucet --usdc 20 --env)"]);
    assert_eq!(got[3].substitutions, ["bursar faucet --usdc 20 --env"]);
    assert_eq!(got[4].words, ["echo", "a#b", "2>&1", ">", "out.txt"]);
    assert_eq!(without_redirections(got[4].words.clone()), ["echo", "a#b"]);

    let mut vars = HashMap::new();
    for word in got[0].words.iter().chain(&got[1].words) {
        let (name, value) = assignment(word).unwrap();
        vars.insert(name, value);
    }
    assert_eq!(
        expand("$R/v1/payments/pay_…?wait=30", &vars),
        "http://127.0.0.1:8549/v1/payments/pay_…?wait=30"
    );
    assert_eq!(
        expand("${R}/x $UNKNOWN", &vars),
        "http://127.0.0.1:8549/x $UNKNOWN"
    );
}

#[test]
fn a_console_block_runs_only_its_prompted_lines() {
    let script = shell_text(
        "console",
        &[
            "$ bursar limits",
            "{\"remaining\": \"1.00 USDC\"}",
            "$ bursar pay \\",
            "  --to 0x…",
        ],
    );
    let got = commands(&script, 1);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(got[0].words, ["bursar", "limits"]);
    assert_eq!(got[1].words, ["bursar", "pay", "--to", "0x…"]);
    assert_eq!(got[1].line, 3);
}

#[test]
fn routes_paths_flags_and_anchors() {
    assert!(route_matches(
        "/v1/sessions/{id}/heartbeat",
        "/v1/sessions/0x…/heartbeat"
    ));
    assert!(!route_matches(
        "/v1/sessions/{id}",
        "/v1/sessions/0x…/heartbeat"
    ));
    assert!(!route_matches("/v1/sessions/{id}", "/v1/sessions/"));
    assert_eq!(
        service_route("'localhost:8548/v1/events?x=1'".trim_matches('\'')),
        Some(("indexer", "/v1/events".to_string()))
    );
    assert_eq!(
        service_route("http://127.0.0.1:8549/v1/payments/pay_1?wait=30"),
        Some(("relayer", "/v1/payments/pay_1".to_string()))
    );
    assert_eq!(service_route("https://api.example/report"), None);

    assert_eq!(
        repo_path("relayer/tests/it/crash.rs:12."),
        Some("relayer/tests/it/crash.rs")
    );
    assert_eq!(repo_path("deployments/<network>.json"), None);
    assert_eq!(repo_path("tools/ponder/node_modules/x.js"), None);
    assert_eq!(repo_path("target/contracts"), None);

    assert!(mentions("  -i, --include   Print", "-i"));
    assert!(mentions("      --max-amount <MAX_AMOUNT>", "--max-amount"));
    assert!(!mentions("      --max-amount <MAX_AMOUNT>", "--max"));
    assert_eq!(
        flag_values(
            &["test", "-p", "bursar", "--test=readme"],
            "--test",
            "--test"
        ),
        ["readme"]
    );

    let text = "# T\n## Putting `bursar` on PATH\n```sh\n# not a heading\n```\n## A host's x: `y`\n## A host's x: `y`\n";
    let found = anchors(text);
    assert!(found.contains("putting-bursar-on-path"), "{found:?}");
    assert!(
        found.contains("a-hosts-x-y") && found.contains("a-hosts-x-y-1"),
        "{found:?}"
    );
    assert!(!found.contains("not-a-heading"), "{found:?}");
}

#[test]
fn xtask_subcommands_are_its_enum_variants() {
    let source = r#"
#[derive(Parser, Debug)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Builds (the contracts).
    BuildContracts(build::Args),
    #[command(name = "ci")]
    Test {
        /// Crate directories (relative).
        dirs: Vec<std::path::PathBuf>,
    },
    Floors,
}

#[derive(Clone, Copy)]
enum Other {
    NotATask,
}
"#;
    let names: Vec<String> = subcommands(source).into_iter().collect();
    assert_eq!(names, ["build-contracts", "ci", "floors"]);
}
