//! `weft_sim::scenario::run` on small scenario files.

use weft_model::scenario::Scenario;

const CONTENTION: &str = r#"
name = "gigaswitch-contention"
seed = 3

[[host]]
name = "a"

[[switch]]
name = "sw"
fabric = "input-fifo"
ports = 5

[[link]]
ends = ["a", "sw"]
tech = "fddi"

[[workload]]
kind = "saturated"
inputs = [1, 2, 3, 4, 5]
outputs = 5
rate = "95Mbps"
slots = 50000
"#;

#[test]
fn contention_scenario_reports_efficiency_per_point() {
    let s = Scenario::parse(CONTENTION, "contention.toml").expect("valid scenario");
    let doc = weft_sim::scenario::run(&s, 3);
    assert_eq!(doc.samples.len(), 5);
    let eff: Vec<f64> = doc
        .samples
        .iter()
        .map(|x| x["efficiency"].as_f64().expect("efficiency"))
        .collect();
    assert!((eff[0] - 1.0).abs() < 1e-12);
    assert!(eff.windows(2).all(|w| w[1] < w[0]), "{eff:?}");
    for (m, e) in eff.iter().enumerate() {
        assert!(*e <= weft_model::calc::hol::gigaswitch_efficiency(5, m as u32 + 1) + 0.003);
    }
    let mbps = doc.samples[4]["throughput_mbps"].as_f64().expect("mbps");
    assert!((mbps - 95.0 * eff[4]).abs() < 1e-9);
    assert_eq!(doc, weft_sim::scenario::run(&s, 3));
}

const MANY_TO_ONE: &str = r#"
name = "sandia-two-to-one"

[[host]]
name = "a"
[[host]]
name = "b"
[[host]]
name = "c"

[[switch]]
name = "sw"
fabric = "output-queued"
buffer = "500 cells"
DROP

[[link]]
ends = ["a", "sw"]
tech = "oc3c"
[[link]]
ends = ["b", "sw"]
tech = "oc3c"
[[link]]
ends = ["c", "sw"]
tech = "oc3c"

[[workload]]
kind = "frames"
from = ["a", "b"]
to = ["c"]
size = 9180
rate = "134.784Mbps"   # 0.9 of the OC-3c cell stream
time = "50ms"
"#;

#[test]
fn two_hosts_to_one_over_oc3c_lose_cells_and_epd_saves_frames() {
    let run = |drop: &str| {
        let text = MANY_TO_ONE.replace("DROP", drop);
        let s = Scenario::parse(&text, "m2o.toml").expect("valid scenario");
        weft_sim::scenario::run(&s, 1).samples[0].clone()
    };
    let tail = run("drop = \"tail\"");
    let loss = tail["cell_loss"].as_f64().expect("loss");
    // 2 x 0.9 of the line offered to one line: close to 44% of cells must go.
    assert!((loss - 0.8 / 1.8).abs() < 0.03, "loss {loss}");
    let tail_good = tail["frame_goodput"].as_f64().expect("goodput");
    let epd = run("drop = \"epd\"\nepd_threshold = 0.6");
    let epd_good = epd["frame_goodput"].as_f64().expect("goodput");
    // The line can carry 1/1.8 of the frames offered; EPD comes close to that, tail drop less.
    assert!(epd_good > tail_good, "epd {epd_good} vs tail {tail_good}");
    assert!((epd_good - 1.0 / 1.8).abs() < 0.03, "epd {epd_good}");
    assert!(epd["goodput_mbps"].as_f64().expect("mbps") > 120.0, "{epd}");
}
