//! A PostgreSQL server for the tests that run on both databases (the relayer's, the
//! indexer's): `$BURSAR_TEST_POSTGRES_URL` when set; otherwise this machine's cluster (Debian's
//! `pg_ctlcluster`; PostgreSQL 15 is on the image, `cargo xtask setup` installs it where missing),
//! created or started when needed, with a `bursar` role that may create databases (each test
//! makes its own) and a `bursar_test` database to connect to.

use std::process::{Command, Output};

use anyhow::{bail, Context, Result};

/// The variable the tests read.
pub(crate) const URL_VAR: &str = "BURSAR_TEST_POSTGRES_URL";

/// The URL of a running server the tests may use.
pub(crate) fn test_url() -> Result<String> {
    if let Ok(url) = std::env::var(URL_VAR) {
        return Ok(url);
    }
    let (version, name, port, online) = match cluster()? {
        Some(c) => c,
        None => {
            let version = installed_version()?;
            eprintln!("==> postgres: creating cluster {version}/main");
            run(Command::new("pg_createcluster").args([&version, "main"]))?;
            cluster()?.context("pg_createcluster made no cluster")?
        }
    };
    if !online {
        eprintln!("==> postgres: starting cluster {version}/{name} on port {port}");
        run(Command::new("pg_ctlcluster").args([&version, &name, "start"]))?;
    }
    let psql = |sql: &str| -> Result<String> {
        let out = run(as_postgres()
            .args([
                "psql",
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-p",
                &port,
                "-c",
            ])
            .arg(sql))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    if psql("SELECT 1 FROM pg_roles WHERE rolname = 'bursar'")?.is_empty() {
        psql("CREATE ROLE bursar LOGIN PASSWORD 'bursar' CREATEDB")?;
    }
    if psql("SELECT 1 FROM pg_database WHERE datname = 'bursar_test'")?.is_empty() {
        psql("CREATE DATABASE bursar_test OWNER bursar")?;
    }
    let url = format!("postgres://bursar:bursar@127.0.0.1:{port}/bursar_test");
    eprintln!("==> postgres: {URL_VAR}={url}");
    Ok(url)
}

/// The first cluster `pg_lsclusters` lists: version, name, port, whether it is online.
fn cluster() -> Result<Option<(String, String, String, bool)>> {
    let out = run(Command::new("pg_lsclusters").arg("--no-header"))
        .context("pg_lsclusters (is PostgreSQL installed? cargo xtask setup installs it)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().and_then(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() >= 4).then(|| {
            (
                f[0].to_string(),
                f[1].to_string(),
                f[2].to_string(),
                f[3] == "online",
            )
        })
    }))
}

fn installed_version() -> Result<String> {
    let mut versions: Vec<String> = std::fs::read_dir("/usr/lib/postgresql")
        .context("no /usr/lib/postgresql: PostgreSQL is not installed")?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    versions.sort();
    versions.pop().context("no PostgreSQL version installed")
}

/// A command run as the `postgres` user (root uses `runuser`, others `sudo`).
fn as_postgres() -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut cmd = if root {
        Command::new("runuser")
    } else {
        Command::new("sudo")
    };
    cmd.args(["-u", "postgres", "--"]);
    cmd
}

fn run(cmd: &mut Command) -> Result<Output> {
    let out = cmd
        .output()
        .with_context(|| format!("running {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out)
}
