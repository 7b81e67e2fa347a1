//! Parallel bzip2 decompression: blocks decoded on several cores, output in order.
//!
//! A bzip2 stream is a header ("BZh" + level) and blocks, each starting with a 48-bit magic
//! at any bit offset and carrying the CRC of its data, then an end-of-stream magic and the
//! stream's combined CRC. Each block found by its magic is rewrapped as a one-block stream
//! (whose combined CRC is the block's CRC) and decompressed by a worker; libbzip2 checks
//! every block's CRC, and we check each stream's combined CRC. This is only an accelerator:
//! on anything unexpected (a cut stream, garbage, a magic pattern inside block data, a bad
//! CRC) it stops after the last good block and says how many bytes it delivered, and the
//! caller decodes the file sequentially from the start, skipping those bytes, so errors and
//! their messages are exactly the sequential decoder's.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use std::thread;

const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
const EOS_MAGIC: u64 = 0x1772_4538_5090;
const READ: usize = 1 << 20;

pub enum Outcome {
    /// Every stream decoded and checked: the file's sha256 and size.
    Done { sha256: String, file_bytes: u64 },
    /// Stop here: `bytes_out` good bytes were delivered; decode sequentially, skipping them.
    Fallback { bytes_out: u64 },
    Cancelled,
}

/// Bits of `buf` from bit `start` (big-endian bit order), `n` bits at most 57.
fn bits(buf: &[u8], start: u64, n: u32) -> Option<u64> {
    let byte = (start / 8) as usize;
    let shift = (start % 8) as u32;
    let mut w = [0u8; 8];
    let avail = buf.len().checked_sub(byte)?;
    if (avail as u64) * 8 < shift as u64 + n as u64 {
        return None;
    }
    let k = avail.min(8);
    w[..k].copy_from_slice(&buf[byte..byte + k]);
    Some((u64::from_be_bytes(w) << shift) >> (64 - n))
}

/// The first block or end-of-stream magic at a bit offset >= `from` (None: not in `buf`).
fn find_magic(buf: &[u8], from: u64) -> Option<(u64, bool)> {
    let first = (from / 8) as usize;
    if buf.len() < first + 8 {
        return None;
    }
    for i in first..=buf.len() - 8 {
        let w = u64::from_be_bytes(buf[i..i + 8].try_into().unwrap());
        for s in 0..8u32 {
            let pos = i as u64 * 8 + s as u64;
            if pos < from {
                continue;
            }
            let c = (w >> (16 - s)) & 0xFFFF_FFFF_FFFF;
            if c == BLOCK_MAGIC {
                return Some((pos, false));
            }
            if c == EOS_MAGIC {
                return Some((pos, true));
            }
        }
    }
    None
}

struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    fn put(&mut self, v: u64, n: u32) {
        // n <= 32 per call
        self.acc = (self.acc << n) | (v & ((1u64 << n) - 1));
        self.n += n;
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
    }
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc << (8 - self.n)) as u8);
        }
        self.out
    }
}

/// A one-block bzip2 stream holding bits [start, end) of `buf` (a block, magic included).
fn one_block_stream(buf: &[u8], level: u8, start: u64, end: u64, crc: u32) -> Vec<u8> {
    let mut w = BitWriter { out: Vec::with_capacity(((end - start) / 8) as usize + 16), acc: 0, n: 0 };
    w.out.extend_from_slice(&[b'B', b'Z', b'h', level]);
    let mut p = start;
    while p + 32 <= end {
        w.put(bits(buf, p, 32).unwrap(), 32);
        p += 32;
    }
    if p < end {
        let n = (end - p) as u32;
        w.put(bits(buf, p, n).unwrap(), n);
    }
    w.put(EOS_MAGIC >> 24, 24);
    w.put(EOS_MAGIC & 0xFF_FFFF, 24);
    w.put(crc as u64, 32);
    w.finish()
}

fn decode_block(stream: &[u8]) -> Option<Vec<u8>> {
    let mut d = bzip2::Decompress::new(false);
    let mut out = Vec::with_capacity(1 << 20);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity());
        }
        let before = (d.total_in(), d.total_out());
        match d.decompress_vec(&stream[d.total_in() as usize..], &mut out) {
            Ok(bzip2::Status::StreamEnd) => return (d.total_in() as usize == stream.len()).then_some(out),
            Ok(_) => {
                if (d.total_in(), d.total_out()) == before && out.len() < out.capacity() {
                    return None; // no progress: cut
                }
            }
            Err(_) => return None,
        }
    }
}

type Job = (u64, Vec<u8>);

/// Decode the bzip2 file at `path` with `workers` threads, sending output chunks in order.
pub fn run(path: &str, workers: usize, send: &(dyn Fn(Vec<u8>) -> bool + Sync)) -> Outcome {
    let (job_tx, job_rx) = sync_channel::<Job>(workers * 2);
    let (res_tx, res_rx) = sync_channel::<(u64, Option<Vec<u8>>)>(workers * 2);
    let job_rx = Arc::new(Mutex::new(job_rx));
    let stop = AtomicBool::new(false);
    thread::scope(|sc| {
        for _ in 0..workers {
            let rx = Arc::clone(&job_rx);
            let tx = res_tx.clone();
            sc.spawn(move || loop {
                let job = rx.lock().unwrap().recv();
                let Ok((seq, stream)) = job else { return };
                if tx.send((seq, decode_block(&stream))).is_err() {
                    return;
                }
            });
        }
        drop(res_tx);
        let stop_ref = &stop;
        let collector = sc.spawn(move || collect(res_rx, send, stop_ref));
        let planned = split(path, &job_tx, &stop);
        drop(job_tx);
        let (bytes_out, all_good, cancelled) = collector.join().unwrap_or((0, false, true));
        match planned {
            _ if cancelled => Outcome::Cancelled,
            Some((sha256, file_bytes)) if all_good => Outcome::Done { sha256, file_bytes },
            _ => Outcome::Fallback { bytes_out },
        }
    })
}

/// In order: (bytes delivered, every block good, cancelled).
fn collect(rx: Receiver<(u64, Option<Vec<u8>>)>, send: &(dyn Fn(Vec<u8>) -> bool + Sync),
           stop: &AtomicBool) -> (u64, bool, bool) {
    let mut pending = BTreeMap::new();
    let (mut next, mut bytes, mut good) = (0u64, 0u64, true);
    for (seq, out) in rx {
        pending.insert(seq, out);
        while good {
            let Some(out) = pending.remove(&next) else { break };
            match out {
                Some(data) => {
                    bytes += data.len() as u64;
                    if !send(data) {
                        stop.store(true, Ordering::Relaxed);
                        return (bytes, false, true);
                    }
                    next += 1;
                }
                None => {
                    good = false;
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
    }
    (bytes, good && pending.is_empty(), false)
}

/// Read the file, find blocks, queue one-block streams; None if anything is not as expected,
/// else the file's (sha256, size).
fn split(path: &str, jobs: &SyncSender<Job>, stop: &AtomicBool) -> Option<(String, u64)> {
    let f = File::open(path).ok()?;
    let mut f = HashFile { f, h: Sha256::new(), n: 0 };
    let mut buf: Vec<u8> = Vec::new();
    let mut eof = false;
    let mut seq = 0u64;
    let mut pos: u64 = 0; // bit position in buf
    let fill = |f: &mut HashFile, buf: &mut Vec<u8>, eof: &mut bool| -> bool {
        let old = buf.len();
        buf.resize(old + READ, 0);
        let mut have = old;
        while have < buf.len() {
            match f.f.read(&mut buf[have..]) {
                Ok(0) => {
                    *eof = true;
                    break;
                }
                Ok(k) => have += k,
                Err(_) => return false,
            }
        }
        f.h.update(&buf[old..have]);
        f.n += (have - old) as u64;
        buf.truncate(have);
        true
    };
    loop {
        // A stream header at a byte boundary.
        while !eof && buf.len() < (pos / 8) as usize + 4 {
            if !fill(&mut f, &mut buf, &mut eof) {
                return None;
            }
        }
        let at = (pos / 8) as usize;
        if eof && at == buf.len() {
            return (seq > 0).then(|| (format!("{:x}", f.h.finalize()), f.n));
        }
        if buf.len() < at + 4 || &buf[at..at + 3] != b"BZh" || !(b'1'..=b'9').contains(&buf[at + 3]) {
            return None;
        }
        let level = buf[at + 3];
        pos += 32;
        let mut combined: u32 = 0;
        let mut cur = match next_magic(&mut f, &mut buf, &mut eof, pos, &fill) {
            Some(m) if m.0 == pos => m,
            _ => return None,
        };
        // Blocks up to the end-of-stream magic.
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let (mut start, is_eos) = cur;
            let d = (start / 8) as usize;
            if d >= READ {
                buf.drain(..d); // keep about one block in memory
                start -= d as u64 * 8;
            }
            if !need(&mut f, &mut buf, &mut eof, start + 80, &fill) {
                return None;
            }
            let crc = bits(&buf, start + 48, 32)? as u32;
            if is_eos {
                if crc != combined {
                    return None;
                }
                pos = (start + 80).div_ceil(8) * 8;
                break;
            }
            let next = next_magic(&mut f, &mut buf, &mut eof, start + 80, &fill)?;
            combined = combined.rotate_left(1) ^ crc;
            let stream = one_block_stream(&buf, level, start, next.0, crc);
            if jobs.send((seq, stream)).is_err() {
                return None;
            }
            seq += 1;
            cur = next;
        }
    }
}

struct HashFile {
    f: File,
    h: Sha256,
    n: u64,
}

fn need(f: &mut HashFile, buf: &mut Vec<u8>, eof: &mut bool, bit_end: u64,
        fill: &dyn Fn(&mut HashFile, &mut Vec<u8>, &mut bool) -> bool) -> bool {
    while (buf.len() as u64) * 8 < bit_end {
        if *eof || !fill(f, buf, eof) {
            return false;
        }
    }
    true
}

/// The next magic at or after bit `from`, reading more of the file as needed.
fn next_magic(f: &mut HashFile, buf: &mut Vec<u8>, eof: &mut bool, from: u64,
              fill: &dyn Fn(&mut HashFile, &mut Vec<u8>, &mut bool) -> bool) -> Option<(u64, bool)> {
    let mut from = from;
    loop {
        if let Some(m) = find_magic(buf, from) {
            return Some(m);
        }
        if *eof {
            return None;
        }
        // Resume the scan where it stopped (a magic may straddle the old end).
        from = from.max((buf.len().saturating_sub(8) as u64) * 8);
        if !fill(f, buf, eof) {
            return None;
        }
    }
}
