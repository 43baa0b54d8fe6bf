//! The links handed out and not yet finished: each names one principal, one provider and
//! one expiry, opens once, and ends once (its waiter told, its client notified).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sha2::Digest as _;
use tokio::sync::oneshot;

use super::{BrowserUser, ConnectError};
use crate::context::ElicitationCompletion;

/// How many links one principal may have pending: a client looping on a tool cannot fill
/// the table on its own.
const PER_OWNER: usize = 8;

/// The pending links of a [`Connect`](super::Connect).
pub(super) struct Flows {
    state: Mutex<State>,
    max: usize,
}

#[derive(Default)]
struct State {
    by_reference: HashMap<String, Flow>,
    /// OAuth `state` values handed to the third party, to their link's reference.
    by_oauth_state: HashMap<String, String>,
}

struct Flow {
    owner: BrowserUser,
    provider: String,
    expires: Instant,
    /// The link was opened (by its owner, or refused to someone else): it opens no more.
    opened: bool,
    verifier: Option<String>,
    completion: Option<ElicitationCompletion>,
    done: Option<oneshot::Sender<bool>>,
}

/// Why a link or a callback is refused, for the page that says so.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// No such link (never issued, or finished).
    Unknown,
    /// It expired.
    Expired,
    /// It was opened already.
    Used,
    /// The browser is not signed in to this server.
    NotSignedIn,
    /// Someone other than the principal who caused it opened it.
    WrongUser,
}

/// A link opened by its owner: where to send the browser.
pub(super) struct Opened {
    pub(super) provider: String,
    pub(super) oauth_state: String,
    pub(super) challenge: String,
}

/// A callback that belongs to a live link.
pub(super) struct Returned {
    pub(super) reference: String,
    pub(super) owner: BrowserUser,
    pub(super) provider: String,
    pub(super) verifier: String,
}

impl Flows {
    pub(super) fn new(max: usize) -> Self {
        Flows {
            state: Mutex::new(State::default()),
            max,
        }
    }

    /// Records a new link; the receiver learns whether its flow ended with tokens.
    pub(super) fn open(
        &self,
        reference: &str,
        owner: BrowserUser,
        provider: &str,
        completion: Option<ElicitationCompletion>,
        ttl: Duration,
    ) -> Result<oneshot::Receiver<bool>, ConnectError> {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.purge(now);
        let mine = state
            .by_reference
            .values()
            .filter(|f| f.owner == owner)
            .count();
        if state.by_reference.len() >= self.max || mine >= PER_OWNER {
            return Err(ConnectError::Busy);
        }
        let (tx, rx) = oneshot::channel();
        state.by_reference.insert(
            reference.to_owned(),
            Flow {
                owner,
                provider: provider.to_owned(),
                expires: now + ttl,
                opened: false,
                verifier: None,
                completion,
                done: Some(tx),
            },
        );
        Ok(rx)
    }

    /// Drops a link that will not be used (its call ended first).
    pub(super) fn forget(&self, reference: &str) {
        let mut state = self.state.lock();
        if state.by_reference.remove(reference).is_some() {
            state.by_oauth_state.retain(|_, r| r != reference);
        }
    }

    /// The browser of `who` opens `reference`: only its owner goes on, once. Someone else
    /// spends the link (it was shown to the wrong person); a browser not signed in does
    /// not, so the owner can sign in and open it again.
    pub(super) fn begin(
        &self,
        reference: &str,
        who: Option<&BrowserUser>,
    ) -> Result<Opened, Refusal> {
        let now = Instant::now();
        let mut state = self.state.lock();
        let flow = state
            .by_reference
            .get_mut(reference)
            .ok_or(Refusal::Unknown)?;
        if flow.expires <= now {
            return Err(Refusal::Expired);
        }
        if flow.opened {
            return Err(Refusal::Used);
        }
        let Some(who) = who else {
            return Err(Refusal::NotSignedIn);
        };
        flow.opened = true;
        if *who != flow.owner {
            // The owner's call learns the flow failed; the link is dead.
            let flow = state.by_reference.remove(reference);
            if let Some(tx) = flow.and_then(|f| f.done) {
                let _ = tx.send(false);
            }
            return Err(Refusal::WrongUser);
        }
        let verifier = crate::util::random_token(32);
        let challenge = base64url(&sha2::Sha256::digest(verifier.as_bytes()));
        flow.verifier = Some(verifier);
        let provider = flow.provider.clone();
        let oauth_state = crate::util::random_token(24);
        state
            .by_oauth_state
            .insert(oauth_state.clone(), reference.to_owned());
        Ok(Opened {
            provider,
            oauth_state,
            challenge,
        })
    }

    /// The third party sent the browser back with `oauth_state`: the link it belongs to,
    /// once, and only for the same person.
    pub(super) fn returned(
        &self,
        oauth_state: &str,
        who: Option<&BrowserUser>,
    ) -> Result<Returned, Refusal> {
        let now = Instant::now();
        let mut state = self.state.lock();
        let reference = state
            .by_oauth_state
            .remove(oauth_state)
            .ok_or(Refusal::Unknown)?;
        let flow = state.by_reference.get(&reference).ok_or(Refusal::Unknown)?;
        if flow.expires <= now {
            return Err(Refusal::Expired);
        }
        match who {
            None => return Err(Refusal::NotSignedIn),
            Some(w) if *w != flow.owner => {
                // A callback carried into someone else's browser: the flow is over.
                if let Some(tx) = state.by_reference.remove(&reference).and_then(|f| f.done) {
                    let _ = tx.send(false);
                }
                return Err(Refusal::WrongUser);
            }
            Some(_) => {}
        }
        Ok(Returned {
            owner: flow.owner.clone(),
            provider: flow.provider.clone(),
            verifier: flow.verifier.clone().ok_or(Refusal::Unknown)?,
            reference,
        })
    }

    /// Ends a link's flow: with tokens stored (`ok`), its client is told the elicitation
    /// finished and its call goes on.
    pub(super) fn finish(&self, reference: &str, ok: bool) {
        let flow = self.state.lock().by_reference.remove(reference);
        let Some(flow) = flow else { return };
        if ok && let Some(completion) = &flow.completion {
            completion.send();
        }
        if let Some(tx) = flow.done {
            let _ = tx.send(ok);
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.state.lock().by_reference.len()
    }
}

impl State {
    /// Drops expired links (their calls learn they failed).
    fn purge(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .by_reference
            .iter()
            .filter(|(_, f)| f.expires <= now)
            .map(|(r, _)| r.clone())
            .collect();
        for reference in expired {
            if let Some(tx) = self.by_reference.remove(&reference).and_then(|f| f.done) {
                let _ = tx.send(false);
            }
            self.by_oauth_state.retain(|_, r| *r != reference);
        }
    }
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(s: &str) -> BrowserUser {
        BrowserUser::new(s, Some("https://idp.example"))
    }

    #[test]
    fn a_link_opens_once_for_its_owner_only() {
        let flows = Flows::new(100);
        let ttl = Duration::from_secs(60);
        let mut done = flows
            .open("r1", user("alice"), "codehost", None, ttl)
            .unwrap();
        assert_eq!(
            flows.begin("r1", None).err(),
            Some(Refusal::NotSignedIn),
            "not signed in: the link stays usable"
        );
        let opened = flows.begin("r1", Some(&user("alice"))).unwrap();
        assert_eq!(opened.provider, "codehost");
        assert_eq!(
            flows.begin("r1", Some(&user("alice"))).err(),
            Some(Refusal::Used)
        );
        assert_eq!(
            flows
                .returned(&opened.oauth_state, Some(&user("bob")))
                .err(),
            Some(Refusal::WrongUser)
        );
        // The wrong browser's attempt ended the flow: the call learns it failed.
        assert_eq!(
            flows
                .returned(&opened.oauth_state, Some(&user("alice")))
                .err(),
            Some(Refusal::Unknown)
        );
        assert_eq!(done.try_recv(), Ok(false));
        assert_eq!(flows.len(), 0);

        // The owner's own round trip.
        let mut done = flows
            .open("r3", user("alice"), "codehost", None, ttl)
            .unwrap();
        let opened = flows.begin("r3", Some(&user("alice"))).unwrap();
        let back = flows
            .returned(&opened.oauth_state, Some(&user("alice")))
            .unwrap();
        assert_eq!(back.reference, "r3");
        assert!(!back.verifier.is_empty());
        assert_eq!(
            flows
                .returned(&opened.oauth_state, Some(&user("alice")))
                .err(),
            Some(Refusal::Unknown),
            "a callback's state is spent once"
        );
        flows.finish("r3", true);
        assert_eq!(done.try_recv(), Ok(true));
        assert_eq!(flows.len(), 0);
    }

    #[test]
    fn someone_else_spends_the_link_and_fails_the_call() {
        let flows = Flows::new(100);
        let mut done = flows
            .open(
                "r2",
                user("alice"),
                "codehost",
                None,
                Duration::from_secs(60),
            )
            .unwrap();
        assert_eq!(
            flows.begin("r2", Some(&user("bob"))).err(),
            Some(Refusal::WrongUser)
        );
        assert_eq!(done.try_recv(), Ok(false));
        assert_eq!(
            flows.begin("r2", Some(&user("alice"))).err(),
            Some(Refusal::Unknown)
        );
    }

    #[test]
    fn links_expire_and_are_bounded() {
        let flows = Flows::new(3);
        flows
            .open("old", user("a"), "p", None, Duration::ZERO)
            .unwrap();
        assert_eq!(
            flows.begin("old", Some(&user("a"))).err(),
            Some(Refusal::Expired)
        );
        for i in 0..3 {
            flows
                .open(
                    &format!("r{i}"),
                    user(&format!("u{i}")),
                    "p",
                    None,
                    Duration::from_secs(60),
                )
                .unwrap();
        }
        assert!(matches!(
            flows.open("r9", user("u9"), "p", None, Duration::from_secs(60)),
            Err(ConnectError::Busy)
        ));
        let flows = Flows::new(100);
        for i in 0..PER_OWNER {
            flows
                .open(
                    &format!("m{i}"),
                    user("mallory"),
                    "p",
                    None,
                    Duration::from_secs(60),
                )
                .unwrap();
        }
        assert!(matches!(
            flows.open(
                "m-last",
                user("mallory"),
                "p",
                None,
                Duration::from_secs(60)
            ),
            Err(ConnectError::Busy)
        ));
        assert!(
            flows
                .open("a", user("alice"), "p", None, Duration::from_secs(60))
                .is_ok()
        );
    }
}
