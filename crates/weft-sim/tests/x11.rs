//! The `x11` workload on the simulated network: a renderer's frames reach the X server whole,
//! and the sustained rate is the closed form's ([`weft_model::calc::x11`]) within a stated
//! tolerance.

use weft_model::app::x11::keys;
use weft_model::calc::evaluate;
use weft_model::scenario::Scenario;

/// A renderer `r` (no costs) and a display `d` (`costs`) on one `tech` link, an x11 workload
/// of 1152 x 900 8-bit frames between them.
fn pair(tech: &str, costs: &str, frames: u64) -> Scenario {
    let text = format!(
        "name = \"x\"\n[[host]]\nname = \"r\"\n[[host]]\nname = \"d\"\n{costs}\n\
         [[link]]\nends = [\"r\", \"d\"]\ntech = \"{tech}\"\ndelay = \"5us\"\n\
         [[workload]]\nkind = \"x11\"\nfrom = \"r\"\nto = \"d\"\nframes = {frames}\n"
    );
    Scenario::parse(&text, "x.toml").expect("valid scenario")
}

/// (sim, model) of the scenario's x11_mbps, and the sim's sample.
fn rates(s: &Scenario) -> (f64, f64, serde_json::Value) {
    let x = weft_sim::scenario::run(s, 1).samples.remove(0);
    let sim = x[keys::X11_MBPS].as_f64().expect("sim rate");
    let model = evaluate(s)[0].metrics[keys::X11_MBPS];
    (sim, model, x)
}

/// Free hosts on a 10 Mbit/s Ethernet: the wire sets the pace on both engines, within 2%
/// (the sim also pays the last segment's way through and the slow start of the first frame,
/// which the sustained rate leaves out).
#[test]
fn on_ethernet_the_wire_sets_the_rate_on_both_engines() {
    let s = pair("ethernet10", "", 6);
    let (sim, model, x) = rates(&s);
    assert!(
        (sim / model - 1.0).abs() < 0.02,
        "sim {sim} against the closed form's {model}: {x}"
    );
    assert_eq!(x[keys::FRAMES], 6);
    assert_eq!(x["server_drawn_bytes"], 6 * 1152 * 900);
}

/// A Sparc 20 display on OC-3c: its receive path and frame-buffer copy set the pace. The
/// simulator's X server reads whatever has arrived each time it runs (about 34 reads a frame
/// here) where the closed form charges one read per request (5 a frame), each 0.43 ms on this
/// host, so the sim is slower: by 15.6% on this pair (12.5% in sandia-avs-x11), held to at
/// most 18%.
#[test]
fn a_sparc_20_display_is_held_by_its_receive_path_on_both_engines() {
    let s = pair("oc3c", "costs = \"sparc20-m50-solaris2.3\"", 6);
    let (sim, model, x) = rates(&s);
    assert!(
        sim <= model * 1.02 && sim >= model * 0.82,
        "sim {sim} against the closed form's {model}: {x}"
    );
    let free = pair("oc3c", "", 6);
    let (fast, _, _) = rates(&free);
    assert!(fast > 1.3 * sim, "a free display {fast}, a Sparc 20 {sim}");
}
