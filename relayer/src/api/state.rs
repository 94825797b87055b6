//! What the handlers share, and the largest body they read.

use std::sync::Arc;

use crate::kernel::App;

/// What the handlers share.
pub type AppState = Arc<App>;

/// The largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;
