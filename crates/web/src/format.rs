//! Values as a person reads them on a page.

use maud::{html, Markup};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// A duration in words: `1 hour`, `2 hours 30 minutes`, `45 seconds`.
pub fn duration(seconds: u64) -> String {
    if seconds == 0 {
        return "0 seconds".into();
    }
    let units = [
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ];
    let mut left = seconds;
    let mut parts = Vec::new();
    for (size, name) in units {
        let n = left / size;
        left %= size;
        if n > 0 && parts.len() < 2 {
            parts.push(format!("{n} {name}{}", if n == 1 { "" } else { "s" }));
        }
    }
    parts.join(" ")
}

/// A `<time>` of unix seconds: UTC on the server, the reader's own zone once the page's script
/// runs (`data-unix`).
pub fn time(unix: u64) -> Markup {
    let at = i64::try_from(unix)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok());
    match at.and_then(|t| t.format(&Rfc3339).ok()) {
        Some(iso) => {
            let text = iso.replace('T', " ").replace('Z', " UTC");
            html! { time datetime=(iso) data-unix=(unix) { (text) } }
        }
        None => html! { span { "block time " (unix) } },
    }
}

/// `0x1234…abcd` for a long hex string (addresses, hashes); shorter or other text unchanged.
pub fn abbreviate(hex: &str) -> String {
    if hex.len() <= 14 || !hex.is_ascii() {
        return hex.to_owned();
    }
    format!("{}…{}", &hex[..6], &hex[hex.len() - 4..])
}

/// [`abbreviate`]d, with the whole in a title.
pub fn short(hex: &str) -> Markup {
    html! { code title=(hex) { (abbreviate(hex)) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_words() {
        assert_eq!(duration(3_600), "1 hour");
        assert_eq!(duration(7_200), "2 hours");
        assert_eq!(duration(5_400), "1 hour 30 minutes");
        assert_eq!(duration(86_400 + 61), "1 day 1 minute");
        assert_eq!(duration(45), "45 seconds");
        assert_eq!(duration(0), "0 seconds");
    }

    #[test]
    fn times_are_utc_on_the_server() {
        let t = time(1_796_418_905).into_string();
        assert!(t.contains(r#"datetime="2026-12-04T21:15:05Z""#), "{t}");
        assert!(t.contains("2026-12-04 21:15:05 UTC"), "{t}");
        assert!(time(u64::MAX).into_string().contains("block time"));
    }
}
