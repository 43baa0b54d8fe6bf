//! Where task records live: a trait every replica shares, and the in-process store.

use std::collections::HashMap;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::clock::now_ms;
use super::record::TaskRecord;
use crate::cluster::StoreResult;

/// How many tasks may be kept at once (running or finished, until their ttl passes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    /// Per owner (a principal, or a connection without one).
    pub per_owner: usize,
    /// In the whole store.
    pub total: usize,
}

/// Whether a new task was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Recorded: from now on [`TaskStore::get`] finds it, on every replica.
    Created,
    /// Its owner already keeps [`TaskLimits::per_owner`] tasks.
    OwnerFull,
    /// The store already keeps [`TaskLimits::total`] tasks.
    StoreFull,
}

/// Task records shared by every replica that serves the same tasks. A record is written
/// before anyone is told about it ("durable create") and each change before it is visible;
/// a record past its ttl is gone. A terminal record never changes again.
pub trait TaskStore: Send + Sync + 'static {
    /// Records a new task if its owner and the store have room under `limits`.
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, StoreResult<Admission>>;
    /// The task named `task_id` (`None` when unknown or expired).
    fn get<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, StoreResult<Option<TaskRecord>>>;
    /// Writes a change; `false` (and nothing written) when the stored task is already
    /// terminal or gone.
    fn update<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, StoreResult<bool>>;
    /// The owner's tasks, oldest first.
    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<TaskRecord>>>;
}

/// The tasks of one process, in memory (the default). Expired records are swept as new
/// ones arrive, so memory stays bounded by [`TaskLimits::total`].
#[derive(Default)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<String, TaskRecord>>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many records it keeps (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.tasks.lock().len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("tasks", &self.len())
            .finish()
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl TaskStore for MemoryTaskStore {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, StoreResult<Admission>> {
        let now = now_ms();
        let mut tasks = self.tasks.lock();
        tasks.retain(|_, t| !t.expired(now));
        let admission = if tasks.len() >= limits.total {
            Admission::StoreFull
        } else if tasks.values().filter(|t| t.owner == record.owner).count() >= limits.per_owner {
            Admission::OwnerFull
        } else {
            tasks.insert(record.task_id.clone(), record.clone());
            Admission::Created
        };
        ready(Ok(admission))
    }

    fn get<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, StoreResult<Option<TaskRecord>>> {
        let now = now_ms();
        let found = self
            .tasks
            .lock()
            .get(task_id)
            .filter(|t| !t.expired(now))
            .cloned();
        ready(Ok(found))
    }

    fn update<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, StoreResult<bool>> {
        let now = now_ms();
        let mut tasks = self.tasks.lock();
        let written = match tasks.get_mut(&record.task_id) {
            Some(stored) if !stored.status.is_terminal() && !stored.expired(now) => {
                *stored = record.clone();
                true
            }
            _ => false,
        };
        ready(Ok(written))
    }

    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<TaskRecord>>> {
        let now = now_ms();
        let mut mine: Vec<TaskRecord> = self
            .tasks
            .lock()
            .values()
            .filter(|t| t.owner == owner && !t.expired(now))
            .cloned()
            .collect();
        mine.sort_by(|a, b| (a.created_ms, &a.task_id).cmp(&(b.created_ms, &b.task_id)));
        ready(Ok(mine))
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::{TaskFlavour, TaskStatus};
    use super::*;

    fn record(id: &str, owner: &str, ttl: Option<u64>) -> TaskRecord {
        TaskRecord {
            task_id: id.into(),
            owner: owner.into(),
            replica: None,
            flavour: TaskFlavour::Core,
            tool: "t".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_ms: now_ms(),
            updated_ms: now_ms(),
            ttl_ms: ttl,
            poll_interval_ms: 1000,
            result: None,
            error: None,
            input_requests: Default::default(),
        }
    }

    #[tokio::test]
    async fn caps_per_owner_and_in_total() {
        let store = MemoryTaskStore::new();
        let limits = TaskLimits {
            per_owner: 2,
            total: 3,
        };
        for (id, owner, expected) in [
            ("a", "alice", Admission::Created),
            ("b", "alice", Admission::Created),
            ("c", "alice", Admission::OwnerFull),
            ("d", "bob", Admission::Created),
            ("e", "carol", Admission::StoreFull),
        ] {
            let got = store
                .create(&record(id, owner, None), limits)
                .await
                .unwrap();
            assert_eq!(got, expected, "{id}");
        }
        assert_eq!(store.list("alice").await.unwrap().len(), 2);
        assert!(store.get("c").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn terminal_records_never_change_and_expired_ones_are_gone() {
        let store = MemoryTaskStore::new();
        let limits = TaskLimits {
            per_owner: 10,
            total: 10,
        };
        let mut r = record("a", "o", None);
        store.create(&r, limits).await.unwrap();
        r.status = TaskStatus::Cancelled;
        assert!(store.update(&r).await.unwrap());
        r.status = TaskStatus::Completed;
        assert!(!store.update(&r).await.unwrap());
        assert_eq!(
            store.get("a").await.unwrap().unwrap().status,
            TaskStatus::Cancelled
        );
        let gone = record("b", "o", Some(0));
        store.create(&gone, limits).await.unwrap();
        assert!(store.get("b").await.unwrap().is_none());
        assert!(!store.update(&gone).await.unwrap());
        // The next create sweeps it.
        store.create(&record("c", "o", None), limits).await.unwrap();
        assert_eq!(store.len(), 2);
    }
}
