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

mod pbz2;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread;

create_exception!(congruency_mrt, MrtError, PyValueError, "The file is not a complete, well-formed MRT RIB dump.");

const CHUNK: usize = 1 << 20;
/// A record announcing more than this is corrupt, not big (as in framing.py).
const MAX_RECORD: usize = 16 << 20;
const TABLE_DUMP: u16 = 12;
const TABLE_DUMP_V2: u16 = 13;
const KNOWN_TYPES: [u16; 20] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 32, 33, 48, 49];

// ------------------------------------------------------------------ errors

/// Why a file could not be decoded. Its text (Display) is the one line Python's MrtError
/// carries, worded like ingest/framing.py's so both checks say the same thing.
#[derive(Debug, Clone, PartialEq)]
enum Error {
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
type R<T> = Result<T, Error>;
type Why<T> = Result<T, String>;

// ------------------------------------------------------------------ reading + decompression

enum Chunk {
    Data(Vec<u8>),
    End { sha256: String, file_bytes: u64 },
    Fail(Error),
}

struct HashRead {
    inner: File,
    h: Sha256,
    n: u64,
}

impl Read for HashRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.h.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }
}

/// Fill `out` from `r` up to CHUNK bytes; returns false at end of input.
fn fill(r: &mut dyn Read, out: &mut Vec<u8>) -> io::Result<bool> {
    out.resize(CHUNK, 0);
    let mut have = 0;
    while have < CHUNK {
        match r.read(&mut out[have..]) {
            Ok(0) => {
                out.truncate(have);
                return Ok(false);
            }
            Ok(k) => have += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

fn read_file(path: &str, tx: &SyncSender<Chunk>, bz2_workers: usize) -> R<(String, u64)> {
    let mut skip = 0u64; // output bytes the parallel path already delivered
    if bz2_workers > 1 {
        let mut head = [0u8; 3];
        let is_bz2 = File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == b"BZh";
        if is_bz2 {
            let send = |v: Vec<u8>| tx.send(Chunk::Data(v)).is_ok();
            match pbz2::run(path, bz2_workers, &send) {
                pbz2::Outcome::Done { sha256, file_bytes } => return Ok((sha256, file_bytes)),
                pbz2::Outcome::Cancelled => return Err(Error::Internal("cancelled".into())),
                pbz2::Outcome::Fallback { bytes_out } => skip = bytes_out,
            }
        }
    }
    let f = File::open(path).map_err(|e| Error::Io(format!("cannot open: {e}")))?;
    let mut br = BufReader::with_capacity(CHUNK, HashRead { inner: f, h: Sha256::new(), n: 0 });
    let head: Vec<u8> = br.fill_buf().map_err(|e| Error::Io(format!("read error: {e}")))?.iter().take(4).copied().collect();
    let kind = if head.starts_with(b"BZh") {
        "bzip2"
    } else if head.starts_with(&[0x1f, 0x8b]) {
        "gzip"
    } else {
        "plain"
    };
    // After a parallel attempt stopped early, the first `skip` bytes were delivered already.
    let mut send = |mut v: Vec<u8>| {
        if skip > 0 {
            let k = skip.min(v.len() as u64) as usize;
            v.drain(..k);
            skip -= k as u64;
            if v.is_empty() {
                return Ok(());
            }
        }
        tx.send(Chunk::Data(v)).map_err(|_| Error::Internal("cancelled".into()))
    };
    if kind == "plain" {
        loop {
            let mut out = Vec::new();
            let more = fill(&mut br, &mut out).map_err(|e| Error::Io(format!("read error: {e}")))?;
            if !out.is_empty() {
                send(out)?;
            }
            if !more {
                break;
            }
        }
    } else {
        loop {
            // One compressed stream (bzip2) or member (gzip); the bufread decoders consume
            // exactly their stream, so what follows in `br` is the next one (or garbage).
            {
                let mut dec: Box<dyn Read + '_> = if kind == "bzip2" {
                    Box::new(bzip2::bufread::BzDecoder::new(&mut br))
                } else {
                    Box::new(flate2::bufread::GzDecoder::new(&mut br))
                };
                loop {
                    let mut out = Vec::new();
                    let more = fill(&mut *dec, &mut out).map_err(|e| {
                        if e.kind() == io::ErrorKind::UnexpectedEof {
                            Error::Compression(format!("truncated {kind} stream (download cut short?)"))
                        } else {
                            Error::Compression(format!("corrupt {kind} stream: {}", one_line(&e.to_string())))
                        }
                    })?;
                    if !out.is_empty() {
                        send(out)?;
                    }
                    if !more {
                        break;
                    }
                }
            }
            let rest = br.fill_buf().map_err(|e| Error::Io(format!("read error: {e}")))?;
            if rest.is_empty() {
                break;
            }
            if !rest.starts_with(&head[..2]) {
                return Err(Error::Compression(format!("trailing garbage after the {kind} stream")));
            }
        }
    }
    let hr = br.into_inner();
    Ok((format!("{:x}", hr.h.finalize()), hr.n))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ------------------------------------------------------------------ text formatting

fn push_u32(out: &mut Vec<u8>, mut v: u32) {
    let mut b = [0u8; 10];
    let mut i = 10;
    loop {
        i -= 1;
        b[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&b[i..]);
}

fn push_v4(out: &mut Vec<u8>, a: &[u8]) {
    for (i, x) in a[..4].iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_u32(out, *x as u32);
    }
}

fn push_hex(out: &mut Vec<u8>, v: u16) {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut started = false;
    for shift in [12, 8, 4, 0] {
        let d = ((v >> shift) & 0xf) as usize;
        if d != 0 || started || shift == 0 {
            out.push(H[d]);
            started = true;
        }
    }
}

/// RFC 5952 text (as Python's ipaddress writes it), with inet_ntop's embedded-IPv4 forms
/// (::a.b.c.d, ::ffff:a.b.c.d), which `bgpdump -m` keeps.
fn push_v6(out: &mut Vec<u8>, a: &[u8]) {
    let mut w = [0u16; 8];
    for i in 0..8 {
        w[i] = u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
    }
    let (mut best, mut best_len, mut cur, mut cur_len) = (usize::MAX, 0usize, usize::MAX, 0usize);
    for i in 0..8 {
        if w[i] == 0 {
            if cur == usize::MAX {
                cur = i;
                cur_len = 0;
            }
            cur_len += 1;
            if cur_len > best_len {
                best = cur;
                best_len = cur_len;
            }
        } else {
            cur = usize::MAX;
        }
    }
    if best_len < 2 {
        best = usize::MAX;
    }
    let mut i = 0;
    while i < 8 {
        if best != usize::MAX && i >= best && i < best + best_len {
            if i == best {
                out.push(b':');
            }
            i += 1;
            continue;
        }
        if i != 0 {
            out.push(b':');
        }
        if i == 6 && best == 0 && (best_len == 6 || (best_len == 5 && w[5] == 0xffff)) {
            push_v4(out, &a[12..16]);
            break;
        }
        push_hex(out, w[i]);
        i += 1;
    }
    if best != usize::MAX && best + best_len == 8 {
        out.push(b':');
    }
}

fn push_ip(out: &mut Vec<u8>, a: &[u8], v6: bool) {
    if v6 {
        push_v6(out, a)
    } else {
        push_v4(out, a)
    }
}

// ------------------------------------------------------------------ output columns

#[derive(Default)]
struct Cols {
    n: usize,
    peer_asn: Vec<u32>,
    peer_ip_off: Vec<i32>,
    peer_ip: Vec<u8>,
    afi: Vec<i8>,
    prefix_off: Vec<i32>,
    prefix: Vec<u8>,
    path_off: Vec<i32>,
    path_vals: Vec<u32>,
    path_valid: Vec<u8>,
    has_set: Vec<u8>,
    raw_off: Vec<i32>,
    raw: Vec<u8>,
    origin: Vec<u32>,
    origin_valid: Vec<u8>,
}

impl Cols {
    fn new(cap: usize) -> Cols {
        let mut c = Cols {
            peer_asn: Vec::with_capacity(cap),
            afi: Vec::with_capacity(cap),
            path_vals: Vec::with_capacity(cap * 6),
            has_set: Vec::with_capacity(cap),
            origin: Vec::with_capacity(cap),
            origin_valid: Vec::with_capacity(cap),
            path_valid: Vec::with_capacity(cap),
            ..Default::default()
        };
        for v in [&mut c.peer_ip_off, &mut c.prefix_off, &mut c.path_off, &mut c.raw_off] {
            v.reserve(cap + 1);
            v.push(0);
        }
        c
    }
}

fn pack_bits(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; bytes.len().div_ceil(8)];
    for (i, b) in bytes.iter().enumerate() {
        if *b != 0 {
            out[i >> 3] |= 1 << (i & 7);
        }
    }
    out
}

// ------------------------------------------------------------------ decoding

#[derive(Default)]
struct Stats {
    records: u64,
    entries4: u64,
    entries6: u64,
    skipped: BTreeMap<String, u64>,
    first_timestamp: Option<u32>,
    uncompressed_bytes: u64,
}

struct Peer {
    asn: u32,
    ip: Vec<u8>, // text
}

#[derive(Clone, Copy)]
struct Seg {
    typ: u8,
    start: usize,
    len: usize,
}

struct Decoder {
    peers: Option<Vec<Peer>>,
    cols: Cols,
    stats: Stats,
    batch_rows: usize,
    segs: Vec<Seg>,
    asns: Vec<u32>,
    segs4: Vec<Seg>,
    text: Vec<u8>,
}

fn be16(b: &[u8], i: usize) -> Option<u16> {
    b.get(i..i + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}
fn be32(b: &[u8], i: usize) -> Option<u32> {
    b.get(i..i + 4).map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn v2_rib(sub: u16) -> Option<(i8, bool)> {
    match sub {
        2 => Some((4, false)),
        4 => Some((6, false)),
        8 => Some((4, true)),
        10 => Some((6, true)),
        _ => None,
    }
}

fn v2_skipped(sub: u16) -> String {
    match sub {
        3 => "rib_ipv4_multicast".into(),
        5 => "rib_ipv6_multicast".into(),
        6 => "rib_generic".into(),
        9 => "rib_ipv4_multicast_addpath".into(),
        11 => "rib_ipv6_multicast_addpath".into(),
        12 => "rib_generic_addpath".into(),
        s => format!("table_dump_v2_subtype_{s}"),
    }
}

/// Parse AS path segments of `data` (ASNs of `w` bytes) onto `segs`/`asns`.
fn parse_segments(data: &[u8], w: usize, segs: &mut Vec<Seg>, asns: &mut Vec<u32>) -> Option<()> {
    let mut r = 0;
    while r < data.len() {
        let typ = *data.get(r)?;
        let cnt = *data.get(r + 1)? as usize;
        r += 2;
        if !(1..=4).contains(&typ) {
            return None;
        }
        let body = data.get(r..r + cnt * w)?;
        let start = asns.len();
        if w == 4 {
            asns.extend(body.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])));
        } else {
            asns.extend(body.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32));
        }
        segs.push(Seg { typ, start, len: cnt });
        r += cnt * w;
    }
    Some(())
}

/// bgpdump's hop count: sequences count their ASNs, sets count one.
fn hop_count(segs: &[Seg]) -> usize {
    segs.iter().map(|s| if s.typ == 1 || s.typ == 4 { 1 } else { s.len }).sum()
}

fn delim(typ: u8, start: bool) -> u8 {
    match (typ, start) {
        (1, true) => b'{',
        (1, false) => b'}',
        (4, true) => b'[',
        (4, false) => b']',
        (3, true) => b'(',
        (3, false) => b')',
        _ => b' ',
    }
}

/// The AS path text exactly as `bgpdump -m` prints it (its quirks included).
fn bgpdump_text(segs: &[Seg], asns: &[u32], out: &mut Vec<u8>) {
    out.clear();
    let mut space = false;
    let mut prev = 2u8;
    for s in segs {
        if prev != 2 {
            out.push(delim(prev, false));
        }
        if space {
            out.push(b' ');
        }
        if s.typ != 2 {
            out.push(delim(s.typ, true));
        }
        space = false;
        for a in &asns[s.start..s.start + s.len] {
            if space {
                out.push(if s.typ == 1 || s.typ == 4 { b',' } else { b' ' });
            } else {
                space = true;
            }
            push_u32(out, *a);
        }
        prev = s.typ;
    }
    if let Some(s) = segs.last() {
        if s.typ != 2 {
            out.push(delim(s.typ, false));
        }
    }
}

impl Decoder {
    fn new(batch_rows: usize) -> Decoder {
        Decoder {
            peers: None,
            cols: Cols::new(batch_rows),
            stats: Stats::default(),
            batch_rows,
            segs: Vec::new(),
            asns: Vec::new(),
            segs4: Vec::new(),
            text: Vec::new(),
        }
    }

    fn take_batch(&mut self) -> Cols {
        std::mem::replace(&mut self.cols, Cols::new(self.batch_rows))
    }

    fn record(&mut self, rtype: u16, sub: u16, body: &[u8]) -> R<()> {
        let recno = self.stats.records + 1;
        if rtype == TABLE_DUMP_V2 {
            if sub == 1 {
                self.peer_index(body).ok_or_else(|| Error::Mrt(format!("malformed PEER_INDEX_TABLE (record #{recno})")))?;
            } else if let Some((afi, addpath)) = v2_rib(sub) {
                if self.peers.is_none() {
                    return Err(Error::Mrt(format!("RIB record #{recno} comes before any PEER_INDEX_TABLE")));
                }
                self.rib_v2(body, afi, addpath).map_err(|why| Error::Mrt(format!("malformed RIB record #{recno} ({why})")))?;
            } else {
                *self.stats.skipped.entry(v2_skipped(sub)).or_default() += 1;
            }
        } else if rtype == TABLE_DUMP {
            if sub == 1 || sub == 2 {
                self.rib_v1(body, if sub == 1 { 4 } else { 6 })
                    .map_err(|why| Error::Mrt(format!("malformed RIB record #{recno} ({why})")))?;
            } else {
                *self.stats.skipped.entry(format!("table_dump_subtype_{sub}")).or_default() += 1;
            }
        } else {
            *self.stats.skipped.entry(format!("mrt_type_{rtype}")).or_default() += 1;
        }
        Ok(())
    }

    fn peer_index(&mut self, b: &[u8]) -> Option<()> {
        let name_len = be16(b, 4)? as usize;
        let mut p = 6 + name_len;
        let count = be16(b, p)? as usize;
        p += 2;
        let mut peers = Vec::with_capacity(count.min(b.len() / 9 + 1));
        for _ in 0..count {
            let typ = *b.get(p)?;
            p += 5; // type + BGP ID
            let v6 = typ & 1 != 0;
            let alen = if v6 { 16 } else { 4 };
            let addr = b.get(p..p + alen)?;
            p += alen;
            let asn = if typ & 2 != 0 {
                let a = be32(b, p)?;
                p += 4;
                a
            } else {
                let a = be16(b, p)? as u32;
                p += 2;
                a
            };
            let mut ip = Vec::with_capacity(40);
            push_ip(&mut ip, addr, v6);
            peers.push(Peer { asn, ip });
        }
        self.peers = Some(peers);
        Some(())
    }

    fn rib_v2(&mut self, b: &[u8], afi: i8, addpath: bool) -> Why<()> {
        let plen = *b.get(4).ok_or("too short")? as usize;
        let max = if afi == 4 { 32 } else { 128 };
        let nbytes = plen.div_ceil(8);
        let off = 5 + nbytes;
        if plen > max {
            return Err(format!("prefix length {plen}"));
        }
        let count = be16(b, off).ok_or("too short")? as u64;
        if afi == 4 {
            self.stats.entries4 += count;
        } else {
            self.stats.entries6 += count;
        }
        let mut addr = [0u8; 16];
        addr[..nbytes].copy_from_slice(&b[5..5 + nbytes]);
        let mut prefix = Vec::with_capacity(48);
        push_ip(&mut prefix, &addr, afi == 6);
        prefix.push(b'/');
        push_u32(&mut prefix, plen as u32);
        let peers = self.peers.take().unwrap_or_default();
        let r = self.entries_v2(b, afi, addpath, count, off + 2, &prefix, &peers);
        self.peers = Some(peers);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn entries_v2(&mut self, b: &[u8], afi: i8, addpath: bool, count: u64, mut p: usize, prefix: &[u8], peers: &[Peer]) -> Why<()> {
        for i in 0..count {
            let idx = be16(b, p).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))? as usize;
            p += 6 + if addpath { 4 } else { 0 };
            let alen = be16(b, p).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))? as usize;
            p += 2;
            let attrs = b.get(p..p + alen).ok_or_else(|| format!("entry {} of {count} is cut off", i + 1))?;
            p += alen;
            let peer = peers.get(idx).ok_or_else(|| format!("peer index {idx} not in the PEER_INDEX_TABLE"))?;
            self.push_entry(peer.asn, &peer.ip, afi, prefix, attrs, 4)?;
        }
        if p != b.len() {
            return Err(format!("{} bytes after its {count} entries", b.len() - p));
        }
        Ok(())
    }

    fn rib_v1(&mut self, b: &[u8], afi: i8) -> Why<()> {
        let alen = if afi == 4 { 4 } else { 16 };
        if afi == 4 {
            self.stats.entries4 += 1;
        } else {
            self.stats.entries6 += 1;
        }
        let short = || "too short".to_string();
        let addr = b.get(4..4 + alen).ok_or_else(short)?;
        let plen = *b.get(4 + alen).ok_or_else(short)? as usize;
        if plen > alen * 8 {
            return Err(format!("prefix length {plen}"));
        }
        let p = 4 + alen + 6;
        let peer_addr = b.get(p..p + alen).ok_or_else(short)?;
        let peer_asn = be16(b, p + alen).ok_or_else(short)? as u32;
        let attr_len = be16(b, p + alen + 2).ok_or_else(short)? as usize;
        let a0 = p + alen + 4;
        let attrs = b.get(a0..a0 + attr_len).ok_or_else(short)?;
        if a0 + attr_len != b.len() {
            return Err(format!("{} bytes after its entry", b.len() - a0 - attr_len));
        }
        let mut prefix = Vec::with_capacity(48);
        push_ip(&mut prefix, addr, afi == 6);
        prefix.push(b'/');
        push_u32(&mut prefix, plen as u32);
        let mut ip = Vec::with_capacity(40);
        push_ip(&mut ip, peer_addr, afi == 6);
        self.push_entry(peer_asn, &ip, afi, &prefix, attrs, 2)
    }

    /// One RIB entry: find AS_PATH (and AS4_PATH on 2-byte sessions) and append a row.
    fn push_entry(&mut self, peer_asn: u32, ip: &[u8], afi: i8, prefix: &[u8], attrs: &[u8], w: usize) -> Why<()> {
        let (mut aspath, mut as4): (Option<&[u8]>, Option<&[u8]>) = (None, None);
        let mut q = 0;
        while q < attrs.len() {
            let flags = attrs[q];
            let typ = *attrs.get(q + 1).ok_or("attribute header cut off")?;
            let (len, hl) = if flags & 0x10 != 0 {
                (be16(attrs, q + 2).ok_or("attribute header cut off")? as usize, 4)
            } else {
                (*attrs.get(q + 2).ok_or("attribute header cut off")? as usize, 3)
            };
            let data = attrs.get(q + hl..q + hl + len).ok_or("attribute runs past its entry")?;
            let slot = match typ {
                2 => &mut aspath,
                17 => &mut as4,
                _ => {
                    q += hl + len;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(format!("attribute {typ} twice"));
            }
            *slot = Some(data);
            q += hl + len;
        }
        self.segs.clear();
        self.asns.clear();
        if let Some(d) = aspath {
            parse_segments(d, w, &mut self.segs, &mut self.asns).ok_or("bad AS_PATH")?;
        }
        if let (Some(d), true, true) = (as4, w == 2, aspath.is_some()) {
            self.merge_as4(d)?;
        }
        let c = &mut self.cols;
        c.n += 1;
        c.peer_asn.push(peer_asn);
        c.peer_ip.extend_from_slice(ip);
        c.peer_ip_off.push(c.peer_ip.len() as i32);
        c.afi.push(afi);
        c.prefix.extend_from_slice(prefix);
        c.prefix_off.push(c.prefix.len() as i32);
        let plain = self.segs.iter().all(|s| s.typ == 2 && s.len > 0);
        if plain {
            // segment by segment: after an AS4_PATH merge, `asns` also holds the AS_TRANS
            // hops the merge replaced, which no segment refers to any more
            for sg in &self.segs {
                c.path_vals.extend_from_slice(&self.asns[sg.start..sg.start + sg.len]);
            }
            self.emit_plain();
            return Ok(());
        }
        bgpdump_text(&self.segs, &self.asns, &mut self.text);
        if self.text.iter().any(|b| matches!(b, b'{' | b'(' | b'[')) {
            let c = &mut self.cols;
            c.path_off.push(c.path_vals.len() as i32);
            c.path_valid.push(0);
            c.has_set.push(1);
            c.raw.extend_from_slice(&self.text);
            c.raw_off.push(c.raw.len() as i32);
            let last = self.text.split(|b| b.is_ascii_whitespace()).rfind(|t| !t.is_empty());
            match last.filter(|t| t.iter().all(u8::is_ascii_digit)).and_then(|t| std::str::from_utf8(t).ok()?.parse::<u32>().ok()) {
                Some(o) => {
                    c.origin.push(o);
                    c.origin_valid.push(1);
                }
                None => {
                    c.origin.push(0);
                    c.origin_valid.push(0);
                }
            }
            return Ok(());
        }
        // Only empty sequences make this text differ from the ASN list: read it as bgpdump's
        // text is read (tokens split on spaces).
        let text = std::mem::take(&mut self.text);
        for t in text.split(|b| *b == b' ').filter(|t| !t.is_empty()) {
            let v = std::str::from_utf8(t).ok().and_then(|s| s.parse::<u32>().ok()).ok_or("AS path text overflows")?;
            self.cols.path_vals.push(v);
        }
        self.text = text;
        self.emit_plain();
        Ok(())
    }

    /// Close a row whose path is the plain ASN list just appended (origin = last ASN).
    fn emit_plain(&mut self) {
        let c = &mut self.cols;
        let start = *c.path_off.last().unwrap() as usize;
        let end = c.path_vals.len();
        c.path_off.push(end as i32);
        c.path_valid.push(1);
        c.has_set.push(0);
        c.raw_off.push(c.raw.len() as i32);
        if end > start {
            c.origin.push(c.path_vals[end - 1]);
            c.origin_valid.push(1);
        } else {
            c.origin.push(0);
            c.origin_valid.push(0);
        }
    }

    /// RFC 6793 merge as bgpdump does it: keep AS_PATH's leading hops beyond AS4_PATH's count.
    fn merge_as4(&mut self, d: &[u8]) -> Why<()> {
        self.segs4.clear();
        let base = self.asns.len();
        let mut segs4 = std::mem::take(&mut self.segs4);
        parse_segments(d, 4, &mut segs4, &mut self.asns).ok_or("bad AS4_PATH")?;
        let (n_old, n_new) = (hop_count(&self.segs), hop_count(&segs4));
        if n_old < n_new {
            self.asns.truncate(base);
            self.segs4 = segs4;
            return Ok(());
        }
        let want = n_old - n_new;
        let mut merged = Vec::with_capacity(self.segs.len() + segs4.len());
        let mut have = 0;
        for s in &self.segs {
            if have >= want {
                break;
            }
            let mut s = *s;
            if s.typ == 1 || s.typ == 4 {
                have += 1;
            } else {
                have += s.len;
                if have > want {
                    s.len -= have - want;
                }
            }
            merged.push(s);
        }
        merged.extend_from_slice(&segs4);
        self.segs = merged;
        self.segs4 = segs4;
        Ok(())
    }
}

struct Done {
    stats: Stats,
    sha256: String,
    file_bytes: u64,
}

enum Msg {
    Batch(Cols),
    Done(Done),
    Fail(Error),
}

fn decode_stream(rx: Receiver<Chunk>, tx: &SyncSender<Msg>, batch_rows: usize) -> R<Option<Done>> {
    let mut d = Decoder::new(batch_rows);
    let mut buf: Vec<u8> = Vec::with_capacity(2 * CHUNK);
    let mut pos = 0usize;
    let mut base = 0u64; // uncompressed offset of buf[0]
    loop {
        let chunk = match rx.recv() {
            Ok(c) => c,
            Err(_) => return Err(Error::Internal("reader stopped".into())),
        };
        match chunk {
            Chunk::Fail(e) => return Err(e),
            Chunk::End { sha256, file_bytes } => {
                if pos != buf.len() {
                    // Worded as ingest/framing.py's cut_short.
                    let (recno, off, left) = (d.stats.records + 1, base + pos as u64, buf.len() - pos);
                    return Err(Error::Mrt(if left < 12 {
                        format!("MRT record #{recno} at byte {off} cut short: the file ends {left} bytes into its 12-byte header")
                    } else {
                        let length = u32::from_be_bytes([buf[pos + 8], buf[pos + 9], buf[pos + 10], buf[pos + 11]]);
                        format!("MRT record #{recno} at byte {off} cut short: it announces {length} bytes, the file ends {} bytes into them", left - 12)
                    }));
                }
                if d.stats.records == 0 {
                    return Err(Error::Mrt("no MRT records".into()));
                }
                if d.cols.n > 0 {
                    let c = d.take_batch();
                    if tx.send(Msg::Batch(c)).is_err() {
                        return Ok(None);
                    }
                }
                d.stats.uncompressed_bytes = base + buf.len() as u64;
                return Ok(Some(Done { stats: d.stats, sha256, file_bytes }));
            }
            Chunk::Data(c) => {
                if pos > 0 {
                    buf.drain(..pos);
                    base += pos as u64;
                    pos = 0;
                }
                buf.extend_from_slice(&c);
            }
        }
        while buf.len() - pos >= 12 {
            let h = &buf[pos..pos + 12];
            let ts = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            let rtype = u16::from_be_bytes([h[4], h[5]]);
            let sub = u16::from_be_bytes([h[6], h[7]]);
            let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
            if !KNOWN_TYPES.contains(&rtype) || len > MAX_RECORD {
                return Err(Error::Mrt(format!(
                    "not an MRT record at byte {} (type {rtype}, length {len})",
                    base + pos as u64
                )));
            }
            if buf.len() - pos < 12 + len {
                break;
            }
            d.stats.first_timestamp.get_or_insert(ts);
            d.record(rtype, sub, &buf[pos + 12..pos + 12 + len])?;
            d.stats.records += 1;
            pos += 12 + len;
            if d.cols.n >= batch_rows {
                let c = d.take_batch();
                if tx.send(Msg::Batch(c)).is_err() {
                    return Ok(None); // Python dropped the decoder
                }
            }
        }
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> Error {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    Error::Internal(format!("internal decoder error: {}", one_line(&what)))
}

fn start(path: String, batch_rows: usize, bz2_workers: usize) -> Receiver<Msg> {
    let (ctx, crx) = sync_channel::<Chunk>(8);
    let (btx, brx) = sync_channel::<Msg>(2);
    thread::Builder::new()
        .name("mrt-read".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| read_file(&path, &ctx, bz2_workers))).unwrap_or_else(|p| Err(panic_text(p)));
            let _ = ctx.send(match r {
                Ok((sha256, file_bytes)) => Chunk::End { sha256, file_bytes },
                Err(e) => Chunk::Fail(e),
            });
        })
        .expect("spawn reader");
    thread::Builder::new()
        .name("mrt-decode".into())
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| decode_stream(crx, &btx, batch_rows)))
                .unwrap_or_else(|p| Err(panic_text(p)));
            match r {
                Ok(Some(done)) => {
                    let _ = btx.send(Msg::Done(done));
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = btx.send(Msg::Fail(e));
                }
            }
        })
        .expect("spawn decoder");
    brx
}

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
