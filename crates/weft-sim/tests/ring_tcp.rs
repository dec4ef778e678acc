//! TCP across shared FDDI rings (`[[ring]]`): the simulated hosts' segments and ACKs wait for
//! the token at their stations, and what the switch has for a ring's hosts waits at its port's
//! station. Study 003's Figure 3: two Indigos on one concentrator's ring send to two on
//! another's through the switch.

use weft_model::scenario::{Metric, Scenario};

/// Indigos a and b on one ring, c and d on another (each with a repeating MAC and the switch
/// port), or each on its own port when `rings` is false; ttcp sessions a->c and b->d at once,
/// and a->c alone.
fn figure3(rings: bool) -> Scenario {
    let mut text = String::from("name = \"figure3\"\n");
    for h in ["a", "b", "c", "d"] {
        text += &format!("[[host]]\nname = \"{h}\"\ncosts = \"indigo-r4000\"\n");
        text += &format!("[[link]]\nends = [\"{h}\", \"sw\"]\ntech = \"fddi\"\n");
    }
    text += "[[switch]]\nname = \"sw\"\nlatency = \"16.5us\"\n";
    if rings {
        for pair in [r#"["a", "b"]"#, r#"["c", "d"]"#] {
            text +=
                &format!("[[ring]]\nswitch = \"sw\"\nhosts = {pair}\nmacs = 1\nfibre_km = 0.1\n");
        }
    }
    text += "[[workload]]\nkind = \"tput\"\nfrom = [\"a\", \"b\"]\nto = [\"c\", \"d\"]\n\
             traffic = \"pairs\"\nproto = \"tcp\"\nwindow = 64512\ntime = \"1s\"\n";
    text += "[[workload]]\nkind = \"tput\"\nfrom = \"a\"\nto = \"c\"\nproto = \"tcp\"\n\
             window = 64512\ntime = \"1s\"\n";
    Scenario::parse(&text, "figure3.toml").expect("valid scenario")
}

fn goodputs(s: &Scenario) -> Vec<f64> {
    weft_sim::scenario::run(s, 1)
        .samples
        .iter()
        .map(|x| x[Metric::GOODPUT_MBPS].as_f64().expect("goodput"))
        .collect()
}

/// On ports of their own the two sessions each carry what one Indigo sustains (91.4 Mbit/s);
/// through the rings they share each ring's 100 Mbit/s with the ACKs, and lose more: the far
/// port's station holds the token while the switch keeps its queue full, so the receivers'
/// ACKs wait and the senders' 63 KB windows run out. One session alone is the host's.
#[test]
fn two_sessions_share_the_rings_and_wait_for_acks_behind_the_token() {
    let apart = goodputs(&figure3(false));
    let ringed = goodputs(&figure3(true));
    assert!(apart[0] > 180.0, "{apart:?}");
    // The ring's capacity for two senders and the port's ACKs is 97.3 Mbit/s (calc::ring).
    assert!(ringed[0] < 95.0 && ringed[0] > 85.0, "{ringed:?}");
    assert!((ringed[1] - apart[1]).abs() < 0.5, "{ringed:?} {apart:?}");
}
