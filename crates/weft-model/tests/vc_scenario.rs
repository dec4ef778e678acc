//! A scenario's `[vc]` host database and its `vc` workloads: parsed with errors at their key
//! (never a panic), planned by the model engine.
#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use weft_model::calc;
use weft_model::scenario::{Metric, Scenario};

const DB: &str = r#"
[vc]
[[vc.switch]]
name = "s1"
[[vc.switch]]
name = "s2"
[[vc.host]]
name = "a"
switch = "s1"
port = 1
site = "x"
[[vc.host]]
name = "b"
switch = "s1"
port = 2
site = "x"
[[vc.host]]
name = "c"
switch = "s2"
port = 1
site = "y"
[[vc.host]]
name = "d"
switch = "s2"
port = 2
site = "y"
[[vc.trunk]]
ends = ["s1", "s2"]
ports = [9, 9]
"#;

fn with(workloads: &str) -> String {
    format!("name = \"t\"\n{workloads}\n{DB}")
}

fn err(text: &str) -> String {
    Scenario::parse(text, "t.toml").unwrap_err().to_string()
}

#[test]
fn a_mesh_a_star_and_a_growth_sweep_are_planned_by_the_model() {
    let s = Scenario::parse(
        &with(
            r#"
[[workload]]
kind = "vc"
[[workload]]
kind = "vc"
plan = "star"
hub = "a"
sites = "y"
[[workload]]
kind = "vc"
plan = "sites"
[[workload]]
kind = "vc"
hosts = [2, 3, 4]
"#,
        ),
        "t.toml",
    )
    .unwrap();
    let db = s.vc.as_ref().unwrap();
    assert_eq!(db.hosts.len(), 4);
    let p = calc::evaluate(&s);
    let get = |i: usize, k: &str| p[i].metrics.get(k).copied();
    // Four hosts: 6 PVCs; the counts over n = 2, 3, 4 (1, 3, 6) are too few to tell degree 2
    // from more, so no degree is reported (sandia-pvc-growth.toml has 12 hosts).
    assert_eq!(get(0, Metric::PVCS), Some(6.0));
    assert_eq!(get(0, Metric::PVC_GROWTH_DEGREE), None);
    assert_eq!(get(0, "verified"), Some(1.0));
    assert_eq!(get(0, "vci_per_destination"), Some(1.0));
    // A star around a (site x) among site y's hosts: a-c and a-d.
    assert_eq!(get(1, Metric::PVCS), Some(2.0));
    // Between sites only: 2 x 2.
    assert_eq!(get(2, Metric::PVCS), Some(4.0));
    // The sweep: 1, 3, 6 PVCs.
    let sweep: Vec<f64> = p[3..].iter().map(|x| x.metrics[Metric::PVCS]).collect();
    assert_eq!(sweep, [1.0, 3.0, 6.0]);
    // The other engines' kinds are untouched: the kind's default metric is the PVCs.
    assert_eq!(s.workloads[0].kind.default_metric(), Metric::PVCS);
}

#[test]
fn bad_circuit_keys_are_errors_at_their_key() {
    // A vc workload without a database.
    let e = err("name = \"t\"\n[[workload]]\nkind = \"vc\"\n");
    assert!(e.contains("[vc]"), "{e}");
    // A star without a hub, a hub that is no host, a hub on a mesh.
    let e = err(&with("[[workload]]\nkind = \"vc\"\nplan = \"star\"\n"));
    assert!(e.contains("workload[0].plan") && e.contains("hub"), "{e}");
    let e = err(&with(
        "[[workload]]\nkind = \"vc\"\nplan = \"star\"\nhub = \"zz\"\n",
    ));
    assert!(e.contains("workload[0].hub") && e.contains("zz"), "{e}");
    let e = err(&with("[[workload]]\nkind = \"vc\"\nhub = \"a\"\n"));
    assert!(e.contains("workload[0].hub"), "{e}");
    let e = err(&with("[[workload]]\nkind = \"vc\"\nplan = \"ring\"\n"));
    assert!(e.contains("expected mesh, sites, star or pairs"), "{e}");
    // An unknown site, a site of the wrong type.
    let e = err(&with("[[workload]]\nkind = \"vc\"\nsites = [\"z\"]\n"));
    assert!(
        e.contains("workload[0].sites") && e.contains("\"z\""),
        "{e}"
    );
    let e = err(&with("[[workload]]\nkind = \"vc\"\nsites = 3\n"));
    assert!(e.contains("workload[0].sites"), "{e}");
    // More hosts than there are, fewer than two, a fraction.
    let e = err(&with("[[workload]]\nkind = \"vc\"\nhosts = 5\n"));
    assert!(e.contains("workload[0].hosts") && e.contains("4"), "{e}");
    let e = err(&with("[[workload]]\nkind = \"vc\"\nhosts = 1\n"));
    assert!(e.contains("workload[0].hosts"), "{e}");
    let e = err(&with("[[workload]]\nkind = \"vc\"\nhosts = 2.5\n"));
    assert!(e.contains("fraction"), "{e}");
    // A star whose hub is not among the first hosts.
    let e = err(&with(
        "[[workload]]\nkind = \"vc\"\nplan = \"star\"\nhub = \"d\"\nhosts = 2\n",
    ));
    assert!(e.contains("not among the first 2"), "{e}");
    // Circuit keys on another kind.
    let e = err(&with(
        "[[host]]\nname = \"h\"\n[[workload]]\nkind = \"tput\"\nfrom = \"h\"\nto = \"h\"\nhosts = 3\n",
    ));
    assert!(e.contains("only a workload of kind = \"vc\""), "{e}");
}

#[test]
fn a_bad_database_is_an_error_not_a_panic() {
    let cases = [
        "name = \"t\"\nvc = 3\n",
        "name = \"t\"\n[vc]\nswitch = 3\n",
        "name = \"t\"\n[vc]\nextra = 1\n",
        "name = \"t\"\n[[vc.host]]\nname = \"a\"\nswitch = \"nowhere\"\nport = 1\n",
        "name = \"t\"\n[[vc.switch]]\nname = \"s\"\n[[vc.host]]\nname = \"a\"\nswitch = \"s\"\nport = -1\n",
        "name = \"t\"\n[[vc.switch]]\nname = \"s\"\n[[vc.host]]\nname = \"a\"\nswitch = \"s\"\nport = 1\n[[vc.host]]\nname = \"b\"\nswitch = \"s\"\nport = 1\n",
    ];
    for text in cases {
        let e = err(text);
        assert!(
            e.starts_with("t.toml:") && e.contains(": vc: "),
            "{text}: {e}"
        );
    }
}

#[test]
fn contracts_on_circuits_and_paths_parse_and_bad_ones_are_errors_at_their_key() {
    let forward = |c: &str| {
        format!(
            "name = \"t\"\n{}\n{c}",
            DB.replace("[vc]\n", "[vc]\nforward = \"mesh\"\n")
        )
    };
    let good = "[[vc.contract]]\nfrom = \"a\"\nto = \"c\"\npcr = \"26Mbps\"\npolice = true\n";
    let s = Scenario::parse(&forward(good), "t.toml").unwrap();
    assert_eq!(s.vc_contracts.len(), 1);
    assert!(s.vc_contracts[0].contract.police);
    // Without `forward` there is no switch to enforce it.
    let e = err(&format!("name = \"t\"\n{DB}\n{good}"));
    assert!(e.contains("vc.contract[0]") && e.contains("forward"), "{e}");
    let e = err(&forward(&good.replace("\"a\"", "\"zz\"")));
    assert!(e.contains("vc.contract[0].from") && e.contains("zz"), "{e}");
    let e = err(&forward("[[vc.contract]]\nvpi = 5\npcr = \"1Mbps\"\n"));
    assert!(
        e.contains("vc.contract[0].vpi") && e.contains("switch"),
        "{e}"
    );
    let e = err(&forward("[[vc.contract]]\nfrom = \"a\"\nto = \"c\"\n"));
    assert!(e.contains("pcr"), "{e}");
    let e = err(&forward(&format!("{good}rate = 3\n")));
    assert!(
        e.contains("vc.contract[0].rate") && e.contains("unknown key"),
        "{e}"
    );
    let e = err(&forward(
        "[[vc.contract]]\nfrom = \"a\"\nvpi = 5\nswitch = \"s1\"\npcr = \"1Mbps\"\n",
    ));
    assert!(e.contains("a circuit") && e.contains("a path"), "{e}");
}
