//! Transports: how bytes reach the server. Each one attaches its clients as connections and
//! knows nothing of tools; tools know nothing of transports.

pub mod stdio;
