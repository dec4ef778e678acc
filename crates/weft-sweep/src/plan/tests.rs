use super::*;

/// The flags of a few commands, as the `weft` command line would give them.
struct Cli;

impl Commands for Cli {
    fn flags(&self, words: &[String]) -> Result<Option<Vec<Flag>>, String> {
        let f = |names: &[(&str, bool)]| {
            Ok(Some(
                names
                    .iter()
                    .map(|(n, v)| Flag {
                        long: n.to_string(),
                        takes_value: *v,
                    })
                    .collect(),
            ))
        };
        match words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["sim", "hol"] => f(&[
                ("ports", true),
                ("slots", true),
                ("contention", true),
                ("seed", true),
                ("json", false),
                ("quiet", false),
            ]),
            ["sim", "many-to-one"] => f(&[
                ("frames", false),
                ("frame", true),
                ("seed", true),
                ("json", false),
            ]),
            ["calc", "window"] => f(&[("rtt", true), ("window", true), ("json", false)]),
            ["calc", "techs"] => f(&[]),
            other => Err(format!("`weft {}` is not a command", other.join(" "))),
        }
    }
}

fn parse(text: &str) -> Result<Plan, PlanError> {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    Plan::parse(text, "plan.toml", &scenarios, &Cli)
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn command_plan_in_file_order() {
    let p = parse(
        "command = [\"sim\", \"hol\"]\nseeds = { from = 1, to = 5 }\nseconds_per_run = 0.05\n[grid]\nslots = 200000\nports = { from = 2, to = 21 }\ncontention = [\"random\", \"rr\"]\n",
    )
    .unwrap();
    assert_eq!(p.keys(), ["slots", "ports", "contention"]);
    assert_eq!(p.run_count(), 200);
    assert_eq!(p.seeds.as_deref(), Some(&[1, 2, 3, 4, 5][..]));
    assert_eq!(p.seconds_per_run, Some(0.05));
    assert_eq!(
        p.target,
        Target::Command {
            words: vec!["sim".into(), "hol".into()]
        }
    );
}

#[test]
fn scenario_plan_checks_every_value_against_the_scenario() {
    let p = parse(
        "scenario = \"ebn-vp26.toml\"\nengine = \"model\"\nseeds = [1]\n[grid]\n\"workload.0.window\" = [35600, 65536, \"128KiB\"]\n\"link.1.delay\" = [\"8.48ms\", \"20ms\"]\n",
    )
    .unwrap();
    assert_eq!(p.run_count(), 6);
    let Target::Scenario { engine, text, .. } = &p.target else {
        panic!("scenario")
    };
    assert_eq!(engine, "model");
    assert!(text.contains("ebn-vp26"));

    let e =
        err("scenario = \"ebn-vp26.toml\"\n[grid]\n\"workload.0.window\" = [35600, \"lots\"]\n");
    assert!(
        e.starts_with("plan.toml:3:23: grid.\"workload.0.window\": the scenario refuses \"lots\""),
        "{e}"
    );
    let e = err("scenario = \"ebn-vp26.toml\"\n[grid]\n\"workload.7.window\" = [1]\n");
    assert!(
        e.contains("`workload.7.window`: workload has 2 entries (0 to 1)"),
        "{e}"
    );
    let e = err("scenario = \"ebn-vp26.toml\"\n[grid]\n\"switch.0.bufer\" = [\"64 frames\"]\n");
    assert!(e.contains("unknown key"), "{e}");
}

#[test]
fn errors_point_at_the_line_and_column() {
    for (text, want) in [
        ("command = [\"sim\", \"hol\"\n", "plan.toml:1:"),
        ("comand = [\"sim\"]\n", "plan.toml:1:1: comand: unknown key"),
        ("seeds = [1]\n", "missing `scenario"),
        (
            "command = [\"sim\", \"hol\"]\nscenario = \"x.toml\"\n",
            "not both",
        ),
        ("command = \"sim hol\"\n", "list of words"),
        (
            "command = [\"sim\", \"hal\"]\n",
            "plan.toml:1:11: command: `weft sim hal` is not a command",
        ),
        ("command = [\"calc\", \"techs\"]\n", "no --json"),
        (
            "command = [\"calc\", \"window\"]\nseeds = [1]\n",
            "takes no --seed",
        ),
        ("command = [\"sweep\"]\n", "cannot run sweeps"),
        (
            "command = [\"sim\", \"hol\"]\n[grid]\nportz = [1]\n",
            "plan.toml:3:1: grid.portz: the command has no flag --portz; it has --ports, --slots, --contention",
        ),
        (
            "command = [\"sim\", \"hol\"]\n[grid]\nseed = [1]\n",
            "set by the sweep itself",
        ),
        (
            "command = [\"sim\", \"hol\"]\n[grid]\nports = [true]\n",
            "takes a value",
        ),
        (
            "command = [\"sim\", \"many-to-one\"]\n[grid]\nframes = [1]\n",
            "is a switch",
        ),
        (
            "command = [\"sim\", \"hol\"]\n[grid]\nports = [[1, 2]]\n",
            "a list inside a list",
        ),
        (
            "command = [\"sim\", \"hol\"]\nengine = \"sim\"\n",
            "belongs to scenario plans",
        ),
        ("scenario = \"nope.toml\"\n", "no scenario file at"),
        (
            "scenario = \"ebn-vp26.toml\"\nengine = \"ns3\"\n",
            "expected one of model, sim, emu",
        ),
        (
            "command = [\"sim\", \"hol\"]\nseeds = [-1]\n",
            "whole numbers",
        ),
        (
            "command = [\"sim\", \"hol\"]\nseconds_per_run = 0\n",
            "seconds > 0",
        ),
        (
            "command = [\"sim\", \"hol\"]\nseeds = { from = 1, to = 100000 }\n[grid]\nports = { from = 1, to = 100 }\n",
            "more than 1000000 runs",
        ),
        (
            "command = [\"sim\", \"hol\"]\ngrid = 3\n",
            "expected a table",
        ),
    ] {
        let e = err(text);
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

#[test]
fn switches_take_booleans() {
    let p =
        parse("command = [\"sim\", \"many-to-one\"]\n[grid]\nframes = [true, false]\n").unwrap();
    assert_eq!(p.run_count(), 2);
}

#[test]
fn line_and_column_count_characters() {
    assert_eq!(line_column("ab\ncé\nx", 7), (3, 1));
    assert_eq!(line_column("ab\ncéx", 6), (2, 3));
    assert_eq!(line_column("", 10), (1, 1));
}

#[test]
fn every_prefix_of_the_shipped_plans_parses_or_says_where() {
    let plans = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans");
    for name in ["hol-grid.toml", "ebn-window.toml"] {
        let text = std::fs::read_to_string(plans.join(name)).unwrap();
        assert!(Plan::parse(&text, name, &plans, &Cli).is_ok(), "{name}");
        for end in (0..text.len()).filter(|&e| text.is_char_boundary(e)) {
            match Plan::parse(&text[..end], name, &plans, &Cli) {
                Ok(p) => assert!(p.run_count() >= 1),
                Err(PlanError::At { line, column, .. }) => assert!(line >= 1 && column >= 1),
                Err(e) => panic!("{e}"),
            }
        }
    }
}
