//! Bursar's pages: the owner's approval pages and the host console (the relayer's), the audit
//! explorer (the indexer's). Pages are rendered on the server with [`maud`], which escapes
//! every value it interpolates, so a label, a purpose or a metadata string read from the chain
//! or from a host is text, never markup. The little script a page needs (signing in the
//! owner's wallet, charts, checking an export, the console's tables) is TypeScript in `ts/`,
//! bundled by esbuild into `dist/`, which is committed and built into the services' binaries
//! ([`asset`]): the pages work offline and never load anything from elsewhere.
//!
//! Every page carries [`HEADERS`]: a Content-Security-Policy that allows only this origin's
//! own files (no inline script, no inline style, no framing), no referrer, no caching.

pub mod format;

use axum::extract::Path;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Serialize;

/// The Content-Security-Policy of every page: scripts, styles and requests of this origin
/// only, nothing inline, never in a frame (the approval pages must not be clickjacked).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; \
    frame-ancestors 'none'";

/// The headers of every page. `no-referrer`: an approval link must not leak to a site the
/// page links to; `no-store`: a shared machine's cache must not keep an owner's terms.
pub const HEADERS: [(&str, &str); 5] = [
    ("content-security-policy", CSP),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cache-control", "no-store"),
];

/// A file the pages load from `/assets/`.
#[derive(Clone, Copy, Debug)]
pub struct Asset {
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The asset called `name`, if there is one.
pub fn asset(name: &str) -> Option<Asset> {
    let (content_type, bytes): (_, &'static [u8]) = match name {
        "approve.js" => (JS, include_bytes!("../dist/approve.js")),
        "explorer.js" => (JS, include_bytes!("../dist/explorer.js")),
        "console.js" => (JS, include_bytes!("../dist/console.js")),
        "uplot.css" => (CSS, include_bytes!("../dist/uplot.css")),
        "style.css" => (CSS, include_bytes!("../static/style.css")),
        _ => return None,
    };
    Some(Asset {
        content_type,
        bytes,
    })
}

/// An HTML page as a response, with [`HEADERS`].
pub fn page(status: StatusCode, html: String) -> Response {
    let mut res = (status, html).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    for (name, value) in HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    res
}

/// `GET /assets/{name}`: an [`asset`], or 404.
pub async fn serve_asset(Path(name): Path<String>) -> Response {
    match asset(&name) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            a.bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A page of a service.
pub struct Page<'a> {
    /// The `<title>` and the heading.
    pub title: &'a str,
    /// The service, for the header: `Bursar relayer`, `Bursar audit explorer`.
    pub service: &'a str,
    /// Its content, inside `<main>`.
    pub body: Markup,
    /// Its script (`approve.js`…), loaded as a module.
    pub script: Option<&'a str>,
    /// Extra stylesheets (`uplot.css`).
    pub styles: &'a [&'a str],
}

impl Page<'_> {
    /// The whole HTML document.
    pub fn render(self) -> String {
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    meta name="referrer" content="no-referrer";
                    title { (self.title) " · " (self.service) }
                    link rel="stylesheet" href="/assets/style.css";
                    @for style in self.styles {
                        link rel="stylesheet" href={ "/assets/" (style) };
                    }
                    @if let Some(script) = self.script {
                        script type="module" src={ "/assets/" (script) } {}
                    }
                }
                body {
                    header { p.service { (self.service) } }
                    main {
                        h1 { (self.title) }
                        (self.body)
                    }
                }
            }
        }
        .into_string()
    }
}

/// A `<script type="application/json" id=…>` data block a page's script reads. JSON cannot end
/// the element early: `<`, `>` and `&` are written as `\u003c`… (still the same JSON).
pub fn data_block(id: &str, value: &impl Serialize) -> Markup {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let safe = json
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    html! { script type="application/json" id=(id) { (PreEscaped(safe)) } }
}

/// A page saying why there is nothing to show: an unknown, expired or used link.
pub fn notice(service: &str, title: &str, text: &str) -> String {
    Page {
        title,
        service,
        body: html! { p.notice role="alert" { (text) } },
        script: None,
        styles: &[],
    }
    .render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_text_never_markup() {
        let hostile = "<script>alert(1)</script>\" onload=\"x";
        let page = Page {
            title: hostile,
            service: "s",
            body: html! { p title=(hostile) { (hostile) } },
            script: None,
            styles: &[],
        }
        .render();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!page.contains("\" onload=\"x"));
    }

    #[test]
    fn a_data_block_cannot_close_its_element() {
        let block =
            data_block("d", &serde_json::json!({ "label": "</script><script>x()" })).into_string();
        assert_eq!(block.matches("</script>").count(), 1, "{block}");
        let json = block
            .trim_start_matches(r#"<script type="application/json" id="d">"#)
            .trim_end_matches("</script>");
        let back: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(back["label"], "</script><script>x()");
    }

    #[test]
    fn every_asset_is_built_in() {
        for name in [
            "approve.js",
            "explorer.js",
            "console.js",
            "uplot.css",
            "style.css",
        ] {
            let a = asset(name).unwrap_or_else(|| panic!("{name}"));
            assert!(!a.bytes.is_empty(), "{name}");
        }
        assert!(asset("../Cargo.toml").is_none());
    }
}
