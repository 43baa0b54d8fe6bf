//! The notes example as a client uses it over stdio, against a temporary database file:
//! notes added, searched, read as resources and completed; a delete asked about and
//! approved; the data still there after a restart; a database that cannot be opened stops
//! the boot.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const NOTES: &str = env!("CARGO_BIN_EXE_notes");

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Session {
    fn start(db: &Path) -> Session {
        let mut child = Command::new(NOTES)
            .arg("--db")
            .arg(db)
            .env("MCP_LOG_LEVEL", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the notes binary runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            stdout,
            next: 1,
        };
        let init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "notes-test", "version": "1"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "notes", "{init}");
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "the server closed stdout"
        );
        serde_json::from_str(&line).expect("stdout carries JSON-RPC only")
    }

    /// Sends a request and returns its response, answering an elicitation with `approve`.
    fn request_answering(&mut self, method: &str, params: Value, approve: bool) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.read();
            if message["method"] == "elicitation/create" {
                let action = if approve { "accept" } else { "decline" };
                let content = if approve {
                    json!({"approve": true})
                } else {
                    json!(null)
                };
                let mut result = json!({"action": action});
                if approve {
                    result["content"] = content;
                }
                self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}));
                continue;
            }
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_answering(method, params, false)
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        r["result"].clone()
    }

    fn stop(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

fn temp_db(name: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("mcp-notes-{name}-{}.sqlite3", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

#[test]
fn notes_are_stored_searched_read_deleted_after_asking_and_kept_across_restarts() {
    let db = temp_db("wire");
    let mut s = Session::start(&db);
    let added = s.call(
        "add_note",
        json!({"title": "Groceries", "body": "milk, eggs"}),
    );
    assert_eq!(added["structuredContent"]["id"], 1, "{added}");
    s.call(
        "add_note",
        json!({"title": "Ideas", "body": "an MCP server on SQLite"}),
    );

    let found = s.call("search_notes", json!({"query": "sqlite"}));
    let notes = found["structuredContent"]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{found}");
    assert_eq!(notes[0]["title"], "Ideas");
    let all = s.call("search_notes", json!({}));
    assert_eq!(
        all["structuredContent"]["notes"].as_array().unwrap().len(),
        2
    );

    let list = s.request("resources/list", json!({}));
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["note://1", "note://2"]);
    let read = s.request("resources/read", json!({"uri": "note://1"}));
    assert_eq!(
        read["result"]["contents"][0]["text"],
        "# Groceries\n\nmilk, eggs"
    );
    let missing = s.request("resources/read", json!({"uri": "note://9"}));
    assert!(missing.get("error").is_some(), "{missing}");
    let completed = s.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "note://{id}"},
               "argument": {"name": "id", "value": "2"}}),
    );
    assert_eq!(completed["result"]["completion"]["values"], json!(["2"]));

    // Declined: nothing is deleted. Approved: the row goes.
    let declined = s.request_answering(
        "tools/call",
        json!({"name": "delete_note", "arguments": {"id": 1}}),
        false,
    );
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert_eq!(
        s.call("search_notes", json!({}))["structuredContent"]["notes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let approved = s.request_answering(
        "tools/call",
        json!({"name": "delete_note", "arguments": {"id": 1}}),
        true,
    );
    assert_eq!(
        approved["result"]["content"][0]["text"], "deleted note 1",
        "{approved}"
    );
    s.stop();

    // A new process on the same file sees what the first one stored.
    let mut s = Session::start(&db);
    let all = s.call("search_notes", json!({}));
    let notes = all["structuredContent"]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{all}");
    assert_eq!(notes[0]["id"], 2);
    s.stop();
    let _ = std::fs::remove_file(&db);
}

#[test]
fn a_database_that_cannot_be_opened_stops_the_boot() {
    let dir = std::env::temp_dir();
    let out = Command::new(NOTES)
        .arg("--db")
        .arg(dir.join("no-such-dir-for-notes").join("x.sqlite3"))
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not be made"), "{stderr}");
    assert!(out.stdout.is_empty());
}
