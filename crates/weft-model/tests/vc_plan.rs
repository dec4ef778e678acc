//! Plans over random host databases: every planned circuit, followed through the switches'
//! tables, reaches its destination, and no VPI/VCI is used twice on a link in one direction.
//! The collision check here is the test's own (from the tables alone), beside the planner's
//! [`Plan::verify`].

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use proptest::prelude::*;
use weft_model::vc::{DbHost, DbSwitch, DbTrunk, DbVp, HostDb, Plan, Shape, VcError, plan};

/// A random connected database: `switches` switches joined by a random tree plus `extra`
/// trunks, hosts on random switches, some with their own VCI, maybe a virtual path.
fn database() -> impl Strategy<Value = HostDb> {
    (1usize..=5, 2usize..=16).prop_flat_map(|(ns, nh)| {
        (
            Just(ns),
            proptest::collection::vec(0usize..64, ns.saturating_sub(1)),
            proptest::collection::vec((0usize..ns, 0usize..ns), 0..3),
            proptest::collection::vec((0usize..ns, proptest::bool::weighted(0.3)), nh),
            proptest::option::weighted(0.4, (0usize..ns, 0usize..ns, 1u8..=255)),
        )
            .prop_map(|(ns, parents, extra, hosts, vp)| {
                let name = |s: usize| format!("sw{s}");
                let mut db = HostDb {
                    switches: (0..ns).map(|s| DbSwitch { name: name(s) }).collect(),
                    ..HostDb::default()
                };
                let mut next_port = vec![1u32; ns];
                let mut port = |s: usize| {
                    next_port[s] += 1;
                    next_port[s] - 1
                };
                for (i, (s, own_vci)) in hosts.iter().enumerate() {
                    db.hosts.push(DbHost {
                        name: format!("h{i}"),
                        switch: name(*s),
                        port: port(*s),
                        // Distinct from each other and from the planner's own (100 up).
                        vci: own_vci.then_some(1000 + 7 * i as u16),
                        addr: None,
                        site: None,
                    });
                }
                let mut join = |a: usize, b: usize, db: &mut HostDb| {
                    db.trunks.push(DbTrunk {
                        ends: [name(a), name(b)],
                        ports: [port(a), port(b)],
                    });
                };
                for (s, p) in parents.iter().enumerate() {
                    let child = s + 1;
                    join(p % child, child, &mut db);
                }
                for &(a, b) in &extra {
                    if a != b {
                        join(a, b, &mut db);
                    }
                }
                if let Some((a, b, vpi)) = vp {
                    if a != b {
                        db.vps.push(DbVp {
                            ends: [name(a), name(b)],
                            vpi,
                        });
                    }
                }
                db
            })
    })
}

fn shape(db: &HostDb) -> impl Strategy<Value = Shape> + use<> {
    let n = db.hosts.len();
    let hub = (0..n).prop_map(|h| Shape::Star(format!("h{h}")));
    let pairs = proptest::collection::vec((0..n, 0..n), 1..12).prop_map(move |v| {
        let mut seen = HashSet::new();
        let mut out: Vec<[String; 2]> = v
            .into_iter()
            .filter(|(a, b)| a != b && seen.insert((*a.min(b), *a.max(b))))
            .map(|(a, b)| [format!("h{a}"), format!("h{b}")])
            .collect();
        if out.is_empty() {
            out.push(["h0".into(), "h1".into()]);
        }
        Shape::Pairs(out)
    });
    prop_oneof![Just(Shape::Mesh), hub, pairs]
}

/// No two entries of a switch send cells out of one port with one label: two circuits would
/// share it on that link. A path entry owns its VPI on its output port.
fn no_label_twice(p: &Plan) -> Result<(), String> {
    for t in &p.tables {
        let mut out: HashSet<(u32, u8, u16)> = HashSet::new();
        let mut paths: HashMap<(u32, u8), usize> = HashMap::new();
        for e in &t.entries {
            match e.out_vci {
                Some(v) => {
                    if !out.insert((e.out_port, e.out_vpi, v)) {
                        return Err(format!(
                            "{}: port {} label {}/{v} twice",
                            t.switch, e.out_port, e.out_vpi
                        ));
                    }
                }
                None => *paths.entry((e.out_port, e.out_vpi)).or_default() += 1,
            }
        }
        for ((port, vpi), n) in &paths {
            if *n > 1 || out.iter().any(|(q, w, _)| q == port && w == vpi) {
                return Err(format!("{}: VPI {vpi} on port {port} twice", t.switch));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn every_planned_vc_delivers_and_no_vci_collides(
        (db, shape) in database().prop_flat_map(|db| { let s = shape(&db); (Just(db), s) })
    ) {
        let p = match plan(&db, &shape) {
            Ok(p) => p,
            // Two virtual paths can only overlap when there is one: none here.
            Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
        };
        let v = p.verify(&db).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(v.vcs, p.vcs.len());
        prop_assert_eq!(v.unused_entries, 0);
        prop_assert_eq!(p.counts.vcs, 2 * p.counts.pvcs);
        let n = db.hosts.len();
        match &shape {
            Shape::Mesh => prop_assert_eq!(p.counts.pvcs, n * (n - 1) / 2),
            Shape::Star(_) => prop_assert_eq!(p.counts.pvcs, n - 1),
            Shape::Pairs(list) => prop_assert_eq!(p.counts.pvcs, list.len()),
            Shape::Sites => {}
        }
        // Consistent numbering: every circuit to a host starts on the VCI that names it.
        let mut names: HashMap<&str, u16> = HashMap::new();
        for vc in &p.vcs {
            let first = *names.entry(vc.to.as_str()).or_insert(vc.vci);
            prop_assert_eq!(first, vc.vci);
        }
        no_label_twice(&p).map_err(TestCaseError::fail)?;
        // The plan reads back from its JSON and still verifies (`--check`).
        let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        prop_assert!(back.verify(&db).is_ok());
    }

    #[test]
    fn two_hosts_named_by_one_vci_are_a_conflict(db in database()) {
        prop_assume!(db.hosts.len() >= 3);
        let mut db = db;
        db.hosts[0].vci = Some(500);
        db.hosts[1].vci = Some(500);
        // h2 reaches both h0 and h1: on its link, 500 would name both.
        match plan(&db, &Shape::Mesh) {
            Err(VcError::Conflicts(c)) => prop_assert!(c.iter().any(|c| c.vc.vci == 500)),
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn sandia_esc_three_switches_twelve_hosts() {
    let path = repo().join("scenarios/hosts/sandia-esc.toml");
    let db = HostDb::parse(&std::fs::read_to_string(&path).unwrap(), "sandia-esc.toml").unwrap();
    assert_eq!((db.switches.len(), db.hosts.len()), (3, 12));
    let p = plan(&db, &Shape::Mesh).unwrap();
    let v = p.verify(&db).unwrap();
    // Sandia's O(n^2): 66 PVCs to fully interconnect 12 hosts, 132 one-way circuits.
    assert_eq!((p.counts.pvcs, p.counts.vcs, v.vcs), (66, 132, 132));
    no_label_twice(&p).unwrap();
}

#[test]
fn ebn_mesh_between_the_sites_names_the_destination() {
    let path = repo().join("scenarios/hosts/dhpc-ebn.toml");
    let db = HostDb::parse(&std::fs::read_to_string(&path).unwrap(), "dhpc-ebn.toml").unwrap();
    let p = plan(&db, &Shape::Sites).unwrap();
    p.verify(&db).unwrap();
    // Every Adelaide host to every Canberra host: 6 x 8 PVCs.
    assert_eq!(p.counts.pvcs, 48);
    for vc in &p.vcs {
        match vc.to.as_str() {
            "methuselah" => assert_eq!(vc.vci, 138),
            "dhpc04" => assert_eq!(vc.vci, 131),
            _ => {}
        }
    }
    // The EBN switch carries them all in its virtual path: two path entries, no channels.
    let ebn = p
        .counts
        .per_switch
        .iter()
        .find(|s| s.switch == "ebn")
        .unwrap();
    assert_eq!((ebn.vc_entries, ebn.vp_entries), (0, 2));
}
