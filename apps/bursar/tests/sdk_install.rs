//! The SDKs installed as their users install them (issue 42): each README's blocks, taken from
//! the README and run as written — install from a copy of the repository's tracked files (a
//! fresh clone: no `node_modules`, no `dist`), set up what the snippet needs on `bursar up`
//! (`bursar allowlist create`, `bursar faucet`), then the integration and a payment — in a fresh
//! venv and a fresh npm project outside the repository. The TypeScript is typechecked with
//! `tsc --strict` against E2B's real `e2b` package first; E2B's service cannot be reached, so
//! both then run with `e2b` swapped for a recorder. Packages come from PyPI and npm as a user's
//! would (no published Bursar package is involved).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{scratch, Up};

/// The fenced `lang` block after `<!-- marker` in `readme`.
fn block(readme: &str, marker: &str, lang: &str) -> String {
    readme
        .split(&format!("<!-- {marker}"))
        .nth(1)
        .and_then(|rest| rest.split(&format!("```{lang}\n")).nth(1))
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("no {lang} block marked {marker}"))
        .to_owned()
}

/// Runs `script` with `sh -e` in `dir` with `env`; its output (panics with it on failure).
fn sh(script: &str, dir: &Path, env: &[(&str, String)]) -> String {
    let out = Command::new("sh")
        .args(["-ec", script])
        .current_dir(dir)
        .env_remove("BURSAR_CONFIG")
        .env_remove("VIRTUAL_ENV")
        .env_remove("PYTHONPATH")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run sh");
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script}\n---\n{printed}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The repository's tracked files under `dir`, copied to `to` (as a fresh clone has them).
fn copy_tracked(dir: &str, to: &Path) {
    let root = bursar_e2e::repo_root();
    let listed = Command::new("git")
        .args(["ls-files", dir])
        .current_dir(root)
        .output()
        .expect("git ls-files");
    for file in String::from_utf8_lossy(&listed.stdout).lines() {
        let target = to.join(file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(root.join(file), target).unwrap();
    }
}

/// A directory outside the repository.
fn outside(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_install_as_users_do_and_their_readmes_run() {
    let data = scratch("bursar-sdk-install");
    let up = tokio::task::block_in_place(|| Up::start(&data));
    let running: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("up.json")).unwrap()).unwrap();
    let home = outside("bursar-sdk-install");
    let clone = home.join("bursar");
    copy_tracked("sdk", &clone);
    // As if `bursar up` ran in the user's directory, and `bursar` were on PATH.
    let bin = Path::new(env!("CARGO_BIN_EXE_bursar")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let relayer = format!("http://{}", up.relayer);
    let env = [
        ("PATH", path),
        (
            "BURSAR_RPC_URL",
            running["rpc"].as_str().unwrap().to_owned(),
        ),
    ];
    let as_written = |text: String| {
        text.replace("http://127.0.0.1:8549", &relayer)
            .replace("/path/to/bursar", clone.to_str().unwrap())
    };

    // Python: a fresh venv, the package from the clone's path, then the page in order.
    let readme = std::fs::read_to_string(clone.join("sdk/python/README.md")).unwrap();
    let py = home.join("python");
    std::fs::create_dir_all(&py).unwrap();
    std::os::unix::fs::symlink(&data, py.join(".bursar")).unwrap();
    let program =
        block(&readme, "host-integration", "python") + &block(&readme, "sdk-run", "python");
    std::fs::write(py.join("agent.py"), as_written(program)).unwrap();
    let stubs = bursar_e2e::repo_root().join("sdk/python/tests/stubs");
    let script = format!(
        "{}\n{}\nPYTHONPATH={} python agent.py\n",
        as_written(block(&readme, "sdk-install", "sh")),
        as_written(block(&readme, "sdk-setup", "sh")),
        stubs.display()
    );
    let printed = tokio::task::block_in_place(|| sh(&script, &py, &env));
    assert_eq!(printed.lines().last(), Some("confirmed"), "{printed}");
    let installed =
        tokio::task::block_in_place(|| sh(".venv/bin/python -m pip show bursar-sdk", &py, &env));
    assert!(installed.contains("Name: bursar-sdk"), "{installed}");

    // TypeScript: a fresh npm project, the package from the clone's path (npm builds it), the
    // blocks typechecked strictly against the real `e2b`, then run.
    let readme = std::fs::read_to_string(clone.join("sdk/typescript/README.md")).unwrap();
    let ts = home.join("typescript");
    std::fs::create_dir_all(&ts).unwrap();
    std::os::unix::fs::symlink(&data, ts.join(".bursar")).unwrap();
    std::fs::write(
        ts.join("agent.ts"),
        as_written(block(&readme, "host-integration", "ts")),
    )
    .unwrap();
    std::fs::write(
        ts.join("main.ts"),
        as_written(block(&readme, "sdk-run", "ts")),
    )
    .unwrap();
    std::fs::write(
        ts.join("tsconfig.json"),
        r#"{ "compilerOptions": { "target": "ES2022", "module": "NodeNext",
             "moduleResolution": "NodeNext", "strict": true, "types": ["node"] },
             "files": ["agent.ts", "main.ts"] }"#,
    )
    .unwrap();
    let install = as_written(block(&readme, "sdk-install", "sh"));
    let typecheck = "npm install --no-audit --no-fund --save-dev e2b@2.51.0\nnpx tsc -p .\n";
    // E2B's service cannot be reached: the recorder stands in for the package once checked.
    let recorder = "rm -rf node_modules/e2b && mkdir node_modules/e2b\n\
        echo '{\"name\":\"e2b\",\"type\":\"module\",\"main\":\"index.js\"}' > node_modules/e2b/package.json\n\
        echo 'export class Sandbox { static async create(o) { return new Sandbox(); } }' > node_modules/e2b/index.js\n";
    let script = format!(
        "{install}\n{typecheck}{recorder}{}\nnode main.js\n",
        as_written(block(&readme, "sdk-setup", "sh"))
    );
    let printed = tokio::task::block_in_place(|| sh(&script, &ts, &env));
    assert_eq!(printed.lines().last(), Some("confirmed"), "{printed}");
    assert!(
        clone.join("sdk/typescript/dist/index.d.ts").is_file(),
        "npm built the package as it installed it"
    );
    std::fs::remove_dir_all(&home).ok();
}
