//! Where the relayer may send requests a host asked for (its webhook endpoints), and an agent
//! its fetches (`bursar fetch`, the MCP `fetch` tool): public
//! addresses only. A host must not turn the relayer into a client of its own network —
//! loopback services, a cloud's metadata endpoint (169.254.169.254), private ranges.
//!
//! A URL is checked when it is registered ([`check_url`]) and again at every delivery, on the
//! address actually connected to: the delivery client resolves names through [`Resolver`],
//! which drops every refused address, so a name that resolves to a public address at
//! registration and to an internal one later (DNS rebinding) is refused then. Literal
//! addresses (which never reach a resolver) are checked by [`check_literal`] before each send.
//!
//! Loopback is allowed only when [`Policy::allow_loopback`] says so (a devnet, the tests):
//! never link-local, private or the rest.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// What may be reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Loopback addresses (127.0.0.0/8, ::1, and names resolving to them) are allowed.
    pub allow_loopback: bool,
}

/// Why an address or URL is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// Not an http(s) URL with a host, or too long.
    #[error("url must be an http(s) URL of at most 2048 bytes")]
    BadUrl,
    /// The host's name resolves to no address.
    #[error("{host} does not resolve: {reason}")]
    Unresolved {
        /// The name.
        host: String,
        /// The resolver's answer.
        reason: String,
    },
    /// An address of a refused kind.
    #[error("{ip} is {kind}: only public addresses are reached")]
    Refused {
        /// The address.
        ip: IpAddr,
        /// Its kind (`loopback`, `private`, `link-local`…).
        kind: &'static str,
    },
}

impl Policy {
    /// `Ok` when `ip` may be connected to; else the kind of address it is.
    pub fn check(self, ip: IpAddr) -> Result<(), EgressError> {
        match kind(ip) {
            None => Ok(()),
            Some("loopback") if self.allow_loopback => Ok(()),
            Some(kind) => Err(EgressError::Refused { ip, kind }),
        }
    }
}

/// What kind of non-public address `ip` is, if it is one. IPv4 addresses written as IPv6
/// (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
/// `2002:ab:cd::`) are judged as the IPv4 address they carry.
pub fn kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => kind_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => kind_v4(v4),
            None => kind_v6(v6),
        },
    }
}

fn kind_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match () {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() || a == 0 => "unspecified",
        _ if ip.is_private() => "private",
        _ if ip.is_link_local() => "link-local",
        _ if a == 100 && (b & 0xc0) == 64 => "shared (carrier-grade NAT)",
        _ if ip.is_multicast() => "multicast",
        _ if ip.is_broadcast() || a >= 240 => "reserved",
        _ if ip.is_documentation() => "documentation",
        _ if a == 192 && b == 0 && c == 0 => "reserved (IETF protocol assignments)",
        _ if a == 198 && (b & 0xfe) == 18 => "benchmarking",
        _ => return None,
    })
}

fn kind_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(match () {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_multicast() => "multicast",
        _ if (s[0] & 0xffc0) == 0xfe80 => "link-local",
        _ if (s[0] & 0xffc0) == 0xfec0 => "site-local",
        _ if (s[0] & 0xfe00) == 0xfc00 => "private (unique local)",
        _ if s[0] == 0x2001 && s[1] == 0x0db8 => "documentation",
        _ if s[0] == 0x0100 && s[1..4] == [0, 0, 0] => "discard-only",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address carries by a standard translation, if any.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; ::1 and :: are not v4).
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(low(hi, lo)),
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) > (0, 1) => Some(low(hi, lo)),
        // NAT64, well-known prefix.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        // 6to4.
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

/// Checks a URL a host gave: http(s), at most 2048 bytes, and every address its host is or
/// resolves to allowed by `policy`. Returns the parsed URL.
pub async fn check_url(text: &str, policy: Policy) -> Result<reqwest::Url, EgressError> {
    let url = check_literal(text, policy)?;
    if let Some(url::Host::Domain(name)) = url.host() {
        let port = url.port_or_known_default().unwrap_or(80);
        for a in resolve(name, port).await? {
            policy.check(a.ip())?;
        }
    }
    Ok(url)
}

/// [`check_url`] without resolving: a name passes (the delivery client's [`Resolver`] checks
/// what it resolves to when it connects), a literal address is checked.
pub fn check_literal(text: &str, policy: Policy) -> Result<reqwest::Url, EgressError> {
    let url = reqwest::Url::parse(text)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && text.len() <= 2048)
        .ok_or(EgressError::BadUrl)?;
    // The URL parser has already read decimal, octal and hex IPv4 forms (`2130706433`,
    // `0x7f.1`) as the address they are.
    match url.host().ok_or(EgressError::BadUrl)? {
        url::Host::Ipv4(ip) => policy.check(IpAddr::V4(ip))?,
        url::Host::Ipv6(ip) => policy.check(IpAddr::V6(ip))?,
        url::Host::Domain(_) => {}
    }
    Ok(url)
}

async fn resolve(name: &str, port: u16) -> Result<Vec<SocketAddr>, EgressError> {
    let unresolved = |reason: String| EgressError::Unresolved {
        host: name.to_owned(),
        reason,
    };
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name, port))
        .await
        .map_err(|e| unresolved(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(unresolved("no addresses".into()));
    }
    Ok(addrs)
}

/// The delivery client's resolver: the system's answer without the refused addresses (an
/// error when none is left, naming the first refused).
#[derive(Clone, Copy, Debug)]
pub struct Resolver(pub Policy);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: hyper014::client::connect::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        Box::pin(async move {
            let addrs = resolve(name.as_str(), 0).await?;
            let allowed: Vec<SocketAddr> = addrs
                .iter()
                .copied()
                .filter(|a| policy.check(a.ip()).is_ok())
                .collect();
            if allowed.is_empty() {
                let first = addrs[0].ip();
                return Err(Box::new(policy.check(first).unwrap_err()) as _);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// An HTTP client that connects only where `policy` allows (for literal addresses, check the
/// URL with [`check_url`] first), follows no redirect and ignores proxy settings from the
/// environment (a proxy would resolve names itself).
pub fn client(policy: Policy, timeout: std::time::Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(Resolver(policy)))
        .build()
        .expect("an HTTP client with a timeout builds")
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Policy = Policy {
        allow_loopback: false,
    };
    const DEV: Policy = Policy {
        allow_loopback: true,
    };

    #[tokio::test]
    async fn internal_addresses_in_every_spelling_are_refused() {
        for url in [
            "http://127.0.0.1:8547/",
            "http://127.1/",
            "http://localhost:9000/hook",
            "http://[::1]/",
            "http://0.0.0.0/",
            "http://0/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://10.0.0.5/",
            "http://172.16.3.4/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[2002:a00:1::]/",
            "http://224.0.0.1/",
            "http://[ff02::1]/",
            "http://255.255.255.255/",
        ] {
            let e = check_url(url, STRICT).await.unwrap_err();
            assert!(matches!(e, EgressError::Refused { .. }), "{url}: {e}");
        }
    }

    #[tokio::test]
    async fn loopback_only_with_the_flag() {
        for url in [
            "http://127.0.0.1:9/",
            "http://localhost:9/",
            "http://[::1]:9/",
        ] {
            assert!(check_url(url, DEV).await.is_ok(), "{url}");
        }
        for url in [
            "http://169.254.169.254/",
            "http://10.1.2.3/",
            "http://0.0.0.0/",
            "http://[::ffff:192.168.0.1]/",
        ] {
            assert!(check_url(url, DEV).await.is_err(), "{url}");
        }
    }

    #[tokio::test]
    async fn public_addresses_and_bad_urls() {
        for url in [
            "https://93.184.215.14/hook",
            "http://[2606:4700::1111]/",
            "http://8.8.8.8:8080/",
        ] {
            assert!(check_url(url, STRICT).await.is_ok(), "{url}");
        }
        for url in [
            "ftp://8.8.8.8/",
            "not a url",
            "http://",
            "file:///etc/passwd",
        ] {
            assert_eq!(
                check_url(url, STRICT).await.unwrap_err(),
                EgressError::BadUrl,
                "{url}"
            );
        }
        let long = format!("https://8.8.8.8/{}", "a".repeat(2048));
        assert_eq!(
            check_url(&long, STRICT).await.unwrap_err(),
            EgressError::BadUrl
        );
    }

    #[tokio::test]
    async fn the_resolver_drops_refused_addresses() {
        use reqwest::dns::Resolve;
        let name: hyper014::client::connect::dns::Name = "localhost".parse().unwrap();
        let e = Resolver(STRICT).resolve(name).await.err().unwrap();
        assert!(e.to_string().contains("loopback"), "{e}");
        let name: hyper014::client::connect::dns::Name = "localhost".parse().unwrap();
        let addrs: Vec<_> = Resolver(DEV).resolve(name).await.ok().unwrap().collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }
}
