//! `cargo xtask bench`: the settlement figures (issue 29) in one run; `cargo xtask crash`: the
//! kill test at a deployment's size, its claim in figures. Runs the devnet bench's
//! batch gas phase, the relayer bench and the indexer bench (release builds, PostgreSQL beside
//! SQLite), each printing its own lines as it goes; then prints the headline figures they
//! recorded (`bursar_e2e::figure`) side by side.

use anyhow::{Context, Result};

use crate::{postgres, prebuilt, workspace};

/// `bursar_e2e::SUMMARY_VAR`, where the benches record their figures (xtask does not link
/// the harness).
const SUMMARY_VAR: &str = "BENCH_SUMMARY";

#[derive(clap::Args, Debug)]
pub(crate) struct BenchArgs {
    /// Events the indexer bench emits on anvil and ingests.
    #[arg(long, default_value_t = 1_000_000)]
    events: usize,
    /// Also have Ponder (npm ponder@0.16.10) index the same events, for comparison (minutes
    /// more).
    #[arg(long)]
    ponder: bool,
}

/// `cargo xtask crash`'s sizes.
#[derive(clap::Args, Debug)]
pub(crate) struct CrashArgs {
    /// Relayer processes sharing one PostgreSQL database.
    #[arg(long, default_value_t = 4)]
    processes: usize,
    /// New payment requests a round, each its own client.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Rounds, each ending in a SIGKILL of every process.
    #[arg(long, default_value_t = 16)]
    rounds: usize,
}

/// What the benches run with: the tests' installs, PostgreSQL, the contracts, and the summary
/// file they record their figures in (emptied).
fn prepare() -> Result<(Vec<(String, String)>, std::path::PathBuf)> {
    let root = workspace::root();
    let mut env = crate::setup::run(&root)?;
    env.push((postgres::URL_VAR.into(), postgres::test_url()?));
    // The committed contracts when built from these sources (else the benches build them).
    prebuilt::install(&root, &root.join("target").join("contracts"))?;
    let summary = root.join("target").join("bench-summary.tsv");
    match std::fs::remove_file(&summary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", summary.display()))
        }
        _ => {}
    }
    env.push((SUMMARY_VAR.into(), summary.display().to_string()));
    Ok((env, summary))
}

/// The figures recorded in `summary`, side by side.
fn print_summary(summary: &std::path::Path) -> Result<()> {
    let text = std::fs::read_to_string(summary)
        .with_context(|| format!("reading {}", summary.display()))?;
    eprintln!("==> the figures side by side");
    print!("{}", table(&text));
    Ok(())
}

/// `cargo xtask crash`: the claim "limits hold across replicas and restarts", rerun by anyone.
/// The relayer's kill test at the sizes asked: `processes` relayers on one PostgreSQL, `clients`
/// new payments a round paying one session's budget (about half of what they ask), every
/// process SIGKILLed at a random moment each round, the chain mining only when told; clients
/// retry what got no answer under the same `Idempotency-Key`. Prints what was paid over the
/// budget, accepted then lost, and executed twice — each must be 0, or the run fails.
pub(crate) fn crash(args: &CrashArgs) -> Result<()> {
    let (mut env, summary) = prepare()?;
    for (name, value) in [
        ("PROCESSES", args.processes),
        ("CLIENTS", args.clients),
        ("ROUNDS", args.rounds),
    ] {
        env.push((format!("BURSAR_CRASH_{name}"), value.to_string()));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    crate::workspace::cargo(
        "crash",
        &[
            "test",
            "-p",
            "bursar-relayer",
            "--test",
            "it",
            "--",
            "--exact",
            "crash::postgres_db::payments_survive_kill_9_of_two_processes",
        ],
        &env,
    )?;
    print_summary(&summary)
}

pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    let (env, summary) = prepare()?;
    let events = args.events.to_string();
    let ponder = if args.ponder { "1" } else { "0" };
    let benches: [(&str, &[(&str, &str)]); 3] = [
        ("devnet", &[("BENCH_ONLY", "batch_gas")]),
        (
            "relayer",
            &[("BENCH_ONLY", "accepted,accepted_up,confirmed,burst")],
        ),
        (
            "indexer",
            &[("BENCH_EVENTS", &events), ("BENCH_PONDER", ponder)],
        ),
    ];
    for (bench, extra) in benches {
        let mut env: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        env.extend_from_slice(extra);
        crate::workspace::cargo(
            &format!("bench {bench}"),
            &["bench", "-p", "bursar-e2e", "--bench", bench],
            &env,
        )?;
    }
    print_summary(&summary)
}

/// `section<TAB>figure<TAB>value` lines as a table: each section under its heading, in the
/// order first recorded, its figures aligned.
fn table(lines: &str) -> String {
    let mut sections: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    for line in lines.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(section), Some(figure), Some(value)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        match sections.iter_mut().find(|(s, _)| *s == section) {
            Some((_, figures)) => figures.push((figure, value)),
            None => sections.push((section, vec![(figure, value)])),
        }
    }
    let mut out = String::new();
    for (section, figures) in sections {
        let width = figures
            .iter()
            .map(|(f, _)| f.chars().count())
            .max()
            .unwrap_or(0);
        out.push_str(section);
        out.push('\n');
        for (figure, value) in figures {
            let pad = width - figure.chars().count();
            out.push_str(&format!("  {figure}{}  {value}\n", " ".repeat(pad)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn figures_are_grouped_by_section_in_order_and_aligned() {
        let lines = "relayer\tintake\t2,300/s\nindexer\tingest × SQLite\t100/s\n\
                     relayer\tconfirmed, 16\t1,000/s\nbroken line\n";
        assert_eq!(
            table(lines),
            "relayer\n  intake         2,300/s\n  confirmed, 16  1,000/s\n\
             indexer\n  ingest × SQLite  100/s\n"
        );
    }
}
