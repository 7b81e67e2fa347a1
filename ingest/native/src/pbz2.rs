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

// ------------------------------------------------------------------ unit tests
// bzip2 files written here with the bzip2 crate (libbzip2's own compressor) at level 1
// (100 kB blocks), so a few hundred kB of input make several blocks and every outcome of the
// splitter can be reached: whole files, several streams, a cut file, garbage, a cancel.
#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;
    use std::sync::Mutex;

    /// Deterministic, compressible, not repetitive enough for bzip2 to fold blocks away.
    fn data(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b"abcdefghij 0123456789\n"[(x % 22) as usize]
        }).collect()
    }

    fn bz2(input: &[u8]) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
        e.write_all(input).unwrap();
        e.finish().unwrap()
    }

    fn file(name: &str, bytes: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("pbz2-test-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Run the parallel decoder on `bytes`; (outcome, what it delivered in order).
    fn decode(name: &str, bytes: &[u8], workers: usize) -> (Outcome, Vec<u8>) {
        let p = file(name, bytes);
        let got = Mutex::new(Vec::new());
        let out = run(p.to_str().unwrap(), workers, &|chunk| {
            got.lock().unwrap().extend_from_slice(&chunk);
            true
        });
        std::fs::remove_file(&p).unwrap();
        (out, got.into_inner().unwrap())
    }

    fn sha256_hex(b: &[u8]) -> String {
        format!("{:x}", Sha256::digest(b))
    }

    #[test]
    fn bits_reads_across_bytes_big_endian() {
        let b = [0b1010_1100, 0b0101_0011, 0xff];
        assert_eq!(bits(&b, 0, 4), Some(0b1010));
        assert_eq!(bits(&b, 4, 8), Some(0b1100_0101)); // spans two bytes
        assert_eq!(bits(&b, 20, 4), Some(0b1111));
        assert_eq!(bits(&b, 20, 5), None); // past the end
    }

    #[test]
    fn find_magic_at_any_bit_offset() {
        for shift in 0..8u32 {
            // 3 bytes of zeros, then the block magic `shift` bits further on
            let mut w = BitWriter { out: vec![0, 0, 0], acc: 0, n: 0 };
            w.put(0, shift);
            w.put(BLOCK_MAGIC >> 24, 24);
            w.put(BLOCK_MAGIC & 0xFF_FFFF, 24);
            w.put(0, 32);
            let buf = w.finish();
            assert_eq!(find_magic(&buf, 0), Some((24 + shift as u64, false)), "shift {shift}");
            assert_eq!(find_magic(&buf, 25 + shift as u64), None);
        }
        let mut w = BitWriter { out: vec![], acc: 0, n: 0 };
        w.put(EOS_MAGIC >> 24, 24);
        w.put(EOS_MAGIC & 0xFF_FFFF, 24);
        w.put(0, 16);
        assert_eq!(find_magic(&w.finish(), 0), Some((0, true)));
    }

    #[test]
    fn bit_writer_packs_and_pads_the_last_byte() {
        let mut w = BitWriter { out: Vec::new(), acc: 0, n: 0 };
        w.put(0b101, 3);
        w.put(0b11111, 5);
        w.put(0b1, 1);
        assert_eq!(w.finish(), vec![0b1011_1111, 0b1000_0000]);
    }

    #[test]
    fn several_blocks_come_out_whole_and_in_order() {
        let input = data(450_000, 7); // five blocks at level 1
        let compressed = bz2(&input);
        for workers in [1, 2, 4] {
            let (out, got) = decode("blocks", &compressed, workers);
            match out {
                Outcome::Done { sha256, file_bytes } => {
                    assert_eq!(sha256, sha256_hex(&compressed));
                    assert_eq!(file_bytes, compressed.len() as u64);
                }
                _ => panic!("not decoded with {workers} workers"),
            }
            assert!(got == input, "{workers} workers: output differs");
        }
    }

    #[test]
    fn streams_one_after_another_are_one_file() {
        // pbzip2 and lbzip2 write a stream per chunk; `cat a.bz2 b.bz2` is a valid file
        let (a, b) = (data(150_000, 1), data(120_000, 2));
        let mut both = bz2(&a);
        both.extend(bz2(&b));
        let (out, got) = decode("streams", &both, 2);
        assert!(matches!(out, Outcome::Done { .. }));
        assert!(got == [a, b].concat());
    }

    #[test]
    fn a_cut_file_falls_back_after_its_last_good_block() {
        let input = data(450_000, 3);
        let compressed = bz2(&input);
        let cut = &compressed[..compressed.len() * 3 / 4];
        let (out, got) = decode("cut", cut, 2);
        let Outcome::Fallback { bytes_out } = out else { panic!("a cut file must fall back") };
        // whole blocks only, and exactly the input's first bytes
        assert_eq!(bytes_out as usize, got.len());
        assert!(bytes_out > 0 && (bytes_out as usize) < input.len());
        assert!(got == input[..got.len()]);
    }

    #[test]
    fn garbage_falls_back_at_once() {
        let (out, got) = decode("garbage", b"BZh9 this is not a bzip2 block at all, only text", 2);
        assert!(matches!(out, Outcome::Fallback { bytes_out: 0 }) && got.is_empty());
        let (out, _) = decode("text", b"plain text, no header", 2);
        assert!(matches!(out, Outcome::Fallback { bytes_out: 0 }));
    }

    #[test]
    fn a_receiver_that_stops_cancels() {
        let compressed = bz2(&data(450_000, 5));
        let p = file("cancel", &compressed);
        let seen = Mutex::new(0);
        let out = run(p.to_str().unwrap(), 2, &|_chunk| {
            *seen.lock().unwrap() += 1;
            false // the reader went away after the first block
        });
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(out, Outcome::Cancelled));
        assert_eq!(*seen.lock().unwrap(), 1);
    }
}
