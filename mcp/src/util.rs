//! Small shared helpers.

use base64::Engine as _;

/// `n` bytes from the operating system's CSPRNG, as unpadded URL-safe base64: unguessable
/// and made only of visible ASCII.
pub(crate) fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        // Without an OS random source nothing here can be made safe; refuse loudly.
        panic!("the operating system's random number generator is unavailable");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
