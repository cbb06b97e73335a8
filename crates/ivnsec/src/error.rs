//! The errors the commands share (the library's, re-exported) and the exit-code convention:
//! 0 success, 1 a verification or verdict failed, 2 usage or configuration error, 3 environment
//! problem (missing privilege or tool).

pub use ivnsec_node::error::{EnvError, env_error, exit_code, parse_hex, parse_mac, usage};
