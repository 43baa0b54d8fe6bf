//! The handshake (`initialize`) and per-connection settings (`logging/setLevel`).

use std::sync::Arc;

use super::dispatch::{Scope, parse_params};
use super::{Reply, Server};
use crate::protocol::{
    ErrorObject, InitializeRequestParams, InitializeResult, LoggingLevel, ProtocolVersion,
    SetLevelParams, methods,
};

impl Server {
    /// Negotiates the version (echo a supported request, else offer our newest handshake
    /// version) and records the client's capabilities for this connection only.
    pub(super) fn initialize(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: InitializeRequestParams = parse_params(methods::INITIALIZE, params, true)?;
        let version = p
            .protocol_version
            .parse::<ProtocolVersion>()
            .ok()
            .filter(|v| ProtocolVersion::HANDSHAKE.contains(v))
            .unwrap_or(ProtocolVersion::LATEST_HANDSHAKE);
        {
            let mut session = scope.caller.conn.session.write();
            session.capabilities = Some(Arc::new(p.capabilities));
            session.client_info = p.client_info;
        }
        // After the capabilities: whoever sees the version sees them too.
        scope.caller.conn.version.set(version);
        let mut capabilities = self.capabilities().clone();
        if !version.has_completions_capability() {
            capabilities.completions = None;
        }
        // Tasks entered the protocol in 2025-11-25.
        if version < ProtocolVersion::V2025_11_25 {
            capabilities.tasks = None;
        }
        let result = InitializeResult {
            protocol_version: version.as_str().to_owned(),
            capabilities,
            server_info: self.info().clone(),
            instructions: self.inner.instructions.clone(),
        };
        Ok(Reply::result(&scope.id, &result))
    }

    /// Sets the minimum level of `notifications/message` for this connection.
    pub(super) fn set_level(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: SetLevelParams = parse_params(methods::LOGGING_SET_LEVEL, params, true)?;
        let level: LoggingLevel = p.level.parse().map_err(ErrorObject::invalid_params)?;
        scope.caller.conn.session.write().log_level = level;
        Ok(Reply::raw_result(&scope.id, "{}"))
    }
}
