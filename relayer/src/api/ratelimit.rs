//! Token buckets, kept in this process: per authenticated principal (a host, a session) at
//! [`crate::Settings::rate_limit`], per client address for requests without credentials at
//! [`crate::Settings::client_rate_limit`], and per client address for failed authentications
//! at [`crate::Settings::auth_failure_limit`] (checked before a credential is looked up, so
//! bogus keys cost no database lookups once over it). Each allows bursts of twice its rate.
//! Over a limit: `429 rate_limited` with `Retry-After`.
//!
//! Buckets are keyed on who the caller is, never on header bytes: one key spelled with other
//! whitespace or scheme case is one principal. IPv6 clients are counted per /64 (one
//! subscriber's allocation), IPv4-mapped ones as the IPv4 address. At most [`MAX_BUCKETS`]
//! are kept: full ones are forgotten first, then the least recently used.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The most buckets kept.
pub(super) const MAX_BUCKETS: usize = 100_000;

/// Whose requests a bucket counts.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum Bucket {
    /// A host, by id.
    Host(String),
    /// A session's sandbox, by session id.
    Session(String),
    /// Requests without credentials from a client address.
    Client(IpAddr),
    /// Failed authentications from a client address.
    Failures(IpAddr),
}

impl Bucket {
    /// The bucket kind's label in the metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Bucket::Host(_) => "host",
            Bucket::Session(_) => "session",
            Bucket::Client(_) => "client",
            Bucket::Failures(_) => "auth_failures",
        }
    }
}

/// The address a client is counted as.
pub(super) fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

#[derive(Clone, Copy, Debug)]
struct State {
    tokens: f64,
    at: Instant,
    per_second: f64,
}

impl State {
    fn refilled(self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * self.per_second).min(self.per_second * 2.0)
    }
}

/// The buckets, and how many requests each kind refused.
#[derive(Debug, Default)]
pub struct Limiter {
    buckets: Mutex<HashMap<Bucket, State>>,
    refused: [AtomicU64; 4],
}

impl Limiter {
    /// Takes one token from `key`'s bucket (`per_second` tokens a second, bursts of twice
    /// that); `Err(seconds)` until one is available.
    pub fn take(&self, key: Bucket, per_second: f64) -> Result<(), f64> {
        self.with(key, per_second, Instant::now(), true)
    }

    /// Whether [`Limiter::take`] would succeed, taking nothing.
    pub fn check(&self, key: Bucket, per_second: f64) -> Result<(), f64> {
        self.with(key, per_second, Instant::now(), false)
    }

    fn with(&self, key: Bucket, per_second: f64, now: Instant, take: bool) -> Result<(), f64> {
        let index = kind_index(&key);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(&key) {
            bound(&mut buckets, now);
        }
        let fresh = State {
            tokens: per_second * 2.0,
            at: now,
            per_second,
        };
        let state = buckets.entry(key).or_insert(fresh);
        state.tokens = state.refilled(now);
        state.at = now;
        state.per_second = per_second;
        if state.tokens >= 1.0 {
            if take {
                state.tokens -= 1.0;
            }
            Ok(())
        } else {
            self.refused[index].fetch_add(1, Ordering::Relaxed);
            Err((1.0 - state.tokens) / per_second)
        }
    }

    /// Buckets kept now.
    pub fn len(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests refused so far, by bucket kind (`host`, `session`, `client`, `auth_failures`).
    pub fn refused(&self) -> [(&'static str, u64); 4] {
        let kinds = ["host", "session", "client", "auth_failures"];
        std::array::from_fn(|i| (kinds[i], self.refused[i].load(Ordering::Relaxed)))
    }
}

fn kind_index(key: &Bucket) -> usize {
    match key {
        Bucket::Host(_) => 0,
        Bucket::Session(_) => 1,
        Bucket::Client(_) => 2,
        Bucket::Failures(_) => 3,
    }
}

/// Makes room for a bucket: forgets the full ones (a new bucket starts full anyway), then, if
/// that is not a quarter of the room, the least recently used down to three quarters.
fn bound(buckets: &mut HashMap<Bucket, State>, now: Instant) {
    buckets.retain(|_, s| s.refilled(now) < s.per_second * 2.0);
    if buckets.len() < MAX_BUCKETS * 3 / 4 {
        return;
    }
    let mut ages: Vec<Instant> = buckets.values().map(|s| s.at).collect();
    let cut = buckets.len() - MAX_BUCKETS * 3 / 4;
    let (_, oldest_kept, _) = ages.select_nth_unstable(cut);
    let oldest_kept = *oldest_kept;
    buckets.retain(|_, s| s.at >= oldest_kept);
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_of_twice_the_rate_then_refused_then_refilled() {
        let limiter = Limiter::default();
        let now = Instant::now();
        let key = || Bucket::Host("h".into());
        for _ in 0..10 {
            assert!(limiter.with(key(), 5.0, now, true).is_ok());
        }
        let wait = limiter.with(key(), 5.0, now, true).unwrap_err();
        assert!((wait - 0.2).abs() < 1e-9, "{wait}");
        let later = now + Duration::from_millis(200);
        assert!(limiter.with(key(), 5.0, later, true).is_ok());
        assert!(limiter.with(key(), 5.0, later, true).is_err());
        // Another principal is not slowed.
        assert!(limiter
            .with(Bucket::Session("h".into()), 5.0, later, true)
            .is_ok());
        assert_eq!(limiter.refused()[0], ("host", 2));
    }

    #[test]
    fn check_takes_nothing() {
        let limiter = Limiter::default();
        let ip = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 9));
        let now = Instant::now();
        for _ in 0..100 {
            assert!(limiter.with(Bucket::Failures(ip), 1.0, now, false).is_ok());
        }
        assert!(limiter.with(Bucket::Failures(ip), 1.0, now, true).is_ok());
        assert!(limiter.with(Bucket::Failures(ip), 1.0, now, true).is_ok());
        assert!(limiter.with(Bucket::Failures(ip), 1.0, now, false).is_err());
    }

    #[test]
    fn clients_are_counted_per_ipv4_address_and_ipv6_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(
            client_key(a),
            client_key("2001:db8:1:3::1".parse().unwrap())
        );
        let mapped: IpAddr = "::ffff:198.51.100.7".parse().unwrap();
        assert_eq!(
            client_key(mapped),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn the_map_stays_bounded_under_a_flood_of_fresh_keys() {
        let limiter = Limiter::default();
        let now = Instant::now();
        // Every bucket half used: none is full, so the least recently used go.
        for i in 0..(MAX_BUCKETS as u64 + 5_000) {
            let key = Bucket::Session(i.to_string());
            let at = now + Duration::from_micros(i);
            assert!(limiter.with(key, 1.0, at, true).is_ok());
        }
        assert!(limiter.len() <= MAX_BUCKETS, "{}", limiter.len());
        // The newest are kept (still limited), the oldest forgotten.
        let last = Bucket::Session((MAX_BUCKETS as u64 + 4_999).to_string());
        let at = now + Duration::from_micros(MAX_BUCKETS as u64 + 5_000);
        assert!(limiter.with(last.clone(), 1.0, at, true).is_ok());
        assert!(limiter.with(last, 1.0, at, true).is_err());
    }
}
