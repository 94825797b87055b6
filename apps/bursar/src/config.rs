//! The config file: a TOML file with a table per command (`[indexer]`, `[relayer]`, …) whose
//! keys are the command's long flags (`rpc = "http://…"`, `max-range = 5000`). It is read
//! before the command line is parsed, and each value becomes the default of its flag through
//! the flag's environment variable, so a flag beats the environment, which beats the file,
//! which beats the built-in default.
//!
//! The file is `--config FILE`, else `$BURSAR_CONFIG`, else `bursar.toml` in the working
//! directory if there is one.

use std::path::{Path, PathBuf};

/// The file's name when none is given.
const DEFAULT_FILE: &str = "bursar.toml";

/// Applies the config file, if any, for the command `args` (the process's arguments) run.
pub(crate) fn apply(command: &clap::Command, args: &[String]) -> Result<(), String> {
    let Some(path) = path(args) else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
    let file: toml::Table = text
        .parse()
        .map_err(|e| format!("the config file {}: {e}", path.display()))?;
    // The command run: the first argument naming one.
    let Some(sub) = args.iter().skip(1).find_map(|a| command.find_subcommand(a)) else {
        return Ok(());
    };
    let name = sub.get_name();
    let Some(table) = file.get(name) else {
        return Ok(());
    };
    let table = table
        .as_table()
        .ok_or_else(|| format!("{}: [{name}] must be a table", path.display()))?;
    for (key, value) in table {
        let arg = sub
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()))
            .ok_or_else(|| {
                format!(
                    "{}: [{name}] {key}: `bursar {name}` has no --{key}",
                    path.display()
                )
            })?;
        let env = arg.get_env().ok_or_else(|| {
            format!(
                "{}: [{name}] {key}: --{key} cannot be set from the file",
                path.display()
            )
        })?;
        let value = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => {
                value.to_string()
            }
            _ => {
                return Err(format!(
                    "{}: [{name}] {key}: want a string, number or boolean",
                    path.display()
                ))
            }
        };
        if std::env::var_os(env).is_none() {
            // From `main`, before the runtime or any other thread starts.
            std::env::set_var(env, value);
        }
    }
    Ok(())
}

/// The config file named by `--config`, `$BURSAR_CONFIG`, or `bursar.toml` if present.
fn path(args: &[String]) -> Option<PathBuf> {
    let mut given = None;
    for (i, a) in args.iter().enumerate() {
        if let Some(v) = a.strip_prefix("--config=") {
            given = Some(v.to_owned());
        } else if a == "--config" {
            given = args.get(i + 1).cloned();
        }
    }
    given
        .or_else(|| std::env::var("BURSAR_CONFIG").ok())
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(DEFAULT_FILE)
                .is_file()
                .then(|| DEFAULT_FILE.into())
        })
}
