//! What is known about one task, as every replica stores it, and its shapes on the wire.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::clock::iso8601;
use crate::protocol::{ErrorObject, InputRequest};

/// Where a task is in its life. `completed`, `failed` and `cancelled` are terminal: a task
/// that reached one never changes again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The work is running.
    Working,
    /// The work waits for answers from the client.
    InputRequired,
    /// The work finished with a result (a tool error included, on 2026-07-28).
    Completed,
    /// The work failed with a JSON-RPC error (or ran out of time, or its replica died).
    Failed,
    /// The work was cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Whether the status is final.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The status as the protocol writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// Which revision's tasks a task speaks: the wire shapes differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskFlavour {
    /// The experimental core tasks of 2025-11-25 (client-directed, `tasks/result`).
    Core,
    /// The `io.modelcontextprotocol/tasks` extension of 2026-07-28 (server-directed,
    /// `tasks/update`).
    Extension,
}

/// One task, as stored. Every change is written to the [`TaskStore`](super::TaskStore)
/// before it is visible to anyone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The id: 24 random bytes from the OS, base64url.
    pub task_id: String,
    /// Who may see and steer it: `principal:<issuer>:<subject>` for a verified caller,
    /// `conn:<connection id>` without one.
    pub owner: String,
    /// The replica running it, when several share the store.
    pub replica: Option<String>,
    /// Which revision's tasks it is.
    pub flavour: TaskFlavour,
    /// The tool it runs.
    pub tool: String,
    /// Where it is.
    pub status: TaskStatus,
    /// A human-readable note on the status.
    pub status_message: Option<String>,
    /// Created, in Unix milliseconds.
    pub created_ms: u64,
    /// Last changed, in Unix milliseconds.
    pub updated_ms: u64,
    /// How long after creation the record is kept (`None`: until the server forgets it).
    pub ttl_ms: Option<u64>,
    /// How often the client is asked to poll.
    pub poll_interval_ms: u64,
    /// The tool's result, once `completed` (a `CallToolResult`, `isError` included).
    pub result: Option<Value>,
    /// The JSON-RPC error, once `failed`.
    pub error: Option<ErrorObject>,
    /// The questions waiting for answers, by input key (2026-07-28).
    pub input_requests: BTreeMap<String, InputRequest>,
}

impl TaskRecord {
    /// When the record may be forgotten, in Unix milliseconds (`u64::MAX` for never).
    pub fn expires_ms(&self) -> u64 {
        self.ttl_ms
            .map_or(u64::MAX, |ttl| self.created_ms.saturating_add(ttl))
    }

    /// Whether the record is past its ttl at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_ms()
    }

    /// Makes the record terminal with `status` and what goes with it (a result, an error, a
    /// message); no question is outstanding any more. The caller stamps the time.
    pub fn end(
        &mut self,
        status: TaskStatus,
        result: Option<Value>,
        error: Option<ErrorObject>,
        message: Option<String>,
    ) {
        self.status = status;
        self.result = result;
        self.error = error;
        self.input_requests.clear();
        if message.is_some() {
            self.status_message = message;
        }
    }

    fn common(&self, ttl_key: &str, poll_key: &str) -> Map<String, Value> {
        let mut task = Map::new();
        task.insert("taskId".into(), json!(self.task_id));
        task.insert("status".into(), json!(self.status.as_str()));
        if let Some(m) = &self.status_message {
            task.insert("statusMessage".into(), json!(m));
        }
        task.insert("createdAt".into(), json!(iso8601(self.created_ms)));
        task.insert("lastUpdatedAt".into(), json!(iso8601(self.updated_ms)));
        task.insert(ttl_key.into(), json!(self.ttl_ms));
        task.insert(poll_key.into(), json!(self.poll_interval_ms));
        task
    }

    /// The 2025-11-25 `Task` object.
    pub fn core_task(&self) -> Map<String, Value> {
        self.common("ttl", "pollInterval")
    }

    /// The 2026-07-28 task fields (`CreateTaskResult` without `resultType`).
    pub fn extension_task(&self) -> Map<String, Value> {
        self.common("ttlMs", "pollIntervalMs")
    }

    /// The 2026-07-28 `DetailedTask`: the task, with the result, the error or the
    /// outstanding input requests its status calls for.
    pub fn detailed_task(&self) -> Map<String, Value> {
        let mut task = self.extension_task();
        match self.status {
            TaskStatus::Completed => {
                if let Some(r) = &self.result {
                    task.insert("result".into(), r.clone());
                }
            }
            TaskStatus::Failed => {
                let error = self.error.clone().unwrap_or_else(|| {
                    ErrorObject::internal(
                        self.status_message
                            .clone()
                            .unwrap_or_else(|| "the task failed".into()),
                    )
                });
                task.insert("error".into(), json!(error));
            }
            TaskStatus::InputRequired => {
                task.insert("inputRequests".into(), json!(self.input_requests));
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
        task
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> TaskRecord {
        TaskRecord {
            task_id: "t1".into(),
            owner: "o".into(),
            replica: None,
            flavour: TaskFlavour::Extension,
            tool: "slow".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_ms: 0,
            updated_ms: 1500,
            ttl_ms: Some(60_000),
            poll_interval_ms: 1000,
            result: None,
            error: None,
            input_requests: BTreeMap::new(),
        }
    }

    #[test]
    fn shapes_differ_by_revision() {
        let r = record();
        let core = Value::Object(r.core_task());
        assert_eq!(core["ttl"], 60_000);
        assert_eq!(core["pollInterval"], 1000);
        assert_eq!(core["lastUpdatedAt"], "1970-01-01T00:00:01.500Z");
        let ext = Value::Object(r.extension_task());
        assert_eq!(ext["ttlMs"], 60_000);
        assert!(ext.get("ttl").is_none() && ext.get("pollInterval").is_none());
    }

    #[test]
    fn a_detailed_task_carries_what_its_status_calls_for() {
        let mut r = record();
        r.status = TaskStatus::Failed;
        let failed = Value::Object(r.detailed_task());
        assert_eq!(failed["error"]["code"], -32603);
        assert!(failed.get("result").is_none());
        r.status = TaskStatus::Completed;
        r.result = Some(json!({"content": []}));
        let done = Value::Object(r.detailed_task());
        assert_eq!(done["result"], json!({"content": []}));
        assert!(done.get("error").is_none() && done.get("inputRequests").is_none());
        assert!(r.expired(60_000) && !r.expired(59_999));
    }
}
