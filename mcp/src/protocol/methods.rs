//! Method names, so a typo is a compile error rather than a silent miss.

/// `initialize`.
pub const INITIALIZE: &str = "initialize";
/// `notifications/initialized`.
pub const INITIALIZED: &str = "notifications/initialized";
/// `ping`.
pub const PING: &str = "ping";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe`.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe`.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `logging/setLevel`.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `server/discover` (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `subscriptions/listen` (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `notifications/subscriptions/acknowledged` (2026-07-28).
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `tasks/get`: a task's state (2025-11-25 core; the tasks extension on 2026-07-28).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update`: answers to a task's input requests (the tasks extension, 2026-07-28).
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel`: asks a task to stop.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/result`: waits for a task's outcome (2025-11-25 only).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list`: the caller's tasks (2025-11-25 only).
pub const TASKS_LIST: &str = "tasks/list";
/// `notifications/tasks`: a task changed (the tasks extension, on `subscriptions/listen`).
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";
/// `notifications/tasks/status` (2025-11-25, server to client).
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// `elicitation/create` (server to client).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `notifications/elicitation/complete` (2025-11-25, server to client): a URL-mode
/// elicitation's out-of-band flow finished.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `sampling/createMessage` (server to client).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list` (server to client).
pub const ROOTS_LIST: &str = "roots/list";
/// `notifications/cancelled`.
pub const CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const PROGRESS: &str = "notifications/progress";
/// `notifications/message`.
pub const LOG_MESSAGE: &str = "notifications/message";
/// `notifications/tools/list_changed`.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/resources/list_changed`.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/prompts/list_changed`.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/updated`.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/roots/list_changed` (client to server).
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// Which list a `*/list` request or a `list_changed` notification is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    /// Tools.
    Tools,
    /// Resources (and resource templates).
    Resources,
    /// Prompts.
    Prompts,
}

impl ListKind {
    /// The `notifications/*/list_changed` method for this list.
    pub fn changed_method(self) -> &'static str {
        match self {
            ListKind::Tools => TOOLS_LIST_CHANGED,
            ListKind::Resources => RESOURCES_LIST_CHANGED,
            ListKind::Prompts => PROMPTS_LIST_CHANGED,
        }
    }
}

/// A server capability a method belongs to: the method exists only when it is offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// `tools`.
    Tools,
    /// `resources`.
    Resources,
    /// `prompts`.
    Prompts,
    /// `completions`.
    Completions,
    /// Tasks (a tool that may run as one).
    Tasks,
}

/// Which member of a request's params the `Mcp-Name` header mirrors (2026-07-28 over HTTP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mirrored {
    /// `params.name` (`tools/call`, `prompts/get`).
    Name,
    /// `params.uri` (`resources/read`).
    Uri,
    /// `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`).
    TaskId,
}

/// Every method a client may send, request or notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // each variant is the method of the same name
pub enum Method {
    Initialize,
    Ping,
    LoggingSetLevel,
    ServerDiscover,
    SubscriptionsListen,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourcesTemplatesList,
    ResourcesRead,
    ResourcesSubscribe,
    ResourcesUnsubscribe,
    PromptsList,
    PromptsGet,
    CompletionComplete,
    TasksGet,
    TasksUpdate,
    TasksCancel,
    TasksResult,
    TasksList,
    Initialized,
    Cancelled,
    RootsListChanged,
}

/// What the protocol says about one method: the one table that era checks, capability
/// checks, `-32601` answers, HTTP header rules, batching and cancellation all read.
#[derive(Clone, Copy, Debug)]
pub struct MethodSpec {
    /// The method's name on the wire.
    pub name: &'static str,
    /// A notification (no response) rather than a request.
    pub notification: bool,
    /// Exists in the handshake era (2024-11-05 to 2025-11-25).
    pub handshake: bool,
    /// Exists in the stateless era (2026-07-28).
    pub stateless: bool,
    /// The server capability it needs, if any.
    pub capability: Option<Capability>,
    /// Put to the read seam (the read authorizer) before it runs.
    pub read_seam: bool,
    /// Runs user code (a handler), so the client can cancel it.
    pub runs_handler: bool,
    /// Stays open until the server or the client ends it (`subscriptions/listen`): it does
    /// not count against the connection's cap of running requests.
    pub long_lived: bool,
    /// Changes per-session state, so it needs a session on HTTP.
    pub session_state: bool,
    /// May be part of a JSON-RPC batch (2025-03-26).
    pub batchable: bool,
    /// The params member mirrored in `Mcp-Name` on 2026-07-28 HTTP requests.
    pub mirrored: Option<Mirrored>,
    /// The list it reads, for the list methods.
    pub list: Option<ListKind>,
}

const fn request(name: &'static str, handshake: bool, stateless: bool) -> MethodSpec {
    MethodSpec {
        name,
        notification: false,
        handshake,
        stateless,
        capability: None,
        read_seam: false,
        runs_handler: false,
        long_lived: false,
        session_state: false,
        batchable: true,
        mirrored: None,
        list: None,
    }
}

const fn notification(name: &'static str, stateless: bool) -> MethodSpec {
    MethodSpec {
        notification: true,
        ..request(name, true, stateless)
    }
}

const fn both(name: &'static str) -> MethodSpec {
    request(name, true, true)
}

impl MethodSpec {
    const fn needs(self, capability: Capability) -> Self {
        MethodSpec {
            capability: Some(capability),
            ..self
        }
    }
    const fn read(self) -> Self {
        MethodSpec {
            read_seam: true,
            ..self
        }
    }
    const fn handler(self) -> Self {
        MethodSpec {
            runs_handler: true,
            ..self
        }
    }
    const fn lists(self, kind: ListKind) -> Self {
        MethodSpec {
            list: Some(kind),
            ..self
        }
    }
    const fn mirrors(self, m: Mirrored) -> Self {
        MethodSpec {
            mirrored: Some(m),
            ..self
        }
    }
    const fn session(self) -> Self {
        MethodSpec {
            session_state: true,
            ..self
        }
    }

    /// Whether the method exists in `era`.
    pub fn exists_in(&self, era: super::Era) -> bool {
        match era {
            super::Era::Handshake => self.handshake,
            super::Era::Stateless => self.stateless,
        }
    }
}

impl Method {
    /// Every method, in the order of the table.
    pub const ALL: [Method; 23] = [
        Method::Initialize,
        Method::Ping,
        Method::LoggingSetLevel,
        Method::ServerDiscover,
        Method::SubscriptionsListen,
        Method::ToolsList,
        Method::ToolsCall,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::ResourcesSubscribe,
        Method::ResourcesUnsubscribe,
        Method::PromptsList,
        Method::PromptsGet,
        Method::CompletionComplete,
        Method::TasksGet,
        Method::TasksUpdate,
        Method::TasksCancel,
        Method::TasksResult,
        Method::TasksList,
        Method::Initialized,
        Method::Cancelled,
        Method::RootsListChanged,
    ];

    /// What the protocol says about this method.
    pub const fn spec(self) -> MethodSpec {
        use Capability as C;
        match self {
            Method::Initialize => MethodSpec {
                batchable: false,
                ..request(INITIALIZE, true, false)
            },
            Method::Ping => request(PING, true, false),
            Method::LoggingSetLevel => request(LOGGING_SET_LEVEL, true, false).session(),
            Method::ServerDiscover => request(SERVER_DISCOVER, false, true),
            Method::SubscriptionsListen => MethodSpec {
                long_lived: true,
                ..request(SUBSCRIPTIONS_LISTEN, false, true).read().handler()
            },
            Method::ToolsList => both(TOOLS_LIST)
                .needs(C::Tools)
                .read()
                .lists(ListKind::Tools),
            Method::ToolsCall => both(TOOLS_CALL)
                .needs(C::Tools)
                .handler()
                .mirrors(Mirrored::Name),
            Method::ResourcesList => both(RESOURCES_LIST)
                .needs(C::Resources)
                .read()
                .handler()
                .lists(ListKind::Resources),
            Method::ResourcesTemplatesList => both(RESOURCES_TEMPLATES_LIST)
                .needs(C::Resources)
                .read()
                .lists(ListKind::Resources),
            Method::ResourcesRead => both(RESOURCES_READ)
                .needs(C::Resources)
                .read()
                .handler()
                .mirrors(Mirrored::Uri),
            Method::ResourcesSubscribe => request(RESOURCES_SUBSCRIBE, true, false)
                .needs(C::Resources)
                .read()
                .session(),
            Method::ResourcesUnsubscribe => request(RESOURCES_UNSUBSCRIBE, true, false)
                .needs(C::Resources)
                .read()
                .session(),
            Method::PromptsList => both(PROMPTS_LIST)
                .needs(C::Prompts)
                .read()
                .lists(ListKind::Prompts),
            Method::PromptsGet => both(PROMPTS_GET)
                .needs(C::Prompts)
                .read()
                .handler()
                .mirrors(Mirrored::Name),
            Method::CompletionComplete => both(COMPLETION_COMPLETE)
                .needs(C::Completions)
                .read()
                .handler(),
            // Tasks are read-seam requests: every one is put to the read authorizer, and
            // a task answers only the caller that created it.
            Method::TasksGet => both(TASKS_GET)
                .needs(C::Tasks)
                .read()
                .mirrors(Mirrored::TaskId),
            Method::TasksUpdate => request(TASKS_UPDATE, false, true)
                .needs(C::Tasks)
                .read()
                .mirrors(Mirrored::TaskId),
            Method::TasksCancel => both(TASKS_CANCEL)
                .needs(C::Tasks)
                .read()
                .mirrors(Mirrored::TaskId),
            Method::TasksResult => MethodSpec {
                long_lived: true,
                ..request(TASKS_RESULT, true, false)
                    .needs(C::Tasks)
                    .read()
                    .handler()
            },
            Method::TasksList => request(TASKS_LIST, true, false).needs(C::Tasks).read(),
            Method::Initialized => notification(INITIALIZED, false),
            Method::Cancelled => notification(CANCELLED, false),
            Method::RootsListChanged => notification(ROOTS_LIST_CHANGED, false),
        }
    }

    /// The method named `name`, if the protocol has one by that name. (A `match` on the
    /// names, which compiles to a length-then-bytes dispatch: every request goes through it.
    /// The test below checks it against the table.)
    pub fn parse(name: &str) -> Option<Method> {
        Some(match name {
            INITIALIZE => Method::Initialize,
            PING => Method::Ping,
            LOGGING_SET_LEVEL => Method::LoggingSetLevel,
            SERVER_DISCOVER => Method::ServerDiscover,
            SUBSCRIPTIONS_LISTEN => Method::SubscriptionsListen,
            TOOLS_LIST => Method::ToolsList,
            TOOLS_CALL => Method::ToolsCall,
            RESOURCES_LIST => Method::ResourcesList,
            RESOURCES_TEMPLATES_LIST => Method::ResourcesTemplatesList,
            RESOURCES_READ => Method::ResourcesRead,
            RESOURCES_SUBSCRIBE => Method::ResourcesSubscribe,
            RESOURCES_UNSUBSCRIBE => Method::ResourcesUnsubscribe,
            PROMPTS_LIST => Method::PromptsList,
            PROMPTS_GET => Method::PromptsGet,
            COMPLETION_COMPLETE => Method::CompletionComplete,
            TASKS_GET => Method::TasksGet,
            TASKS_UPDATE => Method::TasksUpdate,
            TASKS_CANCEL => Method::TasksCancel,
            TASKS_RESULT => Method::TasksResult,
            TASKS_LIST => Method::TasksList,
            INITIALIZED => Method::Initialized,
            CANCELLED => Method::Cancelled,
            ROOTS_LIST_CHANGED => Method::RootsListChanged,
            _ => return None,
        })
    }

    /// The method's name on the wire.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Era;

    #[test]
    fn every_method_parses_back_from_its_name() {
        for m in Method::ALL {
            assert_eq!(Method::parse(m.name()), Some(m));
        }
        // Every name `parse` knows is in the table.
        let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
        let mut distinct = names.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), names.len(), "a name appears twice");
        assert_eq!(Method::parse("tools/cal"), None);
    }

    #[test]
    fn the_eras_differ_only_where_the_protocol_says() {
        let only = |era: Era| -> Vec<&str> {
            Method::ALL
                .iter()
                .map(|m| m.spec())
                .filter(|s| !s.notification && s.exists_in(era) && !s.exists_in(other(era)))
                .map(|s| s.name)
                .collect()
        };
        fn other(e: Era) -> Era {
            match e {
                Era::Handshake => Era::Stateless,
                Era::Stateless => Era::Handshake,
            }
        }
        assert_eq!(
            only(Era::Handshake),
            [
                INITIALIZE,
                PING,
                LOGGING_SET_LEVEL,
                RESOURCES_SUBSCRIBE,
                RESOURCES_UNSUBSCRIBE,
                TASKS_RESULT,
                TASKS_LIST
            ]
        );
        assert_eq!(
            only(Era::Stateless),
            [SERVER_DISCOVER, SUBSCRIPTIONS_LISTEN, TASKS_UPDATE]
        );
    }
}
