//! The agent side of a throughput test.

use crate::error::ProbeError;
use crate::proto::TputSpec;
use crate::server::TestContext;

/// Runs the agent side of one throughput test.
pub fn serve(_ctx: &mut TestContext, _spec: &TputSpec) -> Result<(), ProbeError> {
    Err(ProbeError::Unsupported(
        "throughput tests are being built".into(),
    ))
}
