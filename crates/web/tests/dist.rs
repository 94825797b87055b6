//! `dist/` is what `ts/` builds to: the scripts type-check, and a fresh build (esbuild, from
//! the lock file's packages) is byte for byte the committed one. Needs `npm ci` here (`cargo
//! xtask setup` runs it).

use std::path::Path;
use std::process::Command;

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{program} {args:?}:\n{printed}");
    printed
}

#[test]
fn the_committed_scripts_are_what_the_sources_build_to() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        web.join("node_modules/esbuild").is_dir(),
        "the pages' build tools are missing: run cargo xtask setup (npm ci --prefix crates/web)"
    );
    run(
        web,
        "node",
        &["node_modules/typescript/bin/tsc", "--noEmit", "-p", "."],
    );
    let fresh = std::env::temp_dir().join(format!("bursar-web-dist-{}", std::process::id()));
    run(web, "node", &["build.mjs", fresh.to_str().unwrap()]);
    let mut names: Vec<String> = std::fs::read_dir(&fresh)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut committed: Vec<String> = std::fs::read_dir(web.join("dist"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    committed.sort();
    assert_eq!(names, committed, "dist/ has other files than a build makes");
    for name in names {
        let a = std::fs::read(fresh.join(&name)).unwrap();
        let b = std::fs::read(web.join("dist").join(&name)).unwrap();
        assert!(
            a == b,
            "dist/{name} is stale: run `npm run build --prefix crates/web` and commit it"
        );
    }
    std::fs::remove_dir_all(&fresh).ok();
}
