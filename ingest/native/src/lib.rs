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

pub(crate) use cols::*;
pub(crate) use decode::*;
pub(crate) use error::*;
pub(crate) use read::*;
pub(crate) use stream::*;
pub(crate) use text::*;

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

// ------------------------------------------------------------------ unit tests (`cargo test`, run by `make test`)
// Hand-built records, each field written out as RFC 6396 / RFC 8050 / RFC 6793 lay it out,
// so a decoder change that breaks the wire format fails here before any real file is read.
#[cfg(test)]
mod tests {
    use super::*;

    fn mrt(typ: u16, sub: u16, body: &[u8]) -> Vec<u8> {
        let mut out = 1_700_000_000u32.to_be_bytes().to_vec();
        out.extend(typ.to_be_bytes());
        out.extend(sub.to_be_bytes());
        out.extend((body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    /// PEER_INDEX_TABLE with one IPv4 peer (4-byte ASN).
    fn peer_index(ip: [u8; 4], asn: u32) -> Vec<u8> {
        let mut b = vec![192, 0, 2, 1, 0, 0, 0, 1]; // collector BGP ID, empty view name, 1 peer
        b.push(0b10); // IPv4 address, 4-byte ASN
        b.extend([10, 0, 0, 1]); // peer BGP ID
        b.extend(ip);
        b.extend(asn.to_be_bytes());
        b
    }

    fn attr(typ: u8, data: &[u8]) -> Vec<u8> {
        let mut a = vec![0x40, typ, data.len() as u8];
        a.extend_from_slice(data);
        a
    }

    fn segment(typ: u8, asns: &[u32], w: usize) -> Vec<u8> {
        let mut s = vec![typ, asns.len() as u8];
        for a in asns {
            s.extend_from_slice(&a.to_be_bytes()[4 - w..]);
        }
        s
    }

    /// RIB_IPV4_UNICAST(_ADDPATH) for 192.0.2.0/24 with one entry of peer 0.
    fn rib_v4(attrs: &[u8], addpath: bool) -> Vec<u8> {
        let mut b = vec![0, 0, 0, 7, 24, 192, 0, 2, 0, 1]; // sequence, /24, prefix, 1 entry
        b.extend([0, 0, 0x65, 0x5f, 0x10, 0]); // peer index 0, originated time
        if addpath {
            b.extend(42u32.to_be_bytes()); // path identifier (RFC 8050)
        }
        b.extend((attrs.len() as u16).to_be_bytes());
        b.extend_from_slice(attrs);
        b
    }

    fn decode(bytes: Vec<u8>) -> (R<Option<Done>>, Vec<Cols>) {
        let (ctx, crx) = sync_channel::<Chunk>(4);
        let (btx, brx) = sync_channel::<Msg>(64);
        ctx.send(Chunk::Data(bytes)).unwrap();
        ctx.send(Chunk::End { sha256: String::new(), file_bytes: 0 }).unwrap();
        let r = decode_stream(crx, &btx, 1000);
        drop(btx);
        let batches = brx.iter().filter_map(|m| if let Msg::Batch(c) = m { Some(c) } else { None }).collect();
        (r, batches)
    }

    fn paths(c: &Cols) -> Vec<Vec<u32>> {
        (0..c.n).map(|i| c.path_vals[c.path_off[i] as usize..c.path_off[i + 1] as usize].to_vec()).collect()
    }

    #[test]
    fn framing_a_record_cut_short_names_it() {
        let mut f = mrt(13, 1, &peer_index([198, 51, 100, 1], 65001));
        f.extend(&mrt(13, 2, &rib_v4(&attr(2, &segment(2, &[65001, 15169], 4)), false))[..20]);
        let (r, _) = decode(f);
        let e = r.err().unwrap();
        // the peer index record is 12 + 21 bytes; the RIB record's body is 31, of which 8 are there
        assert_eq!(e, Error::Mrt("MRT record #2 at byte 33 cut short: it announces 31 bytes, the file ends 8 bytes into them".into()));
    }

    #[test]
    fn framing_garbage_and_empty_input_are_not_mrt() {
        let (r, _) = decode(b"this is not an MRT file at all".to_vec());
        assert_eq!(r.err().unwrap().to_string(), "not an MRT record at byte 0 (type 8297, length 1852797984)"); // " i", "not "
        let (r, _) = decode(Vec::new());
        assert_eq!(r.err().unwrap(), Error::Mrt("no MRT records".into()));
    }

    #[test]
    fn a_rib_before_the_peer_index_is_an_error() {
        let (r, _) = decode(mrt(13, 2, &rib_v4(&attr(2, &segment(2, &[1, 2], 4)), false)));
        assert_eq!(r.err().unwrap().to_string(), "RIB record #1 comes before any PEER_INDEX_TABLE");
    }

    #[test]
    fn as_path_segments_in_bgpdump_text() {
        let mut data = segment(2, &[65001, 3356], 4);
        data.extend(segment(1, &[64512, 64513], 4)); // AS_SET
        let (mut segs, mut asns) = (Vec::new(), Vec::new());
        parse_segments(&data, 4, &mut segs, &mut asns).unwrap();
        assert_eq!(asns, vec![65001, 3356, 64512, 64513]);
        assert_eq!(hop_count(&segs), 3); // a set counts one
        let mut text = Vec::new();
        bgpdump_text(&segs, &asns, &mut text);
        assert_eq!(String::from_utf8(text.clone()).unwrap(), "65001 3356 {64512,64513}");
        let (mut segs, mut asns) = (Vec::new(), Vec::new());
        let mut confed = segment(3, &[65010, 65011], 2); // AS_CONFED_SEQUENCE, 2-byte ASNs
        confed.extend(segment(2, &[174], 2));
        parse_segments(&confed, 2, &mut segs, &mut asns).unwrap();
        bgpdump_text(&segs, &asns, &mut text);
        assert_eq!(String::from_utf8(text).unwrap(), "(65010 65011) 174");
        assert!(parse_segments(&[5, 1, 0, 0, 0, 1], 4, &mut segs, &mut asns).is_none()); // unknown type
        assert!(parse_segments(&[2, 3, 0, 0, 0, 1], 4, &mut segs, &mut asns).is_none()); // cut off
    }

    #[test]
    fn add_path_entries_skip_the_path_identifier() {
        let attrs = attr(2, &segment(2, &[65001, 15169], 4));
        for (sub, addpath) in [(2, false), (8, true)] {
            let mut f = mrt(13, 1, &peer_index([198, 51, 100, 1], 65001));
            f.extend(mrt(13, sub, &rib_v4(&attrs, addpath)));
            let (r, batches) = decode(f);
            let done = r.unwrap().unwrap();
            assert_eq!((done.stats.records, done.stats.entries4), (2, 1));
            assert_eq!(paths(&batches[0]), vec![vec![65001, 15169]], "subtype {sub}");
            assert_eq!(&batches[0].prefix[..], b"192.0.2.0/24");
        }
        // the same ADD-PATH record read as a plain one misreads its entry: an error, not a row
        let mut f = mrt(13, 1, &peer_index([198, 51, 100, 1], 65001));
        f.extend(mrt(13, 2, &rib_v4(&attrs, true)));
        let (r, _) = decode(f);
        assert!(r.err().unwrap().to_string().starts_with("malformed RIB record #2 ("));
    }

    /// TABLE_DUMP (v1) IPv4 entry of a 2-byte session: AS_PATH with AS_TRANS, and AS4_PATH.
    fn rib_v1(attrs: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, 0, 1, 192, 0, 2, 0, 24, 1, 0x65, 0x5f, 0x10, 0]; // view, seq, prefix, /24, status, time
        b.extend([198, 51, 100, 1, 0xfd, 0xe9]); // peer address, peer AS 65001
        b.extend((attrs.len() as u16).to_be_bytes());
        b.extend_from_slice(attrs);
        b
    }

    #[test]
    fn as4_path_replaces_the_as_trans_hops() {
        let mut attrs = attr(2, &segment(2, &[65001, 23456, 23456], 2));
        attrs.extend(attr(17, &segment(2, &[196608, 4200000001], 4)));
        let (r, batches) = decode(mrt(12, 1, &rib_v1(&attrs)));
        r.unwrap().unwrap();
        assert_eq!(paths(&batches[0]), vec![vec![65001, 196608, 4200000001]]);
        // an AS4_PATH longer than the AS_PATH is ignored (RFC 6793 4.2.3)
        let mut attrs = attr(2, &segment(2, &[65001], 2));
        attrs.extend(attr(17, &segment(2, &[196608, 4200000001], 4)));
        let (r, batches) = decode(mrt(12, 1, &rib_v1(&attrs)));
        r.unwrap().unwrap();
        assert_eq!(paths(&batches[0]), vec![vec![65001]]);
        // an attribute twice is malformed
        let mut attrs = attr(2, &segment(2, &[65001], 2));
        attrs.extend(attr(2, &segment(2, &[65002], 2)));
        let (r, _) = decode(mrt(12, 1, &rib_v1(&attrs)));
        assert_eq!(r.err().unwrap().to_string(), "malformed RIB record #1 (attribute 2 twice)");
    }
}
