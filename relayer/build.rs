//! Embeds the migrations (`migrations/{sqlite,postgres}`) for `store`: see
//! `crates/db/build/embed_migrations.rs`.

include!("../crates/db/build/embed_migrations.rs");

fn main() {
    embed_migrations();
}
