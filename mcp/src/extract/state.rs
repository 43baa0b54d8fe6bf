//! The application's state: values handed to the server once (a database pool, an HTTP
//! client, configuration) and shared by every handler, looked up by type.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A piece of the application's state, as a handler parameter: `State<AppState>` receives
/// what [`ServerBuilder::state`](crate::ServerBuilder::state) (or `server! { state: [..] }`)
/// was given, shared, never shown in the input schema. It dereferences to the value.
///
/// A server can hold several states, one per type; a handler may take several. A handler
/// asking for a type the server was not given makes [`ServerBuilder::build`] fail, naming
/// the handler and the type, before anything is served.
///
/// [`ServerBuilder::build`]: crate::ServerBuilder::build
///
/// ```
/// use mcp::prelude::*;
/// use mcp::extract::State;
///
/// struct Config { greeting: String }
///
/// /// Greets someone with the configured greeting.
/// #[tool(read_only)]
/// async fn greet(config: State<Config>, name: String) -> String {
///     format!("{}, {name}!", config.greeting)
/// }
///
/// let server = Server::builder("greeter", "1")
///     .state(Config { greeting: "Hello".into() })
///     .tool(<greet as mcp::macros_support::ToolFactory>::def())
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
///
/// It dereferences to the value, so a field of your state reads as `state.field` (or
/// `state.0` for a tuple struct); [`State::arc`] gives the shared pointer itself.
pub struct State<T>(Arc<T>);

impl<T> State<T> {
    /// The shared pointer to the state, to keep it beyond the call (e.g. in a spawned task).
    pub fn arc(&self) -> &Arc<T> {
        &self.0
    }
}

impl<T> From<Arc<T>> for State<T> {
    fn from(value: Arc<T>) -> Self {
        State(value)
    }
}

impl<T> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        State(self.0.clone())
    }
}

impl<T: fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&self.0).finish()
    }
}
