//! The error type of the net crate. Callers map [`Error::Env`] to exit code 3 and
//! [`Error::Usage`] to exit code 2.

use std::fmt;
use std::io;

/// Result with the net crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, grouped by what the user can do about it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The environment lacks a privilege or a tool; the message says how to fix it.
    Env(String),
    /// Bad input from the user (a topology string, a node name, a prefix).
    Usage(String),
    /// An external command (`ip …`) failed.
    Command {
        /// The command line, as it would be typed.
        command: String,
        /// Exit status (`None` when killed by a signal).
        status: Option<i32>,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A state file could not be read or written.
    State {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong with it.
        problem: String,
    },
    /// Any other I/O error.
    Io(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Env(m) | Error::Usage(m) => f.write_str(m),
            Error::Command {
                command,
                status,
                stderr,
            } => {
                let status =
                    status.map_or("killed by a signal".to_string(), |s| format!("exit {s}"));
                write!(f, "`{command}` failed ({status})")?;
                let stderr = stderr.trim();
                if !stderr.is_empty() {
                    write!(f, ": {stderr}")?;
                }
                Ok(())
            }
            Error::State { path, problem } => write!(f, "state file {}: {problem}", path.display()),
            Error::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}
