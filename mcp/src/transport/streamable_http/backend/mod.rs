//! Where sessions live: this replica alone ([`local::LocalSessions`]), or a cluster of
//! replicas sharing them through a store and a bus ([`cluster::ClusterSessions`]). The
//! endpoint's handlers ask the backend, chosen once when the session table is built, and
//! never branch on which one it is.

pub(super) mod cluster;
pub(super) mod local;
