//! What `send`, `receive`, `keygen` and `someip` still share here: key files, the nonce
//! high-water mark and the string-keyed channel they were written against.

pub mod channel;
pub mod highwater;
pub mod keyfile;
