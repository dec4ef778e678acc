//! One scenario answered by every engine: the engine registry ([`engines`]), the closed-form
//! model as an engine ([`engines::model`]), the comparison of the engines' results with the
//! published figures ([`compare`]), the qualitative checks ([`checks`]) and the side-by-side text ([`table`]).
//!
//! The catalogue of the studies' results ([`catalogue`]), held against the figures and the
//! scenarios ([`consistency`]), and the scenarios themselves ([`bundled`]) are compiled in.
//!
//! `weft run` is this crate plus argument parsing and output files; so is anything else that
//! wants a scenario's results from several engines.

pub mod bundled;
pub mod catalogue;
pub mod checks;
pub mod compare;
pub mod consistency;
pub mod engines;
pub mod repro;
pub mod table;

pub use catalogue::{Catalogue, CatalogueError, Item, Kind};
pub use checks::{attach_checks, checks};
pub use compare::{attach, compare};
pub use engines::{ENGINES, EngineFn, RunCtx, RunError, lookup};
