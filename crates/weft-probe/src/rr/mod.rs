//! Request/response latency tests (`weft rr`).
//!
//! TODO(rr): this whole directory belongs to helper `rr`, who replaces this placeholder.

pub mod agent;
