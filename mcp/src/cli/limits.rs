//! The limits and timeouts an operator tunes without a rebuild: one table names each of
//! them once (its flag, its variable, how it is written and where it lands in
//! [`ServerConfig`] or `HttpConfig`), and everything else (the command line, `--help`,
//! the ceilings and `--print-config`) is read from it.

use std::fmt;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

use super::settings::{Amount, NetConfig};
use crate::server::ServerConfig;

/// The `--help` heading of the limits.
const HEADING: &str =
    "Limits and timeouts (each defaults to the server's own value: see --print-config)";

/// How a limit is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    /// A whole number: `256`.
    Count,
    /// A size: `4MiB`, `512KiB`, `65536`.
    Bytes,
    /// A duration: `300ms`, `60s`, `10m`.
    Time,
}

impl Unit {
    fn value_name(self) -> &'static str {
        match self {
            Unit::Count => "N",
            Unit::Bytes => "SIZE",
            Unit::Time => "DURATION",
        }
    }

    fn parse(self, text: &str) -> Result<Amount, String> {
        let text = text.trim();
        match self {
            Unit::Count => text
                .replace('_', "")
                .parse()
                .map(Amount::Count)
                .map_err(|_| "expected a whole number, e.g. 256".to_owned()),
            Unit::Bytes => text
                .parse::<bytesize::ByteSize>()
                .ok()
                .and_then(|size| usize::try_from(size.as_u64()).ok())
                .map(Amount::Count)
                .ok_or_else(|| {
                    "expected a size: bytes (65536) or with a unit (512KiB, 4MiB, 1GiB)".to_owned()
                }),
            Unit::Time => humantime::parse_duration(text)
                .map(Amount::Time)
                .map_err(|e| format!("expected a duration such as 300ms, 60s or 10m ({e})")),
        }
    }

    /// Writes `amount` the way [`Unit::parse`] reads it back.
    fn show(self, amount: Amount) -> String {
        match (self, amount) {
            (Unit::Bytes, Amount::Count(n)) => {
                for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
                    if n >= size && n % size == 0 {
                        return format!("{}{unit}", n / size);
                    }
                }
                n.to_string()
            }
            (_, Amount::Count(n)) => n.to_string(),
            (_, Amount::Time(d)) => humantime::format_duration(d).to_string(),
        }
    }
}

/// Where a limit lives.
#[derive(Clone, Copy)]
// Without the `http` feature no limit lands in the (empty) HTTP settings.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
enum Slot {
    ServerCount(fn(&mut ServerConfig) -> &mut usize),
    ServerTime(fn(&mut ServerConfig) -> &mut Duration),
    HttpCount(fn(&mut NetConfig) -> &mut usize),
    HttpTime(fn(&mut NetConfig) -> &mut Duration),
}

impl Slot {
    fn in_server(self) -> bool {
        matches!(self, Slot::ServerCount(_) | Slot::ServerTime(_))
    }

    fn get(self, server: &mut ServerConfig, http: &mut NetConfig) -> Amount {
        match self {
            Slot::ServerCount(f) => Amount::Count(*f(server)),
            Slot::ServerTime(f) => Amount::Time(*f(server)),
            Slot::HttpCount(f) => Amount::Count(*f(http)),
            Slot::HttpTime(f) => Amount::Time(*f(http)),
        }
    }

    fn set(self, server: &mut ServerConfig, http: &mut NetConfig, amount: Amount) {
        match (self, amount) {
            (Slot::ServerCount(f), Amount::Count(n)) => *f(server) = n,
            (Slot::ServerTime(f), Amount::Time(d)) => *f(server) = d,
            (Slot::HttpCount(f), Amount::Count(n)) => *f(http) = n,
            (Slot::HttpTime(f), Amount::Time(d)) => *f(http) = d,
            // The parser gives every knob the amount its unit reads.
            _ => {}
        }
    }
}

/// One tunable limit.
struct Knob {
    /// Its name: the `ServerBuilder` or `HttpConfig` method that sets it in code.
    name: &'static str,
    /// Its flag, without the dashes.
    flag: &'static str,
    /// Its environment variable.
    env: &'static str,
    unit: Unit,
    /// Whether zero is a valid value.
    zero: bool,
    /// A maximum no setting may exceed (the protocol's), beside the author's ceiling.
    most: Option<(usize, &'static str)>,
    /// Where it lands: more than one place when the transports keep their own copy.
    slots: &'static [Slot],
    help: &'static str,
}

/// Every limit and timeout, in the order `--help` and `--print-config` list them.
const KNOBS: &[Knob] = &[
    Knob {
        name: "max_message_size",
        flag: "max-message-size",
        env: "MCP_MAX_MESSAGE_SIZE",
        unit: Unit::Bytes,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_message_size)],
        help: "The largest message accepted: a stdio line or an HTTP body (-32600 / 413)",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "max_header_bytes",
        flag: "max-header-bytes",
        env: "MCP_MAX_HEADER_BYTES",
        unit: Unit::Bytes,
        zero: false,
        most: None,
        slots: &[Slot::HttpCount(|c| &mut c.max_header_bytes)],
        help: "The largest total size of an HTTP request's headers (431)",
    },
    Knob {
        name: "max_in_flight",
        flag: "max-in-flight",
        env: "MCP_MAX_IN_FLIGHT",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_in_flight)],
        help: "Handlers running at once, across all clients (server_busy)",
    },
    Knob {
        name: "max_requests_per_connection",
        flag: "max-requests-per-connection",
        env: "MCP_MAX_REQUESTS_PER_CONNECTION",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_requests_per_connection)],
        help: "Handlers running at once for one client (connection_busy)",
    },
    Knob {
        name: "max_pending_per_connection",
        flag: "max-pending-per-connection",
        env: "MCP_MAX_PENDING_PER_CONNECTION",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_pending_per_connection)],
        help: "Questions (elicitation, sampling, roots) one client may have unanswered",
    },
    Knob {
        name: "max_connections",
        flag: "max-connections",
        env: "MCP_MAX_CONNECTIONS",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_connections)],
        help: "Connections whose state is kept; beyond it the oldest idle one is evicted",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "max_sessions",
        flag: "max-sessions",
        env: "MCP_MAX_SESSIONS",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::HttpCount(|c| &mut c.max_sessions)],
        help: "Streamable HTTP sessions at once (503 beyond it)",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "max_streams_per_session",
        flag: "max-streams-per-session",
        env: "MCP_MAX_STREAMS_PER_SESSION",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::HttpCount(|c| &mut c.max_streams_per_session)],
        help: "SSE streams one session may hold open (429 beyond it)",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "event_store_size",
        flag: "event-store-size",
        env: "MCP_EVENT_STORE_SIZE",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::HttpCount(|c| &mut c.event_store_events)],
        help: "SSE events each session keeps for Last-Event-ID resumption",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "event_store_bytes",
        flag: "event-store-bytes",
        env: "MCP_EVENT_STORE_BYTES",
        unit: Unit::Bytes,
        zero: false,
        most: None,
        slots: &[Slot::HttpCount(|c| &mut c.event_store_bytes)],
        help: "Bytes of SSE events each session keeps for resumption",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "header_read_timeout",
        flag: "header-read-timeout",
        env: "MCP_HEADER_READ_TIMEOUT",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::HttpTime(|c| &mut c.header_read_timeout)],
        help: "How long an HTTP connection may take to send a request's head, or sit idle between requests, before it is closed",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "per_core_threads",
        flag: "per-core-threads",
        env: "MCP_PER_CORE_THREADS",
        unit: Unit::Count,
        zero: true,
        most: Some((
            crate::transport::http::MAX_PER_CORE_THREADS,
            "the most threads per-core serving starts",
        )),
        slots: &[Slot::HttpCount(|c| &mut c.per_core_threads)],
        help: "Serve HTTP connections on this many single-threaded runtimes, each connection kept on one (0: the shared runtime)",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "session_idle_timeout",
        flag: "session-idle-timeout",
        env: "MCP_SESSION_IDLE_TIMEOUT",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::HttpTime(|c| &mut c.session_idle_timeout)],
        help: "How long an HTTP session may sit idle before it expires (then 404)",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "session_recheck",
        flag: "session-recheck",
        env: "MCP_SESSION_RECHECK",
        unit: Unit::Time,
        zero: true,
        most: None,
        slots: &[Slot::HttpTime(|c| &mut c.session_recheck)],
        help: "With --redis-url: how long a replica serves a session from its copy before reading the shared record again (0: every request)",
    },
    Knob {
        name: "max_subscriptions",
        flag: "max-subscriptions",
        env: "MCP_MAX_SUBSCRIPTIONS",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_subscriptions)],
        help: "resources/subscribe URIs one client may hold",
    },
    Knob {
        name: "max_listeners",
        flag: "max-listeners",
        env: "MCP_MAX_LISTENERS",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_listeners)],
        help: "Open subscriptions/listen streams, across all clients",
    },
    Knob {
        name: "max_completion_values",
        flag: "max-completion-values",
        env: "MCP_MAX_COMPLETION_VALUES",
        unit: Unit::Count,
        zero: false,
        most: Some((
            crate::server::completion::MAX_VALUES,
            "the protocol's limit",
        )),
        slots: &[Slot::ServerCount(|c| &mut c.max_completion_values)],
        help: "Values one completion/complete returns (at most 100)",
    },
    Knob {
        name: "page_size",
        flag: "page-size",
        env: "MCP_PAGE_SIZE",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.page_size)],
        help: "Entries per page of every list",
    },
    Knob {
        name: "page_bytes",
        flag: "page-bytes",
        env: "MCP_PAGE_BYTES",
        unit: Unit::Bytes,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.page_bytes)],
        help: "Bytes of JSON per page of every list (a page ends before the entry that would pass it)",
    },
    Knob {
        name: "outbound_capacity",
        flag: "outbound-capacity",
        env: "MCP_OUTBOUND_CAPACITY",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.outbound_capacity)],
        help: "Messages queued to a slow reader before its stream is dropped",
    },
    Knob {
        name: "max_used_nonces",
        flag: "max-used-nonces",
        env: "MCP_MAX_USED_NONCES",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_used_nonces)],
        help: "Used requestState nonces remembered until they expire (single process)",
    },
    Knob {
        name: "memory_limit",
        flag: "memory-limit",
        env: "MCP_MEMORY_LIMIT",
        unit: Unit::Bytes,
        zero: true,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.memory_limit)],
        help: "The memory limit new work is admitted against (0: the process's cgroup limit)",
    },
    Knob {
        name: "memory_high_water",
        flag: "memory-high-water",
        env: "MCP_MEMORY_HIGH_WATER",
        unit: Unit::Count,
        zero: true,
        most: Some((100, "a share in percent")),
        slots: &[Slot::ServerCount(|c| &mut c.memory_high_water)],
        help: "Percent of the memory limit from which new work gets 503 / memory_pressure (0: off)",
    },
    Knob {
        name: "call_timeout",
        flag: "call-timeout",
        env: "MCP_CALL_TIMEOUT",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.call_timeout)],
        help: "How long a tool, resource or prompt handler may run (callback_timeout)",
    },
    Knob {
        name: "elicitation_timeout",
        flag: "elicitation-timeout",
        env: "MCP_ELICITATION_TIMEOUT",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.elicitation_timeout)],
        help: "How long a question to the client (an approval, sampling, roots) waits",
    },
    Knob {
        name: "authorizer_timeout",
        flag: "authorizer-timeout",
        env: "MCP_AUTHORIZER_TIMEOUT",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.authorizer_timeout)],
        help: "How long an authorizer may take to decide (then it denies)",
    },
    Knob {
        name: "request_state_ttl",
        flag: "request-state-ttl",
        env: "MCP_REQUEST_STATE_TTL",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.request_state_ttl)],
        help: "How long a sealed 2026-07-28 requestState (an approval round) stays valid",
    },
    Knob {
        name: "task_ttl",
        flag: "task-ttl",
        env: "MCP_TASK_TTL",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.task_ttl)],
        help: "How long a task's record is kept after it was created",
    },
    Knob {
        name: "task_time_limit",
        flag: "task-time-limit",
        env: "MCP_TASK_TIME_LIMIT",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.task_time_limit)],
        help: "How long a task may run before it ends failed (task_timeout)",
    },
    Knob {
        name: "task_poll_interval",
        flag: "task-poll-interval",
        env: "MCP_TASK_POLL_INTERVAL",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.task_poll_interval)],
        help: "How often clients are asked to poll a task",
    },
    Knob {
        name: "max_tasks",
        flag: "max-tasks",
        env: "MCP_MAX_TASKS",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_tasks)],
        help: "Tasks kept at once, running or finished (task_limit beyond it)",
    },
    Knob {
        name: "max_tasks_per_owner",
        flag: "max-tasks-per-owner",
        env: "MCP_MAX_TASKS_PER_OWNER",
        unit: Unit::Count,
        zero: false,
        most: None,
        slots: &[Slot::ServerCount(|c| &mut c.max_tasks_per_owner)],
        help: "Tasks one principal (or connection) keeps at once (task_limit beyond it)",
    },
    Knob {
        name: "discover_ttl",
        flag: "discover-ttl",
        env: "MCP_DISCOVER_TTL",
        unit: Unit::Time,
        zero: true,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.discover_ttl)],
        help: "How long a 2026-07-28 client may cache server/discover",
    },
    Knob {
        name: "list_ttl",
        flag: "list-ttl",
        env: "MCP_LIST_TTL",
        unit: Unit::Time,
        zero: true,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.list_ttl)],
        help: "How long a 2026-07-28 client may cache a list",
    },
    Knob {
        name: "read_ttl",
        flag: "read-ttl",
        env: "MCP_READ_TTL",
        unit: Unit::Time,
        zero: true,
        most: None,
        slots: &[Slot::ServerTime(|c| &mut c.read_ttl)],
        help: "How long a 2026-07-28 client may cache a resource read",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "keep_alive",
        flag: "sse-keep-alive",
        env: "MCP_SSE_KEEP_ALIVE",
        unit: Unit::Time,
        zero: false,
        most: None,
        slots: &[Slot::HttpTime(|c| &mut c.keep_alive)],
        help: "How often an idle SSE stream gets a keep-alive comment",
    },
    #[cfg(feature = "http")]
    Knob {
        name: "retry",
        flag: "sse-retry",
        env: "MCP_SSE_RETRY",
        unit: Unit::Time,
        zero: true,
        most: None,
        slots: &[Slot::HttpTime(|c| &mut c.retry)],
        help: "The reconnection delay SSE streams announce (retry:)",
    },
    Knob {
        name: "shutdown_grace",
        flag: "shutdown-grace",
        env: "MCP_SHUTDOWN_GRACE",
        unit: Unit::Time,
        zero: true,
        most: None,
        slots: &[
            Slot::ServerTime(|c| &mut c.shutdown_grace),
            #[cfg(feature = "http")]
            Slot::HttpTime(|c| &mut c.shutdown_grace),
        ],
        help: "How long running requests may finish after SIGTERM or Ctrl-C",
    },
];

impl Knob {
    fn parse(&self, text: &str) -> Result<Amount, String> {
        let amount = self.unit.parse(text)?;
        if !self.zero && matches!(amount, Amount::Count(0) | Amount::Time(Duration::ZERO)) {
            return Err("must be more than zero".to_owned());
        }
        Ok(amount)
    }

    fn show(&self, amount: Amount) -> String {
        self.unit.show(amount)
    }

    fn fits(&self, amount: Amount) -> bool {
        matches!(
            (self.unit, amount),
            (Unit::Count | Unit::Bytes, Amount::Count(_)) | (Unit::Time, Amount::Time(_))
        )
    }

    fn arg(&'static self) -> Arg {
        Arg::new(self.name)
            .long(self.flag)
            .env(self.env)
            .value_name(self.unit.value_name())
            .help(self.help)
            .help_heading(HEADING)
            .value_parser(move |text: &str| self.parse(text))
    }
}

/// Where a setting's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The command line.
    CommandLine,
    /// Its environment variable.
    Env,
    /// Nobody set it: the value in the server's code (or the framework's default).
    Code,
}

impl From<ValueSource> for Origin {
    fn from(source: ValueSource) -> Self {
        match source {
            ValueSource::CommandLine => Origin::CommandLine,
            ValueSource::EnvVariable => Origin::Env,
            _ => Origin::Code,
        }
    }
}

/// The limits and timeouts given on the command line or in `MCP_*` variables, flattened
/// into [`Options`](super::Options). Run [`Options::run`](super::Options::run) to apply
/// them; `--help` lists them under their own heading.
///
/// It also remembers where every other option's value came from (its flag, its variable
/// or its default), for warnings and `--print-config` to name.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Each limit given, by its place in the table, with where it came from.
    given: Vec<(usize, Amount, Origin)>,
    /// Where each option of the command line got its value, by id.
    origins: Vec<(String, Origin)>,
}

impl Limits {
    /// Where the option with this id got its value (`Code` when it has none).
    pub(crate) fn origin(&self, id: &str) -> Origin {
        self.origins
            .iter()
            .find(|(i, _)| i == id)
            .map_or(Origin::Code, |(_, o)| *o)
    }
}

impl FromArgMatches for Limits {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut limits = Limits::default();
        limits.update_from_arg_matches(matches)?;
        Ok(limits)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for (i, knob) in KNOBS.iter().enumerate() {
            if let Some(amount) = matches.get_one::<Amount>(knob.name) {
                let origin = matches
                    .value_source(knob.name)
                    .map_or(Origin::Code, Origin::from);
                self.given.retain(|(j, _, _)| *j != i);
                self.given.push((i, *amount, origin));
            }
        }
        for id in matches.ids() {
            if let Some(source) = matches.value_source(id.as_str()) {
                self.origins.retain(|(i, _)| i != id.as_str());
                self.origins.push((id.as_str().to_owned(), source.into()));
            }
        }
        Ok(())
    }
}

impl Args for Limits {
    fn augment_args(cmd: Command) -> Command {
        KNOBS.iter().fold(cmd, |cmd, knob| cmd.arg(knob.arg()))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// One limit as the server will run with it.
#[derive(Clone, Debug)]
pub(crate) struct Effective {
    knob: &'static Knob,
    amount: Amount,
    origin: Origin,
    /// Whether the value in code differs from the framework's default.
    from_code: bool,
    /// Whether the framework's default was lowered to the author's ceiling.
    lowered: bool,
    ceiling: Option<Amount>,
}

impl fmt::Debug for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl Effective {
    /// The setting's name and value, as `--print-config` writes them.
    pub(crate) fn entry(&self) -> (&'static str, String) {
        let value = match self.amount {
            Amount::Count(n) if self.knob.unit == Unit::Count => n.to_string(),
            other => format!("{:?}", self.knob.show(other)),
        };
        (self.knob.name, value)
    }

    /// Where it came from, and its ceiling.
    pub(crate) fn note(&self) -> String {
        let origin = match self.origin {
            Origin::CommandLine => format!("--{}", self.knob.flag),
            Origin::Env => self.knob.env.to_owned(),
            Origin::Code if self.from_code => "set in code".to_owned(),
            Origin::Code if self.lowered => "the ceiling, below the default".to_owned(),
            Origin::Code => "default".to_owned(),
        };
        match self.ceiling {
            Some(c) => format!("{origin}; at most {}", self.knob.show(c)),
            None => origin,
        }
    }
}

/// The ceilings an author set, checked against the table.
fn ceilings(set: &[(&'static str, Amount)], errors: &mut Vec<String>) -> Vec<Option<Amount>> {
    let mut out = vec![None; KNOBS.len()];
    for (name, max) in set {
        match KNOBS.iter().position(|k| k.name == *name) {
            Some(i) if KNOBS[i].fits(*max) => out[i] = Some(*max),
            Some(i) => errors.push(format!(
                "Setup::ceiling({name:?}, ..): {name} is {}, so its ceiling must be {}",
                match KNOBS[i].unit {
                    Unit::Time => "a duration",
                    Unit::Bytes => "a size in bytes",
                    Unit::Count => "a count",
                },
                match KNOBS[i].unit {
                    Unit::Time => "a Duration",
                    _ => "a usize",
                },
            )),
            None => errors.push(format!(
                "Setup::ceiling({name:?}, ..): there is no limit named {name:?}; the limits are {}",
                KNOBS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    out
}

/// Applies the limits given on the command line to `server` and `http` (whose values are
/// the defaults), within the author's `ceilings`. `server_fixed` says the server is already
/// built, so its own limits cannot change. Every problem is reported, one per line.
pub(crate) fn apply(
    given: &Limits,
    ceilings_set: &[(&'static str, Amount)],
    server_fixed: bool,
    server: &mut ServerConfig,
    http: &mut NetConfig,
) -> Result<Vec<Effective>, String> {
    let mut errors = Vec::new();
    let ceilings = ceilings(ceilings_set, &mut errors);
    let (mut framework_server, mut framework_http) = (ServerConfig::default(), NetConfig::new());
    let mut effective = Vec::with_capacity(KNOBS.len());
    for (i, knob) in KNOBS.iter().enumerate() {
        let code = knob.slots[0].get(server, http);
        let from_code = code != knob.slots[0].get(&mut framework_server, &mut framework_http);
        let (mut amount, origin) = match given.given.iter().find(|(j, _, _)| *j == i) {
            Some((_, amount, origin)) => (*amount, *origin),
            None => (code, Origin::Code),
        };
        // Written only for an error: formatting every limit's value (a duration through
        // humantime) was a twentieth of a cold start's instructions.
        let asked = amount;
        let set_by = || {
            let shown = knob.show(asked);
            match origin {
                Origin::CommandLine => format!("--{} {shown}", knob.flag),
                Origin::Env => format!("{}={shown}", knob.env),
                Origin::Code => format!("{} = {shown} (set in code)", knob.name),
            }
        };
        let mut lowered = false;
        if let Some(max) = ceilings[i]
            && amount > max
        {
            if origin == Origin::Code && !from_code {
                // A ceiling below the framework's default lowers the default to it.
                amount = max;
                lowered = true;
            } else {
                errors.push(format!(
                    "{} is above the ceiling this server sets for {}: at most {}",
                    set_by(),
                    knob.name,
                    knob.show(max)
                ));
            }
        }
        if let Some((most, why)) = knob.most
            && amount > Amount::Count(most)
        {
            errors.push(format!("{} is above {why}: at most {most}", set_by()));
        }
        if origin != Origin::Code || lowered {
            if server_fixed && knob.slots.iter().any(|s| s.in_server()) {
                errors.push(format!(
                    "{} cannot be applied: this binary hands the command line an already built server; pass its ServerBuilder instead (server! does)",
                    set_by()
                ));
            }
            for slot in knob.slots {
                slot.set(server, http, amount);
            }
        }
        effective.push(Effective {
            knob,
            amount,
            origin,
            from_code,
            lowered,
            ceiling: ceilings[i],
        });
    }
    if errors.is_empty() {
        Ok(effective)
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use crate::transport::http::HttpConfig;

    fn parse(args: &[&str]) -> Result<Limits, clap::Error> {
        let cmd = Limits::augment_args(Command::new("x"));
        let matches = cmd.try_get_matches_from(args)?;
        Limits::from_arg_matches(&matches)
    }

    #[test]
    fn durations_sizes_and_counts_read_as_operators_write_them() {
        let time = |s| Unit::Time.parse(s).unwrap();
        assert_eq!(time("300ms"), Amount::Time(Duration::from_millis(300)));
        assert_eq!(time("60s"), Amount::Time(Duration::from_secs(60)));
        assert_eq!(time("10m"), Amount::Time(Duration::from_secs(600)));
        assert_eq!(time("1h 30m"), Amount::Time(Duration::from_secs(5400)));
        let bytes = |s| Unit::Bytes.parse(s).unwrap();
        assert_eq!(bytes("4MiB"), Amount::Count(4 << 20));
        assert_eq!(bytes("512 KiB"), Amount::Count(512 << 10));
        assert_eq!(bytes("65536"), Amount::Count(65536));
        assert_eq!(Unit::Count.parse("10_000").unwrap(), Amount::Count(10_000));
        assert!(Unit::Time.parse("10").unwrap_err().contains("300ms"));
        assert!(Unit::Bytes.parse("lots").unwrap_err().contains("4MiB"));
        assert!(
            Unit::Count
                .parse("-1")
                .unwrap_err()
                .contains("whole number")
        );
        // What is shown reads back as the same amount.
        for (unit, amount) in [
            (Unit::Bytes, Amount::Count(4 << 20)),
            (Unit::Bytes, Amount::Count(16 << 10)),
            (Unit::Bytes, Amount::Count(1000)),
            (Unit::Time, Amount::Time(Duration::from_secs(90))),
            (Unit::Time, Amount::Time(Duration::from_millis(250))),
            (Unit::Time, Amount::Time(Duration::ZERO)),
        ] {
            assert_eq!(unit.parse(&unit.show(amount)).unwrap(), amount);
        }
        assert_eq!(Unit::Bytes.show(Amount::Count(4 << 20)), "4MiB");
        assert_eq!(
            Unit::Time.show(Amount::Time(Duration::from_secs(120))),
            "2m"
        );
    }

    #[test]
    fn every_limit_has_a_flag_and_a_variable_named_after_it() {
        let mut seen = std::collections::HashSet::new();
        for knob in KNOBS {
            assert!(seen.insert(knob.flag), "{} twice", knob.flag);
            assert_eq!(
                knob.env,
                format!("MCP_{}", knob.flag.to_uppercase().replace('-', "_")),
                "{}",
                knob.name
            );
            assert!(!knob.slots.is_empty(), "{}", knob.name);
            // The first slot holds the default, and every slot takes the knob's unit.
            let (mut s, mut h) = (ServerConfig::default(), HttpConfig::new());
            for slot in knob.slots {
                assert!(knob.fits(slot.get(&mut s, &mut h)), "{}", knob.name);
            }
        }
    }

    #[test]
    fn the_readme_lists_every_limit_with_its_flag_and_variable() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
        let readme = std::fs::read_to_string(path).expect("the README");
        let table = readme
            .split("### Limits\n")
            .nth(1)
            .and_then(|rest| rest.split("\n### ").next())
            .expect("a Limits section");
        for knob in KNOBS {
            let row = table
                .lines()
                .find(|l| l.starts_with('|') && l.contains(&format!("`--{}`", knob.flag)))
                .unwrap_or_else(|| panic!("no row for --{}", knob.flag));
            assert!(row.contains(&format!("`{}`", knob.name)), "{row}");
            assert!(row.contains(&format!("`{}`", knob.env)), "{row}");
        }
    }

    /// Applies `args` to the framework's defaults (with `http` as the binary's HTTP
    /// settings), within `ceilings`; `fixed` as for an already built server.
    fn tuned(
        args: &[&str],
        http: HttpConfig,
        ceilings: &[(&'static str, Amount)],
        fixed: bool,
    ) -> Result<(ServerConfig, HttpConfig, Vec<Effective>), String> {
        let (mut s, mut h) = (ServerConfig::default(), http);
        let given = parse(args).map_err(|e| e.to_string())?;
        apply(&given, ceilings, fixed, &mut s, &mut h).map(|eff| (s, h, eff))
    }

    #[test]
    fn flags_and_variables_set_limits_and_bad_values_name_the_flag() {
        let args = ["x", "--call-timeout", "300ms", "--max-message-size", "1MiB"];
        let (s, _, eff) = tuned(&args, HttpConfig::new(), &[], false).unwrap();
        assert_eq!(s.call_timeout, Duration::from_millis(300));
        assert_eq!(s.max_message_size, 1 << 20);
        assert_eq!(s.max_in_flight, 256, "untouched");
        let call = eff.iter().find(|e| e.knob.name == "call_timeout").unwrap();
        assert_eq!(call.origin, Origin::CommandLine);
        assert_eq!(call.note(), "--call-timeout");
        assert_eq!(call.entry(), ("call_timeout", "\"300ms\"".to_owned()));

        let e = parse(&["x", "--max-in-flight", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("'--max-in-flight <N>'"), "{e}");
        assert!(e.contains("must be more than zero"), "{e}");
        let e = parse(&["x", "--call-timeout", "soon"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid value 'soon' for '--call-timeout <DURATION>'"),
            "{e}"
        );
        assert!(
            parse(&["x", "--read-ttl", "0"]).is_ok(),
            "a zero ttl is a real hint"
        );
    }

    #[test]
    fn the_command_line_may_lower_a_ceiling_but_never_exceed_it() {
        let ceilings = [
            ("call_timeout", Amount::Time(Duration::from_secs(600))),
            ("max_sessions", Amount::Count(200)),
        ];
        let run = |args: &[&str], http| tuned(args, http, &ceilings, false);
        let args = ["x", "--call-timeout", "10m", "--max-sessions", "50"];
        let (s, h, _) = run(&args, HttpConfig::new()).unwrap();
        assert_eq!(s.call_timeout, Duration::from_secs(600));
        assert_eq!(h.max_sessions, 50);
        let e = run(&["x", "--call-timeout", "11m"], HttpConfig::new()).unwrap_err();
        assert_eq!(
            e,
            "--call-timeout 11m is above the ceiling this server sets for call_timeout: at most 10m"
        );
        let e = run(&["x", "--max-completion-values", "500"], HttpConfig::new()).unwrap_err();
        assert_eq!(
            e,
            "--max-completion-values 500 is above the protocol's limit: at most 100"
        );
        // A typo must not start thousands of threads.
        let e = run(&["x", "--per-core-threads", "20000"], HttpConfig::new()).unwrap_err();
        assert_eq!(
            e,
            "--per-core-threads 20000 is above the most threads per-core serving starts: at most 1024"
        );
        let (_, h, _) = run(&["x", "--per-core-threads", "2"], HttpConfig::new()).unwrap();
        assert_eq!(h.per_core_threads, 2);
        assert_eq!(
            HttpConfig::new().per_core_threads(20000).per_core_threads,
            1024
        );
        // The framework's default max_sessions (1000) is above this ceiling: the ceiling
        // becomes the default. A value the author set in code above it is an error.
        let (_, h, _) = run(&["x"], HttpConfig::new()).unwrap();
        assert_eq!(h.max_sessions, 200);
        let e = run(&["x"], HttpConfig::new().max_sessions(500)).unwrap_err();
        assert_eq!(
            e,
            "max_sessions = 500 (set in code) is above the ceiling this server sets for max_sessions: at most 200"
        );
    }

    #[test]
    fn a_ceiling_for_no_limit_or_of_the_wrong_kind_is_refused() {
        let ceiling = |name| [(name, Amount::Count(1))];
        let e = tuned(&["x"], HttpConfig::new(), &ceiling("call_timout"), false).unwrap_err();
        assert!(e.contains("no limit named \"call_timout\""), "{e}");
        assert!(e.contains("call_timeout"), "{e}");
        let e = tuned(&["x"], HttpConfig::new(), &ceiling("call_timeout"), false).unwrap_err();
        assert!(e.contains("must be a Duration"), "{e}");
    }

    #[test]
    fn a_built_server_takes_http_limits_but_not_its_own() {
        let args = ["x", "--max-sessions", "5"];
        let (_, h, _) = tuned(&args, HttpConfig::new(), &[], true).unwrap();
        assert_eq!(h.max_sessions, 5);
        let args = ["x", "--call-timeout", "5s"];
        let e = tuned(&args, HttpConfig::new(), &[], true).unwrap_err();
        assert!(e.contains("--call-timeout 5s cannot be applied"), "{e}");
    }

    #[test]
    fn shutdown_grace_reaches_both_transports() {
        let args = ["x", "--shutdown-grace", "250ms"];
        let (s, h, _) = tuned(&args, HttpConfig::new(), &[], false).unwrap();
        assert_eq!(s.shutdown_grace, Duration::from_millis(250));
        assert_eq!(h.shutdown_grace, Duration::from_millis(250));
    }
}
