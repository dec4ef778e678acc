//! Throughput tests (`weft tput`): the client, the agent side, and the data path they share.

pub mod agent;
