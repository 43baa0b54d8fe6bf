//! Memory-pressure admission: near its memory limit the server refuses **new** work rather
//! than be killed by the kernel's OOM killer with every request in flight.
//!
//! # The limit
//!
//! By default the limit is the one of the process's own cgroup (cgroup v2 `memory.max`, or
//! cgroup v1 `memory.limit_in_bytes` under the memory controller, the tightest of the
//! group and its ancestors), compared with the group's working set (usage less the
//! inactive file cache the kernel reclaims first). A process in no limited cgroup has no
//! limit, and the check is off. An operator can give a limit instead
//! ([`ServerConfig::memory_limit`](crate::server::ServerConfig::memory_limit),
//! `--memory-limit` / `MCP_MEMORY_LIMIT`): it is compared with the process's resident set.
//!
//! # The decision
//!
//! The limit is found as the server starts and logged, and usage is read every 100 ms by a
//! background thread; deciding on a message is two atomic loads. Finding a cgroup reads
//! files under `/proc` and `/sys` (about a tenth of a millisecond): the generated `main`
//! looks from its log thread while it boots, and the server then takes its first reading
//! as it is built; elsewhere the sampler's thread looks, and a message that arrives before
//! the first reading waits for it.
//! From [`ServerConfig::memory_high_water`](crate::server::ServerConfig::memory_high_water)
//! percent of the limit (default 90; `--memory-high-water` / `MCP_MEMORY_HIGH_WATER`; 0
//! turns the check off) until usage has stayed 5 points of the limit below it for half a
//! second:
//!
//! - a new request gets the JSON-RPC error [`codes::MEMORY_PRESSURE`]
//!   (-32030), whose message starts `memory_pressure:` and whose `data` carries
//!   `retryAfterMs`, `usedBytes` and `limitBytes`; over HTTP the POST (and a new session,
//!   and a new legacy SSE connection) gets **503** with `Retry-After` and that body;
//! - what keeps work already running goes on: `ping`, notifications (`cancelled`,
//!   `initialized`, progress), answers to the server's own questions (elicitation,
//!   sampling, roots), `tasks/get`, `tasks/result`, `tasks/update`, `tasks/cancel`,
//!   `resources/unsubscribe`, and open streams. Nothing running is stopped.
//!
//! Entering the state is logged once as a warning, leaving it once as info (target
//! `mcp::pressure`), and with the `otel` feature every refusal counts in
//! `mcp.server.memory_pressure.refusals`.
//!
//! While over the mark, the sampler also asks the allocator (glibc) to return memory it
//! holds freed, so the state ends when the work that needed the memory does.

mod cgroup;
mod watch;

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::protocol::methods::Method;
use crate::protocol::{ErrorObject, codes};
use watch::{Setting, Watch};
pub(crate) use watch::{expect_cgroup_early, find_cgroup_early};

/// How long a refused client is asked to wait before trying again, in seconds.
pub(crate) const RETRY_AFTER_SECS: u64 = 2;

/// Whether new work is taken: one per server, sharing the sampler of every server with
/// the same setting.
#[derive(Clone, Debug, Default)]
pub(crate) struct Admission {
    watch: Option<Arc<Watch>>,
}

impl Admission {
    /// The admission a server's settings ask for (`ServerConfig::memory_limit`, 0 for the
    /// cgroup's, and `memory_high_water`, a percentage): off when the mark is 0, or when no
    /// limit is given and the process is in no limited cgroup.
    pub(crate) fn new(memory_limit: usize, high_water: usize) -> Admission {
        Self::with_root(memory_limit, high_water, Path::new("/"))
    }

    fn with_root(memory_limit: usize, high_water: usize, root: &Path) -> Admission {
        if high_water == 0 {
            return Admission::default();
        }
        Admission {
            watch: Some(watch::shared(Setting {
                limit: memory_limit as u64,
                high_percent: high_water as u64,
                root: root.to_owned(),
            })),
        }
    }

    /// The error refusing a request now, if memory is short and `method` starts new work.
    pub(crate) fn refuses(&self, method: &str) -> Option<ErrorObject> {
        let watch = self.watch.as_ref()?;
        let limit = watch.settled()?.limit;
        if !watch.over() {
            return None;
        }
        let known = Method::parse(method);
        if known.is_some_and(continues_work) {
            return None;
        }
        #[cfg(feature = "otel")]
        crate::telemetry::count_pressure_refusal(known.map_or("other", |m| m.spec().name));
        Some(refusal(watch.used(), limit))
    }

    /// Whether a new session or connection is refused now.
    #[cfg(feature = "http")]
    pub(crate) fn refuses_connection(&self) -> Option<ErrorObject> {
        self.refuses(crate::protocol::methods::INITIALIZE)
    }

    /// The limit and high-water mark in bytes, once the sampler has found a limit.
    #[cfg(test)]
    fn settled_marks(&self) -> Option<(u64, u64)> {
        let marks = self.watch.as_ref()?.settled()?;
        Some((marks.limit, marks.high))
    }
}

/// Requests that keep work already running going, answered even under pressure.
fn continues_work(method: Method) -> bool {
    matches!(
        method,
        Method::Ping
            | Method::TasksGet
            | Method::TasksResult
            | Method::TasksUpdate
            | Method::TasksCancel
            | Method::ResourcesUnsubscribe
            | Method::Initialized
            | Method::Cancelled
            | Method::RootsListChanged
    )
}

/// The error of a refused request.
fn refusal(used: u64, limit: u64) -> ErrorObject {
    ErrorObject::new(
        codes::MEMORY_PRESSURE,
        format!(
            "memory_pressure: the server is near its memory limit ({} of {} MiB in use) and takes no new work until memory is released; work in progress continues; retry after {RETRY_AFTER_SECS} s",
            used >> 20,
            limit >> 20
        ),
    )
    .with_data(json!({
        "retryAfterMs": RETRY_AFTER_SECS * 1000,
        "usedBytes": used,
        "limitBytes": limit,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::methods;

    #[test]
    fn under_pressure_new_work_is_refused_and_running_work_goes_on() {
        // An explicit limit of 1 MiB: this process's resident set is always above it.
        let admission = Admission::new(1 << 20, 90);
        assert_eq!(
            admission.settled_marks(),
            Some((1 << 20, (1 << 20) * 9 / 10))
        );
        for method in [
            methods::TOOLS_CALL,
            methods::INITIALIZE,
            methods::RESOURCES_READ,
            methods::TOOLS_LIST,
            methods::SUBSCRIPTIONS_LISTEN,
            "no/such/method",
        ] {
            let e = admission
                .refuses(method)
                .unwrap_or_else(|| panic!("{method}"));
            assert_eq!(e.code, codes::MEMORY_PRESSURE);
            assert!(e.message.starts_with("memory_pressure: "), "{}", e.message);
            let data = e.data.unwrap();
            assert_eq!(data["retryAfterMs"], 2000);
            assert_eq!(data["limitBytes"], 1 << 20);
            assert!(data["usedBytes"].as_u64().unwrap() > 1 << 20);
        }
        for method in [
            methods::PING,
            methods::TASKS_GET,
            methods::TASKS_RESULT,
            methods::TASKS_UPDATE,
            methods::TASKS_CANCEL,
            methods::CANCELLED,
        ] {
            assert!(admission.refuses(method).is_none(), "{method}");
        }
        #[cfg(feature = "http")]
        assert!(admission.refuses_connection().is_some());
    }

    #[test]
    fn a_generous_limit_or_a_zero_mark_refuses_nothing() {
        let roomy = Admission::new(1 << 50, 90);
        assert!(roomy.settled_marks().is_some());
        assert!(roomy.refuses(methods::TOOLS_CALL).is_none());
        let off = Admission::new(1 << 20, 0);
        assert!(off.settled_marks().is_none());
        assert!(off.refuses(methods::TOOLS_CALL).is_none());
    }

    #[test]
    fn no_limited_cgroup_and_no_limit_given_is_off() {
        let empty = std::env::temp_dir().join(format!("mcp-no-cgroup-{}", std::process::id()));
        let admission = Admission::with_root(0, 90, &empty);
        assert!(admission.settled_marks().is_none());
        assert!(admission.refuses(methods::TOOLS_CALL).is_none());
    }

    #[test]
    fn servers_with_the_same_setting_share_one_sampler() {
        let a = Admission::new(3 << 40, 80);
        let b = Admission::new(3 << 40, 80);
        assert!(Arc::ptr_eq(
            a.watch.as_ref().unwrap(),
            b.watch.as_ref().unwrap()
        ));
        let c = Admission::new(3 << 40, 70);
        assert!(!Arc::ptr_eq(
            a.watch.as_ref().unwrap(),
            c.watch.as_ref().unwrap()
        ));
    }
}
