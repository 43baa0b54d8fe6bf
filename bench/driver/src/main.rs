//! The benchmark driver: runs every phase against each server in turn, several interleaved
//! rounds, and prints one table of medians with ratios against rmcp and the floor, measured
//! in the same run. See bench/README.md.
//!
//! ```text
//! driver all [--rounds 5] [--calls 100000] [--window 64] [--http-seconds 3]
//!            [--clients 1,16,64] [--cold-runs 10] [--build-time] [--bin-dir target/release]
//!            [--only stdio,http,cold,static] [--out FILE]
//! driver stdio <binary> [pipes|socketpair] [calls] [window]
//! driver http <binary> [handshake|modern] [clients] [seconds]
//! ```

mod cold;
mod growth;
mod http;
mod proc;
mod report;
mod stats;
mod stdio;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proc::{Program, Wiring};
use report::{Report, Server};
use stats::Measure;

struct Options {
    rounds: usize,
    calls: u64,
    window: usize,
    http_seconds: f64,
    clients: Vec<usize>,
    cold_runs: usize,
    build_time: bool,
    bin_dir: PathBuf,
    only: Vec<String>,
    out: Option<PathBuf>,
}

fn parse_all(args: &[String]) -> Options {
    let mut o = Options {
        rounds: 5,
        calls: 100_000,
        window: 64,
        http_seconds: 3.0,
        clients: vec![1, 16, 64],
        cold_runs: 10,
        build_time: false,
        bin_dir: PathBuf::from("target/release"),
        only: vec![],
        out: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| panic!("{a} needs a value"))
        };
        match a.as_str() {
            "--rounds" => o.rounds = value().parse().expect("--rounds"),
            "--calls" => o.calls = value().parse().expect("--calls"),
            "--window" => o.window = value().parse().expect("--window"),
            "--http-seconds" => o.http_seconds = value().parse().expect("--http-seconds"),
            "--clients" => {
                o.clients = value()
                    .split(',')
                    .map(|c| c.parse().expect("--clients"))
                    .collect()
            }
            "--cold-runs" => o.cold_runs = value().parse().expect("--cold-runs"),
            "--build-time" => o.build_time = true,
            "--bin-dir" => o.bin_dir = PathBuf::from(value()),
            "--only" => o.only = value().split(',').map(str::to_owned).collect(),
            "--out" => o.out = Some(PathBuf::from(value())),
            other => panic!("unknown option {other}"),
        }
    }
    o
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("all") => run_all(parse_all(&args[1..])),
        Some("growth") => growth::run(growth::parse(&args[1..])),
        Some("stdio") => {
            let program = Program::new(&args[1]);
            let wiring = match args.get(2).map(String::as_str) {
                Some("socketpair") => Wiring::Sockets,
                _ => Wiring::Pipes,
            };
            let calls = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(100_000);
            let window = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(64);
            println!("{:?}", stdio::run(&program, &[], wiring, calls, window));
        }
        Some("http") => {
            let program = unguarded(&args[1]);
            let era = match args.get(2).map(String::as_str) {
                Some("modern") => http::Era::Modern,
                _ => http::Era::Handshake,
            };
            let clients = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(16);
            let secs: f64 = args.get(4).and_then(|a| a.parse().ok()).unwrap_or(3.0);
            println!(
                "{:?}",
                http::run(&program, era, clients, Duration::from_secs_f64(secs))
            );
        }
        _ => {
            eprintln!(
                "usage: driver all [options] | driver stdio <binary> [pipes|socketpair] [calls] [window] | driver http <binary> [handshake|modern] [clients] [seconds]"
            );
            std::process::exit(2);
        }
    }
}

fn run_all(o: Options) {
    let servers = [
        Server {
            name: "guarded",
            program: Program {
                binary: o.bin_dir.join("ours"),
                env: vec![("BENCH_GUARDED", "1".into())],
            },
            package: "bench-ours",
        },
        Server {
            name: "ours",
            program: unguarded(o.bin_dir.join("ours")),
            package: "bench-ours",
        },
        Server {
            name: "rmcp",
            program: unguarded(o.bin_dir.join("rmcp-server")),
            package: "bench-rmcp",
        },
        Server {
            name: "floor",
            program: unguarded(o.bin_dir.join("floor")),
            package: "bench-floor",
        },
    ];
    for s in &servers {
        assert!(
            s.program.binary.exists(),
            "{} is missing: build the bench workspace in release first",
            s.program.binary.display()
        );
    }
    let wants = |part: &str| o.only.is_empty() || o.only.iter().any(|p| p == part);
    let mut report = Report::new(&servers);
    let started = Instant::now();
    for round in 0..o.rounds {
        // Each round starts with a different server, so drift hits all alike.
        let order: Vec<usize> = (0..servers.len())
            .map(|i| (i + round) % servers.len())
            .collect();
        eprintln!(
            "round {}/{} ({:.0} s so far)",
            round + 1,
            o.rounds,
            started.elapsed().as_secs_f64()
        );
        if wants("stdio") {
            for wiring in [Wiring::Pipes, Wiring::Sockets] {
                for &i in &order {
                    let m = stdio::run(&servers[i].program, &[], wiring, o.calls, o.window);
                    log(servers[i].name, &format!("stdio {}", wiring.name()), &m);
                    report.add_load(&format!("stdio, {}", wiring.name()), i, m);
                }
            }
        }
        if wants("http") {
            for era in [http::Era::Handshake, http::Era::Modern] {
                for &clients in &o.clients {
                    let phase = format!("HTTP {}, {clients} client{}", era.name(), plural(clients));
                    let d = Duration::from_secs_f64(o.http_seconds);
                    // The most clients again with ours on one single-threaded runtime per
                    // core (an opt-in setting: the rows above keep measuring the default).
                    // rmcp and the floor have no such setting; their cells repeat this
                    // round's default runs.
                    let per_core = (o.clients.iter().max() == Some(&clients))
                        .then(|| format!("{phase}, per-core threads"));
                    for &i in &order {
                        let m = http::run(&servers[i].program, era, clients, d);
                        record(&mut report, &servers[i], i, &phase, m.clone());
                        let Some(per_core) = &per_core else { continue };
                        let m = if servers[i].package == "bench-ours" {
                            let mut program = servers[i].program.clone();
                            program
                                .env
                                .push(("MCP_PER_CORE_THREADS", cores().to_string()));
                            http::run(&program, era, clients, d)
                        } else {
                            m
                        };
                        record(&mut report, &servers[i], i, per_core, m);
                    }
                }
            }
        }
        if wants("cold") {
            for &i in &order {
                for _ in 0..o.cold_runs {
                    let t = cold::stdio(&servers[i].program);
                    report.add_static("cold start, stdio (ms)", i, t.as_secs_f64() * 1e3);
                    match cold::http(&servers[i].program) {
                        Some(t) => {
                            report.add_static("cold start, HTTP (ms)", i, t.as_secs_f64() * 1e3)
                        }
                        None => report.add_static_missing("cold start, HTTP (ms)", i),
                    }
                }
            }
        }
    }
    if wants("static") {
        for (i, s) in servers.iter().enumerate() {
            let size = std::fs::metadata(&s.program.binary)
                .map(|m| m.len())
                .unwrap_or(0);
            report.add_static("binary size (MiB)", i, size as f64 / 1048576.0);
            report.add_static(
                "binary size, stripped (MiB)",
                i,
                stripped_size(&s.program.binary) / 1048576.0,
            );
        }
    }
    if o.build_time {
        // Each server twice from clean: as benchmarked (stdio and Streamable HTTP), and
        // with `--no-default-features` (stdio only: our macros and command line, rmcp's
        // server, macros and stdio transport; the floor has no features).
        // The guarded and unguarded columns are one package: built once, reported in both.
        let mut built: Vec<(&str, f64, f64, f64)> = Vec::new();
        for (i, s) in servers.iter().enumerate() {
            if let Some(&(_, full, stdio, stripped)) = built.iter().find(|(p, ..)| *p == s.package)
            {
                report.add_static("clean release build (s)", i, full);
                report.add_static("clean release build, stdio only (s)", i, stdio);
                report.add_static("binary size, stripped, stdio only (MiB)", i, stripped);
                continue;
            }
            let bin = s.program.binary.file_name().expect("a binary name");
            eprintln!("clean release build of {} ...", s.package);
            let (full, _) = clean_build(s.package, bin, &[]);
            report.add_static("clean release build (s)", i, full);
            eprintln!("clean release build of {}, stdio only ...", s.package);
            let (stdio, stripped) = clean_build(s.package, bin, &["--no-default-features"]);
            let stripped = stripped / 1048576.0;
            report.add_static("clean release build, stdio only (s)", i, stdio);
            report.add_static("binary size, stripped, stdio only (MiB)", i, stripped);
            built.push((s.package, full, stdio, stripped));
        }
    }
    let text = report.render(&machine(), &o.describe());
    println!("{text}");
    if let Some(out) = &o.out {
        if let Some(dir) = out.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(out, &text).expect("write report");
        eprintln!("report written to {}", out.display());
    }
}

/// Adds one server's HTTP measurement of `phase` to the report (and to the log), or
/// records that it did not serve it.
fn record(report: &mut Report, server: &Server, i: usize, phase: &str, m: Option<Measure>) {
    match m {
        Some(m) => {
            log(server.name, phase, &m);
            report.add_load(phase, i, m);
        }
        None => {
            eprintln!("  {:<6} {phase}: not served", server.name);
            report.add_missing(phase, i);
        }
    }
}

/// The machine's cores: how many per-core threads ours runs with.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

impl Options {
    fn describe(&self) -> String {
        format!(
            "{} rounds, medians; stdio: {} calls, {} in flight; HTTP: {} s per phase, clients {:?} (the most also with ours on per-core threads, MCP_PER_CORE_THREADS = the cores; rmcp's and the floor's cells there repeat their default runs); cold start: {} spawns per round",
            self.rounds, self.calls, self.window, self.http_seconds, self.clients, self.cold_runs
        )
    }
}

/// `binary` as the earlier tables ran it: no authorizer, so ours needs the boot guard lifted
/// to serve HTTP (rmcp and the floor ignore the variable).
fn unguarded(binary: impl Into<PathBuf>) -> Program {
    Program {
        binary: binary.into(),
        env: vec![(
            "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
            "true".into(),
        )],
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn log(server: &str, phase: &str, m: &Measure) {
    eprintln!(
        "  {server:<6} {phase:<34} {:>8} reqs {:>9.0} req/s  p50 {:>8.1} µs  p99 {:>8.1} µs  cpu {:>6.2} µs/req  rss {:>6.1} MiB{}",
        m.requests,
        m.rps,
        m.p50_us,
        m.p99_us,
        m.cpu_us_per_req,
        m.peak_rss_kib as f64 / 1024.0,
        if m.errors > 0 {
            format!("  ERRORS {}", m.errors)
        } else {
            String::new()
        }
    );
}

fn stripped_size(binary: &Path) -> f64 {
    let tmp = std::env::temp_dir().join(format!("bench-stripped-{}", std::process::id()));
    let ok = std::process::Command::new("strip")
        .arg("-o")
        .arg(&tmp)
        .arg(binary)
        .status()
        .is_ok_and(|s| s.success());
    let size = if ok {
        std::fs::metadata(&tmp)
            .map(|m| m.len() as f64)
            .unwrap_or(f64::NAN)
    } else {
        f64::NAN
    };
    let _ = std::fs::remove_file(&tmp);
    size
}

/// Seconds for `cargo build --release -p <package> <extra>` into an empty target
/// directory, and the stripped size in bytes of the binary `bin` it built.
fn clean_build(package: &str, bin: &std::ffi::OsStr, extra: &[&str]) -> (f64, f64) {
    let dir = std::env::temp_dir().join(format!("bench-build-{package}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let start = Instant::now();
    let status = std::process::Command::new("cargo")
        .args(["build", "--release", "--offline", "--quiet", "-p", package])
        .args(extra)
        .arg("--target-dir")
        .arg(&dir)
        .status()
        .expect("cargo");
    let secs = start.elapsed().as_secs_f64();
    let stripped = stripped_size(&dir.join("release").join(bin));
    let _ = std::fs::remove_dir_all(&dir);
    if status.success() {
        (secs, stripped)
    } else {
        (f64::NAN, f64::NAN)
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map_or(String::new(), |k| format!(", {:.0} GiB", k / 1048576.0));
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("{cpu}, {cores} cores{mem}, Linux {kernel}, {rustc}")
}
