//! The agent side of a request/response test.
//!
//! TODO(rr): placeholder owned by helper `rr`; it refuses every request/response test.

use crate::error::ProbeError;
use crate::proto::RrSpec;
use crate::server::TestContext;

/// Runs the agent side of one request/response test on an accepted control connection.
///
/// The server calls this after it validated the request and reserved a test slot; an `Err` is
/// sent to the client as an `Error` message by the caller.
pub fn serve(_ctx: &mut TestContext, _spec: &RrSpec) -> Result<(), ProbeError> {
    Err(ProbeError::Unsupported(
        "request/response tests are not supported by this agent yet".into(),
    ))
}
