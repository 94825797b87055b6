//! How many MCP sessions a server over HTTP keeps, and for whom. Each costs memory (a worker
//! and its channels) for as long as it lives, and a client may open them as fast as it can send
//! `initialize`; so a server keeps at most [`Bounds::per_owner`] per credential (opening one
//! more closes that credential's least recently used: an agent can only crowd out itself), at
//! most [`Bounds::total`] in all (beyond, `initialize` is refused until some close), and closes
//! any left idle for [`Bounds::idle`]. A session belongs to the credential that opened it:
//! another credential that names it is told no such session exists.
//!
//! [`Book`] decides (pure, tested here); the HTTP server around it closes what it says in the
//! session manager.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::SessionManager;

/// A credential, as a digest (the credential itself is not kept).
pub type Owner = [u8; 32];

/// The bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Sessions per credential.
    pub per_owner: usize,
    /// Sessions in all.
    pub total: usize,
    /// How long a session may stay unused.
    pub idle: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            per_owner: 8,
            total: 2_000,
            idle: Duration::from_secs(120),
        }
    }
}

/// The session manager for `bounds`: it closes sessions idle for `bounds.idle` itself too.
pub fn manager(bounds: Bounds) -> Arc<LocalSessionManager> {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(bounds.idle);
    Arc::new(manager)
}

/// Closes session `id` in `manager`, if it is still open.
pub async fn close(manager: &LocalSessionManager, id: &str) {
    let _ = manager.close_session(&id.into()).await;
}

/// What a request naming a session may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It is the caller's.
    Granted,
    /// Another credential's, or none: answered as if it did not exist.
    NoSuchSession,
}

/// What to do before a session is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// Close these first (idle ones, and the caller's beyond its share).
    pub close: Vec<String>,
    /// Whether the session may be opened (false: the server is full).
    pub admitted: bool,
}

/// Every session over HTTP open now: whose, and when last used.
#[derive(Debug)]
pub struct Book {
    bounds: Bounds,
    sessions: HashMap<String, (Owner, Instant)>,
}

impl Book {
    /// An empty book.
    pub fn new(bounds: Bounds) -> Self {
        Book {
            bounds,
            sessions: HashMap::new(),
        }
    }

    /// Before `owner` opens a session at `now`: the sessions to close first (idle ones, and
    /// `owner`'s least recently used beyond its share), and whether it may (not when the
    /// server is full).
    pub fn admit(&mut self, owner: Owner, now: Instant) -> Admission {
        let idle = self.bounds.idle;
        let mut close: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, (_, used))| now.saturating_duration_since(*used) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &close {
            self.sessions.remove(id);
        }
        let mut own: Vec<(Instant, String)> = self
            .sessions
            .iter()
            .filter(|(_, (o, _))| *o == owner)
            .map(|(id, (_, used))| (*used, id.clone()))
            .collect();
        own.sort();
        let excess = (own.len() + 1).saturating_sub(self.bounds.per_owner);
        for (_, id) in own.into_iter().take(excess) {
            self.sessions.remove(&id);
            close.push(id);
        }
        Admission {
            close,
            admitted: self.sessions.len() < self.bounds.total,
        }
    }

    /// Session `id` was opened by `owner` at `now`.
    pub fn opened(&mut self, id: &str, owner: Owner, now: Instant) {
        self.sessions.insert(id.to_owned(), (owner, now));
    }

    /// A request of `owner` naming session `id` at `now` (which counts as a use).
    pub fn access(&mut self, id: &str, owner: Owner, now: Instant) -> Access {
        match self.sessions.get_mut(id) {
            Some((o, used)) if *o == owner => {
                *used = now;
                Access::Granted
            }
            _ => Access::NoSuchSession,
        }
    }

    /// Session `id` was closed.
    pub fn closed(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Owner = [0xa; 32];
    const B: Owner = [0xb; 32];

    fn admitted(close: &[&str]) -> Admission {
        Admission {
            close: close.iter().map(|s| (*s).to_owned()).collect(),
            admitted: true,
        }
    }

    fn book() -> Book {
        Book::new(Bounds {
            per_owner: 2,
            total: 3,
            idle: Duration::from_secs(10),
        })
    }

    #[test]
    fn a_credential_crowds_out_only_itself() {
        let mut b = book();
        let t = Instant::now();
        let s = |n: u64| t + Duration::from_secs(n);
        assert_eq!(b.admit(A, s(0)), admitted(&[]));
        b.opened("a1", A, s(0));
        assert_eq!(b.admit(A, s(1)), admitted(&[]));
        b.opened("a2", A, s(1));
        // a1 used since: a2 is the least recently used.
        assert_eq!(b.access("a1", A, s(2)), Access::Granted);
        assert_eq!(b.admit(A, s(3)), admitted(&["a2"]));
        b.opened("a3", A, s(3));
        assert_eq!(b.admit(B, s(4)), admitted(&[]));
        b.opened("b1", B, s(4));
        assert_eq!(b.len(), 3);
        // Full: B may not open a second, and A's next replaces its own.
        assert!(!b.admit(B, s(5)).admitted);
        assert_eq!(b.admit(A, s(5)), admitted(&["a1"]));
    }

    #[test]
    fn a_session_is_its_owners_alone_and_ends_when_idle() {
        let mut b = book();
        let t = Instant::now();
        b.opened("a1", A, t);
        assert_eq!(b.access("a1", B, t), Access::NoSuchSession);
        assert_eq!(b.access("nope", A, t), Access::NoSuchSession);
        assert_eq!(b.access("a1", A, t), Access::Granted);
        // Idle for its time: closed at the next admission.
        let later = t + Duration::from_secs(10);
        assert_eq!(b.admit(B, later), admitted(&["a1"]));
        assert_eq!(b.access("a1", A, later), Access::NoSuchSession);
        b.opened("b1", B, later);
        b.closed("b1");
        assert!(b.is_empty());
    }
}
