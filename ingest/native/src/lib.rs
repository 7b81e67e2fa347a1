//! One pass from a (bzip2 / gzip / plain) MRT RIB dump to Arrow column buffers.
//!
//! A reader thread reads the file once (hashing the raw bytes with SHA-256), decompresses
//! every stream of a multi-stream .bz2 / multi-member .gz and hands 1 MiB chunks to a decoder
//! thread. The decoder frames and checks every record with the same rules as
//! `ingest/framing.py` (known type, length bound, PEER_INDEX_TABLE first, announced entry
//! counts) and decodes TABLE_DUMP and TABLE_DUMP_V2 RIB entries straight into the buffers of
//! the `rib_entries` columns, normalised exactly as `ingest/normalize.py` normalises
//! `bgpdump -m` text. Python receives finished batches: no Python object per route.
//! Every problem is a one-line message; a panic becomes an exception, never an abort.
//!
//! By job: `read` (file, hash, decompression; `pbz2` the parallel bzip2), `decode` (framing
//! and records), `text` (bgpdump's text forms), `cols` (the Arrow buffers), `stream` (the two
//! threads), `error` (one error type); this file is the Python binding and the unit tests.

mod cols;
mod decode;
mod error;
mod pbz2;
mod read;
mod stream;
mod text;

use crate::cols::{pack_bits, Cols};
use crate::error::{panic_text, R};
use crate::stream::{start, Done, Msg};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread;

create_exception!(congruency_mrt, MrtError, PyValueError, "The file is not a complete, well-formed MRT RIB dump.");

pub(crate) const CHUNK: usize = 1 << 20;
/// A record announcing more than this is corrupt, not big (as in framing.py).
pub(crate) const MAX_RECORD: usize = 16 << 20;
pub(crate) const TABLE_DUMP: u16 = 12;
pub(crate) const TABLE_DUMP_V2: u16 = 13;
pub(crate) const KNOWN_TYPES: [u16; 20] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 32, 33, 48, 49];


// ------------------------------------------------------------------ Python interface

/// Iterator over `(rows, columns)` batches of one MRT file; `stats` is set once it is exhausted.
#[pyclass(module = "congruency_mrt")]
struct Reader {
    rx: std::sync::Mutex<Option<Receiver<Msg>>>,
    #[pyo3(get)]
    stats: Option<PyObject>,
}

fn bytes<'py>(py: Python<'py>, v: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, v)
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain integer slices viewed as their (little-endian, native) bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn batch_dict<'py>(py: Python<'py>, c: &Cols) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rows", c.n)?;
    d.set_item("peer_asn", bytes(py, as_bytes(&c.peer_asn)))?;
    d.set_item("peer_ip_offsets", bytes(py, as_bytes(&c.peer_ip_off)))?;
    d.set_item("peer_ip", bytes(py, &c.peer_ip))?;
    d.set_item("afi", bytes(py, as_bytes(&c.afi)))?;
    d.set_item("prefix_offsets", bytes(py, as_bytes(&c.prefix_off)))?;
    d.set_item("prefix", bytes(py, &c.prefix))?;
    d.set_item("as_path_offsets", bytes(py, as_bytes(&c.path_off)))?;
    d.set_item("as_path_values", bytes(py, as_bytes(&c.path_vals)))?;
    d.set_item("as_path_validity", bytes(py, &pack_bits(&c.path_valid)))?;
    d.set_item("has_as_set", bytes(py, &pack_bits(&c.has_set)))?;
    d.set_item("as_path_raw_offsets", bytes(py, as_bytes(&c.raw_off)))?;
    d.set_item("as_path_raw", bytes(py, &c.raw))?;
    d.set_item("as_path_raw_validity", bytes(py, &pack_bits(&c.has_set)))?;
    d.set_item("origin_asn", bytes(py, as_bytes(&c.origin)))?;
    d.set_item("origin_asn_validity", bytes(py, &pack_bits(&c.origin_valid)))?;
    Ok(d)
}

fn stats_dict<'py>(py: Python<'py>, done: &Done) -> PyResult<Bound<'py, PyDict>> {
    let s = &done.stats;
    let d = PyDict::new(py);
    d.set_item("records", s.records)?;
    let e = PyDict::new(py);
    if s.entries4 > 0 {
        e.set_item(4, s.entries4)?;
    }
    if s.entries6 > 0 {
        e.set_item(6, s.entries6)?;
    }
    d.set_item("entries", e)?;
    let k = PyDict::new(py);
    for (name, n) in &s.skipped {
        k.set_item(name, n)?;
    }
    d.set_item("skipped", k)?;
    d.set_item("first_timestamp", s.first_timestamp)?;
    d.set_item("uncompressed_bytes", s.uncompressed_bytes)?;
    d.set_item("file_bytes", done.file_bytes)?;
    d.set_item("sha256", &done.sha256)?;
    Ok(d)
}

#[pymethods]
impl Reader {
    /// `bz2_workers`: threads decompressing bzip2 blocks in parallel (0: one per core; 1: the
    /// sequential decoder only).
    #[new]
    #[pyo3(signature = (path, batch_rows = 200_000, bz2_workers = 0))]
    fn new(path: std::path::PathBuf, batch_rows: usize, bz2_workers: usize) -> PyResult<Self> {
        let p = path.to_str().ok_or_else(|| MrtError::new_err("path is not UTF-8"))?.to_string();
        let workers = if bz2_workers == 0 {
            thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8)
        } else {
            bz2_workers
        };
        Ok(Reader { rx: std::sync::Mutex::new(Some(start(p, batch_rows.max(1), workers))), stats: None })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(rx) = self.rx.lock().unwrap().take() else { return Ok(None) };
        let (rx, msg) = py.allow_threads(move || {
            let m = rx.recv();
            (rx, m)
        });
        match msg {
            Ok(Msg::Batch(c)) => {
                *self.rx.lock().unwrap() = Some(rx);
                Ok(Some(batch_dict(py, &c)?))
            }
            Ok(Msg::Done(done)) => {
                self.stats = Some(stats_dict(py, &done)?.into_any().unbind());
                Ok(None)
            }
            Ok(Msg::Fail(e)) => {
                Err(MrtError::new_err(e.to_string()))
            }
            Err(_) => {
                Err(MrtError::new_err("internal decoder error: the decoder thread stopped"))
            }
        }
    }

    /// Stop early: the threads see the closed channel and end.
    fn close(&mut self) {
        *self.rx.lock().unwrap() = None;
    }
}

/// Test hook: a panic in a decoder-style thread must come back as MrtError, not an abort.
#[pyfunction]
fn _panic_in_thread() -> PyResult<()> {
    let (tx, rx) = sync_channel::<String>(1);
    thread::spawn(move || {
        let r: R<()> = catch_unwind(AssertUnwindSafe(|| -> R<()> { panic!("self-test panic") }))
            .unwrap_or_else(|p| Err(panic_text(p)));
        let _ = tx.send(r.err().map(|e| e.to_string()).unwrap_or_default());
    });
    Err(MrtError::new_err(rx.recv().unwrap_or_default()))
}

#[pymodule]
fn congruency_mrt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add_function(wrap_pyfunction!(_panic_in_thread, m)?)?;
    m.add("MrtError", m.py().get_type::<MrtError>())?;
    Ok(())
}
