//! The versioned result document shared by every engine and command.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Version of the document layout; bumped when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Which engine produced a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Measured on real hosts and real networks (loopback included).
    Real,
    /// Measured between namespaced hosts through weft's userspace switch.
    Emu,
    /// Computed by the discrete-event simulator.
    Sim,
    /// Computed in closed form.
    Model,
    /// Several engines side by side, each sample naming its own values per engine (`weft
    /// repro`'s document: paper, model, sim, emu and real in every sample).
    Mixed,
}

/// One result: what was run (`params`), what was observed over time or per point (`samples`) and
/// the headline figures (`summary`). Rates are in bits per second, sizes in bytes and times in
/// nanoseconds unless a key's suffix says otherwise (`_mbps`, `_us`, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultDoc {
    /// Version of the `weft` that wrote the document.
    pub weft: String,
    /// Layout version of the document, [`SCHEMA_VERSION`] when written by this build.
    #[serde(default = "default_schema")]
    pub schema: u32,
    /// What kind of result: `tput`, `rr`, `pattern`, `sim.hol`, `trace.util`, ...
    pub kind: String,
    /// The engine that produced it.
    pub engine: Engine,
    /// The parameters of the run, as given and as effective.
    #[serde(default)]
    pub params: Value,
    /// Per-interval, per-size or per-session records.
    #[serde(default)]
    pub samples: Vec<Value>,
    /// The headline figures.
    #[serde(default)]
    pub summary: Value,
}

fn default_schema() -> u32 {
    SCHEMA_VERSION
}

impl ResultDoc {
    /// A new document of `kind` from `engine`, stamped with this build's version.
    pub fn new(kind: impl Into<String>, engine: Engine) -> Self {
        ResultDoc {
            weft: env!("CARGO_PKG_VERSION").to_string(),
            schema: SCHEMA_VERSION,
            kind: kind.into(),
            engine,
            params: Value::Object(Default::default()),
            samples: Vec::new(),
            summary: Value::Object(Default::default()),
        }
    }

    /// Reads a document from JSON text, with an error that says what is wrong.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The document as pretty-printed JSON.
    pub fn to_json_pretty(&self) -> String {
        // A `Value`-only structure always serialises.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the document as pretty-printed JSON to `w`, its samples taken one at a time from
    /// `samples` instead of `self.samples`: a result of a million records (`weft trace flows`)
    /// is then never held as JSON values. The text is what [`ResultDoc::to_json_pretty`] gives
    /// for the same samples.
    pub fn write_pretty_with<W, S, I>(&self, w: W, samples: I) -> std::io::Result<()>
    where
        W: std::io::Write,
        S: Serialize,
        I: Iterator<Item = S>,
    {
        let doc = Streamed {
            weft: &self.weft,
            schema: self.schema,
            kind: &self.kind,
            engine: self.engine,
            params: &self.params,
            samples: Samples(std::cell::RefCell::new(Some(samples))),
            summary: &self.summary,
        };
        serde_json::to_writer_pretty(w, &doc).map_err(std::io::Error::other)
    }
}

/// [`ResultDoc`]'s fields, in its order, with the samples from an iterator.
#[derive(Serialize)]
#[serde(bound = "Samples<I>: Serialize")]
struct Streamed<'a, I> {
    weft: &'a str,
    schema: u32,
    kind: &'a str,
    engine: Engine,
    params: &'a Value,
    samples: Samples<I>,
    summary: &'a Value,
}

/// An iterator serialised as a sequence, once.
struct Samples<I>(std::cell::RefCell<Option<I>>);

impl<S: Serialize, I: Iterator<Item = S>> Serialize for Samples<I> {
    fn serialize<Z: serde::Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        let it = self.0.borrow_mut().take();
        s.collect_seq(it.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_names_engine_in_lowercase() {
        let mut doc = ResultDoc::new("tput", Engine::Real);
        doc.summary = json!({ "goodput_bps": 1_000_000 });
        let text = doc.to_json_pretty();
        assert!(text.contains("\"engine\": \"real\""));
        assert_eq!(ResultDoc::from_json(&text).unwrap(), doc);
    }

    #[test]
    fn streamed_samples_give_the_same_text() {
        let mut doc = ResultDoc::new("trace.flows", Engine::Real);
        doc.params = json!({"file": "x"});
        doc.summary = json!({"flows": 2});
        let rows = [json!({"a": 1}), json!({"a": 2, "b": [1, 2]})];
        let mut streamed = Vec::new();
        doc.write_pretty_with(&mut streamed, rows.iter()).unwrap();
        doc.samples = rows.to_vec();
        assert_eq!(String::from_utf8(streamed).unwrap(), doc.to_json_pretty());
        let mut empty = Vec::new();
        let none: [Value; 0] = [];
        doc.write_pretty_with(&mut empty, none.iter()).unwrap();
        doc.samples.clear();
        assert_eq!(String::from_utf8(empty).unwrap(), doc.to_json_pretty());
    }

    #[test]
    fn rejects_documents_without_kind() {
        let err = ResultDoc::from_json(r#"{"weft":"0.1.0","engine":"sim"}"#).unwrap_err();
        assert!(err.to_string().contains("kind"), "{err}");
    }
}
