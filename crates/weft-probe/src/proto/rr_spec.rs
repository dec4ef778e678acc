//! The body of a request/response test request.
//!
//! TODO(rr): owned by helper `rr`, who defines the fields of a request/response test (sizes,
//! warm/cold, burst, time-outs, ...) and may change this file freely. Until then it carries its
//! parameters as an open JSON object so that the control protocol round-trips any of them.

use serde::{Deserialize, Serialize};

/// Parameters of a request/response (`weft rr`) test, as the client sends them to the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RrSpec {
    /// The parameters, as an open JSON object (see the module comment).
    #[serde(flatten)]
    pub params: serde_json::Map<String, serde_json::Value>,
}
