//! Connections, below every seam: who is on the other end ([`ConnId`], [`Transport`], the
//! verified [`Principal`]), where messages for them go ([`Outbound`]), what they negotiated
//! and hold ([`ConnState`]), the questions parked for them ([`Pending`]) and the bounded
//! table of all of them ([`ConnTable`]).
//!
//! Nothing here imports the server, the seams (`auth`, `elicit`) or `Ctx`: they all build
//! on it.

mod caller;
mod id;
mod outbound;
mod pending;
mod state;
mod table;

pub use caller::{AuthContext, HttpHeaders, Principal};
pub use id::{ConnId, Transport, UnknownTransport};
pub use outbound::{Outbound, OutboundReceiver};
pub(crate) use pending::{ParkRefused, Pending};
pub(crate) use state::{ConnState, SessionEndHook, Subscriber};
pub use state::{ConnectionStats, SessionEnd};
pub use table::ConnectionEvent;
pub(crate) use table::{ConnTable, EventHook};
