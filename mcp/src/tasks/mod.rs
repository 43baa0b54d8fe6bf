//! Tasks: tool calls that outlive their request. A client starts one, gets a handle at
//! once, and polls (`tasks/get`), answers questions (`tasks/update` on 2026-07-28), waits
//! for the result (`tasks/result` on 2025-11-25) or cancels it (`tasks/cancel`), while
//! the tool keeps running on the server, free of the client's request timeout.
//!
//! A tool opts in with [`TaskSupport`] (`#[tool(task = "optional")]`, or
//! [`ToolDef::task_support`](crate::registry::ToolDef::task_support)); the handler is the
//! same code whether it runs as a task or not. `ctx.elicit` inside a task becomes one of
//! its `inputRequests` (2026-07-28) or an `elicitation/create` tagged with the task
//! (2025-11-25); `ctx.cancelled()` fires on `tasks/cancel`.
//!
//! # When a call becomes a task
//!
//! - **2025-11-25** (client-directed): when the request carries `params.task` and the
//!   tool allows it. A `required` tool called without it, or a `forbidden` one called with
//!   it, gets -32601.
//! - **2026-07-28** (server-directed, the `io.modelcontextprotocol/tasks` extension): only
//!   when the request itself declares the extension in its client capabilities. A
//!   `required` tool called without it gets -32021. The tool's [`TaskPolicy`] decides the
//!   moment: [`TaskPolicy::Always`] as soon as the handler first waits on something other
//!   than the client, [`TaskPolicy::EscalateAfter`] only if the call has not finished by a
//!   deadline. Until then the call is an ordinary request: questions asked before that
//!   moment are input-required rounds, answered synchronously, and the task starts after
//!   them.
//!
//! # Who may see a task
//!
//! Task ids are 192 random bits from the OS. A task belongs to the principal that created
//! it (subject and issuer of the verified token), or, without a token, to the connection
//! (a stdio client, a handshake-era HTTP session). Every other caller gets exactly the
//! answer an unknown id gets. 2026-07-28 requests over HTTP without a token share one
//! connection: there, the id alone is the capability. Every task request also passes the
//! read seam.
//!
//! # Lifetimes
//!
//! A task runs under its own time limit
//! ([`ServerConfig::task_time_limit`](crate::server::ServerConfig::task_time_limit)), not the call
//! timeout, and its record is kept for its ttl
//! ([`ServerConfig::task_ttl`](crate::server::ServerConfig::task_ttl)). Closing the stream that
//! created it does not stop it; shutting the server down ends it `failed`, saying so. A
//! cap on kept tasks per owner and per store bounds memory
//! ([`ServerConfig::max_tasks_per_owner`](crate::server::ServerConfig::max_tasks_per_owner),
//! [`ServerConfig::max_tasks`](crate::server::ServerConfig::max_tasks)).
//!
//! # Replicas
//!
//! Records live behind [`TaskStore`]: [`MemoryTaskStore`] in one process, or the Redis
//! backend shared by replicas (see [`crate::cluster`]). Any replica answers `tasks/get`;
//! `tasks/update` and `tasks/cancel` reach the replica running the task over the bus, and
//! a task whose replica died is ended `failed`, saying so.

pub(crate) mod clock;
pub(crate) mod live;
mod record;
mod store;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use clock::iso8601;
pub(crate) use clock::now_ms;
pub(crate) use live::{LiveTask, StopReason};
pub use record::{TaskFlavour, TaskRecord, TaskStatus};
pub use store::{Admission, MemoryTaskStore, TaskLimits, TaskStore};

/// Whether a tool may run as a task (`execution.taskSupport` in `tools/list`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the client allows it; otherwise an ordinary call.
    Optional,
    /// Only ever a task: a client that cannot take one is refused.
    Required,
}

impl TaskSupport {
    /// The value as `execution.taskSupport` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

impl std::str::FromStr for TaskSupport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "forbidden" => Ok(TaskSupport::Forbidden),
            "optional" => Ok(TaskSupport::Optional),
            "required" => Ok(TaskSupport::Required),
            other => Err(format!(
                "unknown task support {other:?} (expected \"forbidden\", \"optional\" or \"required\")"
            )),
        }
    }
}

/// When a 2026-07-28 call that may be a task becomes one (the server decides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TaskPolicy {
    /// As soon as the handler first waits on anything but an answer from the client.
    #[default]
    Always,
    /// Only if the call has not finished within this long: quick calls stay ordinary
    /// calls. A `required` tool always becomes a task, at this deadline at the latest.
    EscalateAfter(Duration),
}

impl TaskPolicy {
    /// How long the call runs as an ordinary request before it becomes a task.
    pub(crate) fn deadline(self) -> Duration {
        match self {
            TaskPolicy::Always => Duration::ZERO,
            TaskPolicy::EscalateAfter(d) => d,
        }
    }
}

/// The key that says who owns a task: the verified principal (issuer and subject) or,
/// without one, the connection.
pub(crate) fn owner_key(principal: Option<&crate::conn::Principal>, conn: &str) -> String {
    match principal {
        Some(p) => format!(
            "principal:{}:{}",
            p.issuer.as_deref().unwrap_or("").replace(':', "%3A"),
            p.subject
        ),
        None => format!("conn:{conn}"),
    }
}

/// A fresh task id: 24 bytes from the OS's random source, base64url (192 bits).
pub(crate) fn new_task_id() -> String {
    crate::util::random_token(24)
}

/// This server's tasks: the shared store and the ones running here.
pub(crate) struct TaskEngine {
    pub(crate) store: Arc<dyn TaskStore>,
    /// This process's replica id, written into the records of the tasks it runs.
    pub(crate) replica: String,
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
    /// The runners of this replica's tasks, awaited at shutdown so every task's end is
    /// written before the process exits.
    pub(crate) tracker: tokio_util::task::TaskTracker,
}

impl TaskEngine {
    pub(crate) fn new(store: Arc<dyn TaskStore>, replica: String) -> Self {
        TaskEngine {
            store,
            replica,
            live: Mutex::new(HashMap::new()),
            tracker: tokio_util::task::TaskTracker::new(),
        }
    }

    pub(crate) fn live(&self, id: &str) -> Option<Arc<LiveTask>> {
        self.live.lock().get(id).cloned()
    }

    /// The ids of the tasks running here.
    pub(crate) fn live_ids(&self) -> Vec<String> {
        self.live.lock().keys().cloned().collect()
    }

    pub(crate) fn insert(&self, task: &Arc<LiveTask>) {
        self.live
            .lock()
            .insert(task.id().to_owned(), Arc::clone(task));
    }

    pub(crate) fn remove(&self, id: &str) {
        self.live.lock().remove(id);
    }

    /// Every task running here.
    pub(crate) fn running(&self) -> Vec<Arc<LiveTask>> {
        self.live.lock().values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_differ_by_issuer_subject_and_connection() {
        let mut a = crate::conn::Principal::new("alice", vec![]);
        let plain = owner_key(Some(&a), "c1");
        assert_eq!(plain, owner_key(Some(&a), "c2"));
        a.issuer = Some("https://idp".into());
        assert_ne!(owner_key(Some(&a), "c1"), plain);
        assert_ne!(owner_key(None, "c1"), owner_key(None, "c2"));
        assert_ne!(owner_key(None, "alice"), plain);
        assert_eq!(new_task_id().len(), 32);
        assert_ne!(new_task_id(), new_task_id());
    }
}
