//! Rebuilds when a migration is added: `sqlx::migrate!` embeds the migrations directory at
//! compile time, and cargo does not watch it otherwise.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
