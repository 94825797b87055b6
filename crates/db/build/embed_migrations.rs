// Included by the services' build scripts (`include!`): writes `$OUT_DIR/migrations.rs`, the
// migration files of `migrations/sqlite` and `migrations/postgres` as
// `MIGRATIONS_SQLITE`/`MIGRATIONS_POSTGRES: bursar_db::Migrations`, each file's text embedded
// with `include_str!` — what `sqlx::migrate!` embeds, without compiling sqlx's macros (and a
// second sqlx, for them) into every build.

fn embed_migrations() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let mut out = String::new();
    for backend in ["sqlite", "postgres"] {
        let dir = manifest.join("migrations").join(backend);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
            .collect();
        files.sort();
        out += &format!(
            "pub(crate) const MIGRATIONS_{}: bursar_db::Migrations = bursar_db::Migrations(&[\n",
            backend.to_uppercase()
        );
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out += &format!("    ({name:?}, include_str!({:?})),\n", path.display().to_string());
        }
        out += "]);\n";
    }
    let target = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("migrations.rs");
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
}
