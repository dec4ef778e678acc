//! The `weft` result schema (DESIGN.md, "Results"), result files, plots and reports.
//!
//! Every command that measures, simulates or models something produces one [`ResultDoc`]:
//! `{ "weft": VERSION, "schema": 1, "kind": ..., "engine": ..., "params": {...}, "samples": [...],
//! "summary": {...} }`.

pub mod atomic;
pub mod csv;
pub mod html;
pub mod html_figures;
pub mod html_style;
pub mod html_tables;
pub mod plot;
pub mod repro_doc;
pub mod schema;

pub use atomic::{write_atomic, write_atomic_with};
pub use schema::{Engine, ResultDoc, SCHEMA_VERSION};
