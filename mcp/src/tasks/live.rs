//! A task running on this replica: its record (written through to the store), the token
//! that stops its handler, and the questions it waits on.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::clock::now_ms;
use super::record::{TaskFlavour, TaskRecord, TaskStatus};
use super::store::TaskStore;
use crate::conn::Outbound;
use crate::elicit::ClientRequestError;
use crate::protocol::{ErrorObject, InputRequest, Meta};

/// Why a task's handler was stopped before it finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// `tasks/cancel`.
    Cancelled,
    /// The server is shutting down.
    Shutdown,
}

/// The questions a 2026-07-28 task waits on, by input key.
#[derive(Default)]
struct Inputs {
    waiting: HashMap<String, oneshot::Sender<Value>>,
    /// Every key ever issued: a key is never reused over the task's life.
    issued: HashSet<String>,
}

/// One task running here.
pub(crate) struct LiveTask {
    id: String,
    flavour: TaskFlavour,
    record: tokio::sync::Mutex<TaskRecord>,
    store: Arc<dyn TaskStore>,
    stop: CancellationToken,
    stop_reason: Mutex<Option<StopReason>>,
    inputs: Mutex<Inputs>,
    status: watch::Sender<TaskStatus>,
    /// The stream of the `tasks/result` request waiting on it now (2025-11-25): where
    /// the task's own requests and notifications go while it is open.
    side: Mutex<Option<Outbound>>,
    /// Told of every change once it is stored (status notifications).
    observer: Mutex<Option<Observer>>,
}

/// What is told of a task's changes.
pub(crate) type Observer = Arc<dyn Fn(&TaskRecord) + Send + Sync>;

/// A status as the `mcp.server.tasks.active` gauge counts it: only while running.
#[cfg(feature = "otel")]
fn running(status: TaskStatus) -> Option<&'static str> {
    (!status.is_terminal()).then(|| status.as_str())
}

/// A task dropped before it ended (its server went away) stops counting as running.
#[cfg(feature = "otel")]
impl Drop for LiveTask {
    fn drop(&mut self) {
        crate::telemetry::task_moved(running(*self.status.borrow()), None);
    }
}

impl LiveTask {
    /// A live task whose handler stops when `stop` fires (the token its `Ctx` watches).
    pub(crate) fn new(
        record: TaskRecord,
        store: Arc<dyn TaskStore>,
        stop: CancellationToken,
    ) -> Arc<LiveTask> {
        let (status, _) = watch::channel(record.status);
        #[cfg(feature = "otel")]
        crate::telemetry::task_moved(None, running(record.status));
        Arc::new(LiveTask {
            id: record.task_id.clone(),
            flavour: record.flavour,
            record: tokio::sync::Mutex::new(record),
            store,
            stop,
            stop_reason: Mutex::new(None),
            inputs: Mutex::new(Inputs::default()),
            status,
            side: Mutex::new(None),
            observer: Mutex::new(None),
        })
    }

    /// Sets what is told of the task's changes.
    pub(crate) fn observe(&self, observer: Observer) {
        *self.observer.lock() = Some(observer);
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn flavour(&self) -> TaskFlavour {
        self.flavour
    }

    /// Fires when the handler must stop (cancel, shutdown).
    pub(crate) fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        *self.stop_reason.lock()
    }

    /// Stops the handler, for `reason`; the first reason given stands.
    pub(crate) fn stop(&self, reason: StopReason) {
        self.stop_reason.lock().get_or_insert(reason);
        self.stop.cancel();
    }

    /// The record as it is now.
    pub(crate) async fn snapshot(&self) -> TaskRecord {
        self.record.lock().await.clone()
    }

    /// Watches the status, for a `tasks/result` waiting on the end.
    pub(crate) fn watch(&self) -> watch::Receiver<TaskStatus> {
        self.status.subscribe()
    }

    /// Changes the record (unless it is terminal already) and writes it to the store
    /// before anyone can see it. Returns whether it changed.
    pub(crate) async fn transition(&self, change: impl FnOnce(&mut TaskRecord)) -> bool {
        let mut record = self.record.lock().await;
        if record.status.is_terminal() {
            return false;
        }
        change(&mut record);
        record.updated_ms = now_ms().max(record.updated_ms);
        match self.store.update(&record).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(target: "mcp::tasks", task = %self.id, "the stored task ended or expired first");
            }
            Err(e) => {
                tracing::warn!(target: "mcp::tasks", task = %self.id, error = %e, "could not store a task's change");
            }
        }
        let _before = self.status.send_replace(record.status);
        #[cfg(feature = "otel")]
        crate::telemetry::task_moved(running(_before), running(record.status));
        let observer = self.observer.lock().clone();
        if let Some(observer) = observer {
            observer(&record);
        }
        true
    }

    /// Ends the task with `status` and what goes with it.
    pub(crate) async fn end(
        &self,
        status: TaskStatus,
        result: Option<Value>,
        error: Option<ErrorObject>,
        message: Option<String>,
    ) -> bool {
        let ended = self
            .transition(|r| r.end(status, result, error, message))
            .await;
        self.inputs.lock().waiting.clear();
        ended
    }

    /// A key for a question, unique over the task's life.
    fn unique_key(&self, wanted: &str) -> String {
        let mut inputs = self.inputs.lock();
        let mut key = wanted.to_owned();
        let mut n = 1;
        while inputs.issued.contains(&key) {
            n += 1;
            key = format!("{wanted}#{n}");
        }
        inputs.issued.insert(key.clone());
        key
    }

    /// Asks the client through the task (2026-07-28): the question becomes one of the
    /// task's `inputRequests`, answered by `tasks/update`.
    pub(crate) async fn ask(
        &self,
        key: &str,
        request: InputRequest,
    ) -> Result<Value, ClientRequestError> {
        let key = self.unique_key(key);
        let (tx, rx) = oneshot::channel();
        self.inputs.lock().waiting.insert(key.clone(), tx);
        let posted = self
            .transition(|r| {
                r.input_requests.insert(key.clone(), request);
                r.status = TaskStatus::InputRequired;
            })
            .await;
        if !posted {
            return Err(ClientRequestError::Disconnected);
        }
        tokio::select! {
            answer = rx => answer.map_err(|_| ClientRequestError::Disconnected),
            _ = self.stop.cancelled() => Err(ClientRequestError::Disconnected),
        }
    }

    /// Delivers `tasks/update` answers: each one for a question still waiting; any other
    /// key (never issued, answered already) is ignored. The task works again once no
    /// question is left.
    pub(crate) async fn answer(&self, responses: Meta) {
        let mut delivered = Vec::new();
        {
            let mut inputs = self.inputs.lock();
            for (key, value) in responses {
                if let Some(tx) = inputs.waiting.remove(&key) {
                    let _ = tx.send(value);
                    delivered.push(key);
                }
            }
        }
        if delivered.is_empty() {
            return;
        }
        self.transition(|r| {
            for key in &delivered {
                r.input_requests.remove(key);
            }
            if r.input_requests.is_empty() && r.status == TaskStatus::InputRequired {
                r.status = TaskStatus::Working;
            }
        })
        .await;
    }

    /// Marks a 2025-11-25 task as waiting for (or no longer waiting for) the client.
    pub(crate) async fn set_waiting(&self, waiting: bool) {
        self.transition(|r| {
            r.status = if waiting {
                TaskStatus::InputRequired
            } else {
                TaskStatus::Working
            };
        })
        .await;
    }

    /// Where the task's own messages go now: the stream of a `tasks/result` waiting on it.
    pub(crate) fn side_channel(&self) -> Option<Outbound> {
        self.side.lock().clone().filter(|s| !s.is_closed())
    }

    /// Opens (or, with `None`, closes) the side channel.
    pub(crate) fn set_side_channel(&self, sink: Option<Outbound>) {
        *self.side.lock() = sink;
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::{MemoryTaskStore, TaskLimits};
    use super::*;

    fn record() -> TaskRecord {
        TaskRecord {
            task_id: "t".into(),
            owner: "o".into(),
            replica: None,
            flavour: TaskFlavour::Extension,
            tool: "x".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_ms: now_ms(),
            updated_ms: now_ms(),
            ttl_ms: None,
            poll_interval_ms: 1000,
            result: None,
            error: None,
            input_requests: Default::default(),
        }
    }

    #[tokio::test]
    async fn answers_reach_only_waiting_questions_and_keys_are_never_reused() {
        let store = Arc::new(MemoryTaskStore::new());
        let limits = TaskLimits {
            per_owner: 1,
            total: 1,
        };
        store.create(&record(), limits).await.unwrap();
        let task = LiveTask::new(record(), store.clone(), CancellationToken::new());
        let request = || InputRequest {
            method: "elicitation/create".into(),
            params: Value::Null,
        };
        let t = Arc::clone(&task);
        let first = tokio::spawn(async move { t.ask("k", request()).await });
        let t = Arc::clone(&task);
        let second = tokio::spawn(async move { t.ask("k", request()).await });
        while task.snapshot().await.input_requests.len() < 2 {
            tokio::task::yield_now().await;
        }
        let keys: Vec<String> = task.snapshot().await.input_requests.into_keys().collect();
        assert_eq!(keys.len(), 2);
        assert!(keys.contains(&"k".to_owned()) && keys.contains(&"k#2".to_owned()));
        let stored = store.get("t").await.unwrap().unwrap();
        assert_eq!(stored.status, TaskStatus::InputRequired);

        let mut one = Meta::new();
        one.insert("k".into(), Value::from(1));
        one.insert("never-asked".into(), Value::from(9));
        task.answer(one).await;
        let snapshot = task.snapshot().await;
        assert_eq!(snapshot.status, TaskStatus::InputRequired);
        assert_eq!(snapshot.input_requests.len(), 1);

        let mut two = Meta::new();
        two.insert("k#2".into(), Value::from(2));
        two.insert("k".into(), Value::from(3));
        task.answer(two).await;
        let (a, b) = (first.await.unwrap(), second.await.unwrap());
        let mut got = vec![a.unwrap(), b.unwrap()];
        got.sort_by_key(|v| v.as_i64());
        assert_eq!(got, vec![Value::from(1), Value::from(2)]);
        assert_eq!(task.snapshot().await.status, TaskStatus::Working);
    }

    #[tokio::test]
    async fn a_terminal_task_stays_terminal() {
        let store = Arc::new(MemoryTaskStore::new());
        let task = LiveTask::new(record(), store, CancellationToken::new());
        assert!(task.end(TaskStatus::Cancelled, None, None, None).await);
        assert!(!task.end(TaskStatus::Completed, None, None, None).await);
        assert_eq!(task.snapshot().await.status, TaskStatus::Cancelled);
    }
}
