//! Long-term keys: key files (bounded, private, one profile each), MKA's pre-shared CAK files,
//! and the nonce high-water mark every sender under such a key keeps on disk
//! (docs/nonce-safety.md).

pub mod highwater;
pub mod keyfile;
pub mod psk;
