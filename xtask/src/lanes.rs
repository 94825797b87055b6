//! The workspace's test executables run in two lanes side by side, instead of one after
//! another as `cargo test` runs them. Most of the suite's time is spent in a few executables
//! that wait — on chains mining, browsers, `npm`/`pip` installs, `bursar up` starting — so one
//! at a time leaves a core idle; two lanes fill it. Each executable runs as cargo would run it
//! (in its package's directory, with cargo's `CARGO_*` variables), its output printed whole
//! when it ends, so two lanes never interleave their lines.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The longest executables (`package::target`), longest first: a lane starts each as early as
/// it can, so the two lanes end close together. Measured on CI (2026-12-07); the rest follow in
/// cargo's order.
const LONGEST_FIRST: &[&str] = &[
    "bursar-relayer::it",
    // 34 s alone, but 5 to 7 minutes beside the others in both two-lane runs so far (cause not
    // yet found): started early, it overlaps the longest instead of ending the run.
    "bursar-devnet::it",
    "bursar::up",
    "bursar::pages",
    "bursar::sdk_install",
    "bursar-e2e::it",
    "bursar-indexer::it",
    "bursar::sdk",
    "session-wallet::session_wallet",
    "session-wallet::invariants",
    "bursar::mcp",
    "bursar::devnet",
];

/// How many executables run at once.
const LANES: usize = 2;

/// One thing a lane runs.
enum Job {
    /// A test executable cargo built.
    Binary {
        /// `package::target`.
        name: String,
        path: PathBuf,
        /// Its package's directory (cargo runs tests there).
        dir: PathBuf,
        package: String,
        version: String,
        krate: String,
    },
    /// The documentation tests (`cargo test --doc`), which only rustdoc runs.
    DocTests,
}

impl Job {
    fn name(&self) -> &str {
        match self {
            Job::Binary { name, .. } => name,
            Job::DocTests => "doc-tests",
        }
    }

    fn command(&self, env: &[(&str, &str)]) -> Command {
        let mut cmd = match self {
            Job::Binary {
                path,
                dir,
                package,
                version,
                krate,
                ..
            } => {
                let mut cmd = Command::new(path);
                cmd.current_dir(dir)
                    .env("CARGO_MANIFEST_DIR", dir)
                    .env("CARGO_PKG_NAME", package)
                    .env("CARGO_PKG_VERSION", version)
                    .env("CARGO_CRATE_NAME", krate);
                cmd
            }
            Job::DocTests => {
                let mut cmd = Command::new(env!("CARGO"));
                cmd.args(["test", "--workspace", "--doc"]);
                cmd
            }
        };
        cmd.envs(env.iter().copied());
        cmd
    }
}

/// The workspace's tests, built, in the order the lanes take them.
pub(crate) struct Tests(VecDeque<Job>);

/// Builds every test executable of the workspace (`cargo test --workspace --no-run`) and
/// answers them, longest first.
pub(crate) fn build(env: &[(&str, &str)]) -> Result<Tests> {
    eprintln!("==> tests (build): cargo test --workspace --no-run");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO"))
        .args([
            "test",
            "--workspace",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .context("running cargo test --no-run")?;
    let mut jobs = Vec::new();
    let stdout = child.stdout.take().context("cargo's stdout")?;
    for line in std::io::BufReader::new(stdout).lines() {
        let message: serde_json::Value = serde_json::from_str(&line?).unwrap_or_default();
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let Some(path) = message["executable"].as_str() else {
            continue;
        };
        let manifest = PathBuf::from(message["manifest_path"].as_str().unwrap_or_default());
        // `path+file:///…/relayer#bursar-relayer@0.1.0`, or `…/xtask#0.1.0` when the
        // directory is the package's name.
        let id = message["package_id"].as_str().unwrap_or_default();
        let (place, fragment) = id.rsplit_once('#').unwrap_or((id, ""));
        let (package, version) = match fragment.split_once('@') {
            Some((name, version)) => (name.to_owned(), version),
            None => (
                place.rsplit('/').next().unwrap_or_default().to_owned(),
                fragment,
            ),
        };
        let target = message["target"]["name"].as_str().unwrap_or_default();
        jobs.push(Job::Binary {
            name: format!("{package}::{target}"),
            path: path.into(),
            dir: manifest.parent().context("a manifest's directory")?.into(),
            package,
            version: version.to_owned(),
            krate: target.replace('-', "_"),
        });
    }
    if !child.wait()?.success() {
        bail!("building the tests failed (cargo test --workspace --no-run)");
    }
    eprintln!("==> tests (build): {:.0?}", started.elapsed());
    let rank = |j: &Job| {
        LONGEST_FIRST
            .iter()
            .position(|n| *n == j.name())
            .unwrap_or(LONGEST_FIRST.len())
    };
    jobs.sort_by_key(rank);
    jobs.push(Job::DocTests);
    Ok(Tests(jobs.into()))
}

/// Runs `tests` in [`LANES`] lanes; fails naming every executable that failed.
pub(crate) fn run(tests: Tests, env: &[(&str, &str)]) -> Result<()> {
    let queue = Mutex::new(tests.0);
    eprintln!("==> tests: {LANES} lanes");
    let started = Instant::now();
    let failed = Mutex::new(Vec::new());
    let print = Mutex::new(());
    std::thread::scope(|scope| {
        for _ in 0..LANES {
            scope.spawn(|| loop {
                let Some(job) = queue.lock().unwrap().pop_front() else {
                    return;
                };
                let began = Instant::now();
                let out = job.command(env).output();
                let took = began.elapsed();
                let _printing = print.lock().unwrap();
                let ok = report(&job, out, took);
                if !ok {
                    failed.lock().unwrap().push(job.name().to_owned());
                }
            });
        }
    });
    eprintln!("==> tests: {:.0?}", started.elapsed());
    let failed = failed.into_inner().unwrap();
    if !failed.is_empty() {
        bail!("tests failed: {}", failed.join(", "));
    }
    Ok(())
}

/// Prints what `job` said and whether it passed.
fn report(job: &Job, out: std::io::Result<std::process::Output>, took: Duration) -> bool {
    match out {
        Ok(out) => {
            print!("{}", String::from_utf8_lossy(&out.stdout));
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            let verdict = if out.status.success() { "ok" } else { "FAILED" };
            eprintln!("==> test {}: {verdict} in {took:.0?}", job.name());
            out.status.success()
        }
        Err(e) => {
            eprintln!("==> test {}: could not run: {e}", job.name());
            false
        }
    }
}
