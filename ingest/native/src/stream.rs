//! The two threads of one file (read -> decode) and the batches they hand to Python.

use crate::cols::Cols;
use crate::decode::{Decoder, Stats};
use crate::error::{panic_text, Error, R};
use crate::read::{read_file, Chunk};
use crate::{CHUNK, KNOWN_TYPES, MAX_RECORD};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread;

pub(crate) struct Done {
    pub(crate) stats: Stats,
    pub(crate) sha256: String,
    pub(crate) file_bytes: u64,
}

pub(crate) enum Msg {
    Batch(Cols),
    Done(Done),
    Fail(Error),
}

/// `group`: (mult, bucket bits) to hand each batch's rows grouped by VP bucket (`Cols::by_bucket`).
pub(crate) fn decode_stream(rx: Receiver<Chunk>, tx: &SyncSender<Msg>, batch_rows: usize,
                            group: Option<(u64, u32)>) -> R<Option<Done>> {
    let out = |c: Cols| match group {
        Some((mult, bits)) => c.by_bucket(mult, bits).0,
        None => c,
    };
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
                    let c = out(d.take_batch());
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
                let c = out(d.take_batch());
                if tx.send(Msg::Batch(c)).is_err() {
                    return Ok(None); // Python dropped the decoder
                }
            }
        }
    }
}

pub(crate) fn start(path: String, batch_rows: usize, bz2_workers: usize, group: Option<(u64, u32)>) -> Receiver<Msg> {
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
            let r = catch_unwind(AssertUnwindSafe(|| decode_stream(crx, &btx, batch_rows, group)))
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
