//! Host databases (`weft vc plan FILE`, a scenario's `[vc]`) and plans (`weft vc plan --check`)
//! are untrusted text: any bytes must parse to a database or plan or return an error, never
//! panic; a database that parses must plan or refuse with an error, and a plan made from it must
//! pass its own check (every circuit delivers by the tables, no label twice on a link).
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::vc::{HostDb, Plan, Shape, plan};

/// A database for fuzzed plans to be checked against.
const DB: &str = r#"
[[switch]]
name = "a"
[[switch]]
name = "b"
[[host]]
name = "h1"
switch = "a"
port = 1
[[host]]
name = "h2"
switch = "b"
port = 1
[[trunk]]
ends = ["a", "b"]
ports = [9, 9]
"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(db) = HostDb::parse(text, "fuzz.toml") {
        // Keep the mesh small enough to plan quickly.
        if db.hosts.len() <= 40 && db.switches.len() <= 40 {
            let mut shapes = vec![Shape::Mesh, Shape::Sites, Shape::Pairs(Vec::new())];
            if let Some(h) = db.hosts.first() {
                shapes.push(Shape::Star(h.name.clone()));
            }
            for shape in &shapes {
                if let Ok(p) = plan(&db, shape) {
                    if let Err(problems) = p.verify(&db) {
                        panic!(
                            "a plan of {} fails its own check: {problems:?}",
                            shape.name()
                        );
                    }
                }
            }
        }
    }
    if let Ok(p) = serde_json::from_str::<Plan>(text) {
        let db = HostDb::parse(DB, "db.toml").expect("the fixed database parses");
        let _ = p.verify(&db);
    }
});
