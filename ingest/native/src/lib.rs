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
mod merge;
mod pbz2;
mod read;
mod stream;
mod text;

use crate::cols::{pack_bits, Cols};
use crate::error::{panic_text, R};
use crate::merge::{Batch, Merger};
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
    if !c.bucket.is_empty() {
        d.set_item("vp_bucket", bytes(py, as_bytes(&c.bucket)))?;
    }
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
    /// sequential decoder only). `bucket`: (mult, bits) of common/vp_hash.py, to hand each
    /// batch's rows grouped by VP bucket with a `vp_bucket` column (None: in the file's order,
    /// no such column).
    #[new]
    #[pyo3(signature = (path, batch_rows = 200_000, bz2_workers = 0, bucket = None))]
    fn new(path: std::path::PathBuf, batch_rows: usize, bz2_workers: usize, bucket: Option<(u64, u32)>) -> PyResult<Self> {
        let p = path.to_str().ok_or_else(|| MrtError::new_err("path is not UTF-8"))?.to_string();
        let workers = if bz2_workers == 0 {
            thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8)
        } else {
            bz2_workers
        };
        Ok(Reader { rx: std::sync::Mutex::new(Some(start(p, batch_rows.max(1), workers, bucket))), stats: None })
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

/// A collector's routes from decoded entries and its current routes (merge.rs), for
/// ingest/routes.py: `add` batches of column pointers, `finish`, then `take` slices in
/// output order.
#[pyclass(module = "congruency_mrt")]
struct Routes {
    m: Merger,
}

#[pymethods]
impl Routes {
    /// `words`: 63-bit words of snapshot bits; `mult` and `bucket_bits`: common/vp_hash.py's
    /// VP bucket; rows outside buckets `lo..=hi` are skipped.
    #[new]
    fn new(words: usize, mult: u64, bucket_bits: u32, lo: i8, hi: i8) -> Self {
        Routes { m: Merger::new(words, mult, bucket_bits, lo, hi) }
    }

    /// Each old snapshot's new bit (-1: dropped), for the routes `add` is given next.
    fn set_mapping(&mut self, mapping: Vec<i32>) {
        self.m.set_mapping(mapping);
    }

    /// Every route's bits renumbered (bit o -> mapping[o]; -1: dropped) into `words` words.
    fn renumber(&mut self, py: Python<'_>, words: usize, mapping: Vec<i32>) {
        let m = &mut self.m;
        py.allow_threads(move || m.renumber(words, &mapping));
    }

    /// Fold in `n` rows given as buffer addresses, in the order of `merge::Batch`'s fields
    /// (`copy` and `words` 0 for entries; `words_in` the routes' words); `cursor` where the
    /// same input's last batch ended (returned). The caller keeps the buffers alive; the GIL
    /// is released meanwhile.
    #[pyo3(signature = (n, ptrs, words_in, cursor = usize::MAX))]
    fn add(&mut self, py: Python<'_>, n: usize, ptrs: Vec<usize>, words_in: usize, cursor: usize) -> PyResult<usize> {
        if ptrs.len() != 18 {
            return Err(PyValueError::new_err(format!("Routes.add takes 18 buffer addresses, got {}", ptrs.len())));
        }
        let m = &mut self.m;
        py.allow_threads(move || {
            let p = &ptrs;
            let b = Batch {
                n, peer_asn: p[0] as _, ip_off: p[1] as _, ip: p[2] as _, afi: p[3] as _, pfx_off: p[4] as _,
                pfx: p[5] as _, path_valid: p[6] as _, path_off: p[7] as _, path: p[8] as _, has_set: p[9] as _,
                raw_valid: p[10] as _, raw_off: p[11] as _, raw: p[12] as _, origin_valid: p[13] as _,
                origin: p[14] as _, sid: p[15] as _, copy: p[16] as _, words: p[17] as _, words_in,
            };
            // SAFETY: the caller (ingest/routes.py) passes live Arrow buffers of n rows.
            catch_unwind(AssertUnwindSafe(|| unsafe { m.add(&b, cursor) })).unwrap_or_else(|p| Err(panic_text(p).to_string()))
        }).map_err(PyValueError::new_err)
    }

    /// Sort the routes with a bit set into output order.
    fn finish(&mut self, py: Python<'_>) {
        let m = &mut self.m;
        py.allow_threads(move || m.finish());
    }

    /// The next `n` routes as column buffers (`rows` 0 at the end).
    fn take<'py>(&mut self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyDict>> {
        let m = &mut self.m;
        let o = py.allow_threads(move || m.take(n));
        let d = PyDict::new(py);
        d.set_item("rows", o.n)?;
        for (k, v) in [("peer_asn", as_bytes(&o.peer_asn)), ("peer_ip_offsets", as_bytes(&o.ip_off)), ("peer_ip", &o.ip[..]),
                       ("afi", as_bytes(&o.afi)), ("prefix_offsets", as_bytes(&o.pfx_off)), ("prefix", &o.pfx[..]),
                       ("as_path_offsets", as_bytes(&o.path_off)), ("as_path_values", as_bytes(&o.path)),
                       ("as_path_raw_offsets", as_bytes(&o.raw_off)), ("as_path_raw", &o.raw[..]),
                       ("origin_asn", as_bytes(&o.origin)), ("copy", as_bytes(&o.copy)), ("words", as_bytes(&o.words)),
                       ("vp_bucket", as_bytes(&o.bucket))] {
            d.set_item(k, bytes(py, v))?;
        }
        for (k, v) in [("as_path_validity", &o.path_valid), ("as_path_repeats", &o.repeats), ("has_as_set", &o.has_set),
                       ("as_path_raw_validity", &o.raw_valid), ("origin_asn_validity", &o.origin_valid)] {
            d.set_item(k, bytes(py, &pack_bits(v)))?;
        }
        Ok(d)
    }

    /// Routes held (copies included).
    #[getter]
    fn routes(&self) -> usize {
        self.m.routes()
    }

    /// Bytes held, about.
    #[getter]
    fn bytes(&self) -> usize {
        self.m.bytes()
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
    m.add_class::<Routes>()?;
    m.add_function(wrap_pyfunction!(_panic_in_thread, m)?)?;
    m.add("MrtError", m.py().get_type::<MrtError>())?;
    Ok(())
}
