//! The one table: medians per phase and metric, ratios against rmcp and the floor from the
//! same run, and whether each of issue 7's targets is met.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::proc::Program;
use crate::stats::{Measure, median};

pub struct Server {
    pub name: &'static str,
    pub program: Program,
    pub package: &'static str,
}

/// The columns, in order: ours as deployed (authorizers set, default logging), ours
/// unguarded (what the earlier tables measured), rmcp and the floor.
pub const GUARDED: usize = 0;
pub const OURS: usize = 1;
pub const RMCP: usize = 2;
pub const FLOOR: usize = 3;
const SERVERS: usize = 4;

/// A bound on one of our two configurations ÷ another server.
#[derive(Clone, Copy)]
struct Target {
    subject: usize,
    against: usize,
    /// `true`: ratio must be at least `bound`; `false`: at most.
    at_least: bool,
    bound: f64,
}

/// Both configurations at most (or, `at_least`, at least) `bound` × `against`.
fn both(against: usize, at_least: bool, bound: f64) -> Vec<Target> {
    [GUARDED, OURS]
        .map(|subject| Target {
            subject,
            against,
            at_least,
            bound,
        })
        .to_vec()
}

fn both_at_most(against: usize, bound: f64) -> Vec<Target> {
    both(against, false, bound)
}

fn both_at_least(against: usize, bound: f64) -> Vec<Target> {
    both(against, true, bound)
}

/// Issue 20's bound on CPU per request against the floor: 1.5× guarded, 1.3× unguarded.
fn cpu_against_floor() -> Vec<Target> {
    vec![
        Target {
            subject: GUARDED,
            against: FLOOR,
            at_least: false,
            bound: 1.5,
        },
        Target {
            subject: OURS,
            against: FLOOR,
            at_least: false,
            bound: 1.3,
        },
    ]
}

#[derive(Clone, Copy)]
enum Unit {
    PerSecond,
    Micros,
    Mib,
    Millis,
    Seconds,
}

struct Row {
    label: String,
    unit: Unit,
    samples: [Vec<f64>; SERVERS],
    missing: [bool; SERVERS],
    targets: Vec<Target>,
}

pub struct Report {
    names: Vec<&'static str>,
    rows: Vec<Row>,
    index: BTreeMap<String, usize>,
}

impl Report {
    pub fn new(servers: &[Server]) -> Report {
        Report {
            names: servers.iter().map(|s| s.name).collect(),
            rows: Vec::new(),
            index: BTreeMap::new(),
        }
    }

    fn row(&mut self, label: &str, unit: Unit, targets: Vec<Target>) -> &mut Row {
        let i = *self.index.entry(label.to_owned()).or_insert_with(|| {
            self.rows.push(Row {
                label: label.to_owned(),
                unit,
                samples: Default::default(),
                missing: [false; SERVERS],
                targets,
            });
            self.rows.len() - 1
        });
        &mut self.rows[i]
    }

    fn load_targets(phase: &str) -> [Vec<Target>; 5] {
        let stdio = phase.starts_with("stdio");
        let many = phase.contains(" 16 clients") || phase.contains(" 64 clients");
        let one = phase.ends_with(" 1 client");
        let rps = if phase.contains("socketpair") {
            both_at_least(RMCP, 5.0)
        } else if stdio || many {
            both_at_least(RMCP, 1.5)
        } else {
            vec![]
        };
        let p50 = if one { both_at_most(RMCP, 1.0) } else { vec![] };
        let p99 = if many {
            both_at_most(RMCP, 1.0)
        } else {
            vec![]
        };
        let cpu = if phase.contains("pipes") {
            [both_at_most(RMCP, 0.5), cpu_against_floor()].concat()
        } else if stdio {
            cpu_against_floor()
        } else if many {
            [both_at_most(RMCP, 0.6), cpu_against_floor()].concat()
        } else {
            vec![]
        };
        [rps, p50, p99, cpu, both_at_most(RMCP, 1.0)]
    }

    pub fn add_load(&mut self, phase: &str, server: usize, m: Measure) {
        let [rps, p50, p99, cpu, rss] = Self::load_targets(phase);
        let values = [
            (format!("{phase}: req/s"), Unit::PerSecond, rps, m.rps),
            (
                format!("{phase}: p50 latency (µs)"),
                Unit::Micros,
                p50,
                m.p50_us,
            ),
            (
                format!("{phase}: p99 latency (µs)"),
                Unit::Micros,
                p99,
                m.p99_us,
            ),
            (
                format!("{phase}: server CPU per request (µs)"),
                Unit::Micros,
                cpu,
                m.cpu_us_per_req,
            ),
            (
                format!("{phase}: peak RSS (MiB)"),
                Unit::Mib,
                rss,
                m.peak_rss_kib as f64 / 1024.0,
            ),
        ];
        for (label, unit, targets, v) in values {
            self.row(&label, unit, targets).samples[server].push(v);
        }
    }

    pub fn add_missing(&mut self, phase: &str, server: usize) {
        let [rps, p50, p99, cpu, rss] = Self::load_targets(phase);
        let rows = [
            (format!("{phase}: req/s"), Unit::PerSecond, rps),
            (format!("{phase}: p50 latency (µs)"), Unit::Micros, p50),
            (format!("{phase}: p99 latency (µs)"), Unit::Micros, p99),
            (
                format!("{phase}: server CPU per request (µs)"),
                Unit::Micros,
                cpu,
            ),
            (format!("{phase}: peak RSS (MiB)"), Unit::Mib, rss),
        ];
        for (label, unit, targets) in rows {
            self.row(&label, unit, targets).missing[server] = true;
        }
    }

    fn static_unit(label: &str) -> Unit {
        if label.ends_with("(ms)") {
            Unit::Millis
        } else if label.ends_with("(s)") {
            Unit::Seconds
        } else {
            Unit::Mib
        }
    }

    /// The target of a static row: a stdio-only build (no network transports) must be
    /// well under rmcp's (issue 15: at most 0.6x in build time and stripped size); every
    /// other build and binary at most rmcp's.
    fn static_targets(label: &str) -> Vec<Target> {
        if label.contains("stdio only") {
            both_at_most(RMCP, 0.6)
        } else {
            both_at_most(RMCP, 1.0)
        }
    }

    pub fn add_static(&mut self, label: &str, server: usize, value: f64) {
        let unit = Self::static_unit(label);
        let targets = Self::static_targets(label);
        self.row(label, unit, targets).samples[server].push(value);
    }

    pub fn add_static_missing(&mut self, label: &str, server: usize) {
        let unit = Self::static_unit(label);
        let targets = Self::static_targets(label);
        self.row(label, unit, targets).missing[server] = true;
    }

    pub fn render(&self, machine: &str, method: &str) -> String {
        let n = &self.names;
        let mut out = String::new();
        let _ = writeln!(out, "Machine: {machine}");
        let _ = writeln!(out, "Method: {method}");
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "| metric | {} | {} | {} | {} | {g} ÷ {r} | {g} ÷ {f} | {o} ÷ {r} | {o} ÷ {f} | target | met |",
            n[GUARDED],
            n[OURS],
            n[RMCP],
            n[FLOOR],
            g = n[GUARDED],
            o = n[OURS],
            r = n[RMCP],
            f = n[FLOOR],
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|:-:|");
        let (mut met, mut missed) = (0, 0);
        for row in &self.rows {
            let med: Vec<Option<f64>> = (0..SERVERS)
                .map(|s| {
                    if row.missing[s] || row.samples[s].is_empty() {
                        None
                    } else {
                        Some(median(&mut row.samples[s].clone()))
                    }
                })
                .collect();
            let ratio = |subject: usize, against: usize| match (med[subject], med[against]) {
                (Some(o), Some(x)) if x > 0.0 => Some(o / x),
                _ => None,
            };
            let cell = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| fmt(row.unit, v));
            let rcell = |r: Option<f64>| r.map_or("n/a".to_owned(), |r| format!("{r:.2}×"));
            let target = row
                .targets
                .iter()
                .map(|t| {
                    format!(
                        "{} {} {}× {}",
                        n[t.subject],
                        if t.at_least { "≥" } else { "≤" },
                        t.bound,
                        n[t.against]
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let verdicts: Vec<Option<bool>> = row
                .targets
                .iter()
                .map(|t| {
                    ratio(t.subject, t.against).map(|r| {
                        if t.at_least {
                            r >= t.bound
                        } else {
                            r <= t.bound
                        }
                    })
                })
                .collect();
            let verdict = if verdicts.is_empty() {
                ""
            } else if verdicts.iter().any(Option::is_none) {
                missed += 1;
                "?"
            } else if verdicts.iter().all(|v| *v == Some(true)) {
                met += 1;
                "✓"
            } else {
                missed += 1;
                "✗"
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.label,
                cell(med[GUARDED]),
                cell(med[OURS]),
                cell(med[RMCP]),
                cell(med[FLOOR]),
                rcell(ratio(GUARDED, RMCP)),
                rcell(ratio(GUARDED, FLOOR)),
                rcell(ratio(OURS, RMCP)),
                rcell(ratio(OURS, FLOOR)),
                target,
                verdict
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Rows whose targets are all met: {met} of {}.",
            met + missed
        );
        out
    }
}

fn fmt(unit: Unit, v: f64) -> String {
    match unit {
        Unit::PerSecond => thousands(v.round() as u64),
        Unit::Micros if v >= 100.0 => format!("{v:.0}"),
        Unit::Micros => format!("{v:.2}"),
        Unit::Mib => format!("{v:.1}"),
        Unit::Millis => format!("{v:.1}"),
        Unit::Seconds => format!("{v:.0}"),
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
