//! Why a file could not be decoded: one error type, one line of text each.


/// Why a file could not be decoded. Its text (Display) is the one line Python's MrtError
/// carries, worded like ingest/framing.py's so both checks say the same thing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Error {
    /// The file cannot be opened or read.
    Io(String),
    /// The bzip2/gzip stream is cut short, corrupt, or followed by garbage.
    Compression(String),
    /// An MRT record is cut short, unknown or malformed; the text names it.
    Mrt(String),
    /// The other thread stopped, or a thread panicked.
    Internal(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(m) | Error::Compression(m) | Error::Mrt(m) | Error::Internal(m) => f.write_str(m),
        }
    }
}

/// A decoder result; a record's parts say what is wrong with them as a `Why` (plain text),
/// which the record wraps into an `Error::Mrt` naming the record.
pub(crate) type R<T> = Result<T, Error>;
pub(crate) type Why<T> = Result<T, String>;


pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn panic_text(p: Box<dyn std::any::Any + Send>) -> Error {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    Error::Internal(format!("internal decoder error: {}", one_line(&what)))
}
